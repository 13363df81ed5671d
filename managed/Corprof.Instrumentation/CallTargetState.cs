// The CallTarget contract's value types: what a handler's OnMethodBegin hands to its
// OnMethodEnd, and what OnMethodEnd hands back as the method's return value.

namespace Corprof.Instrumentation
{
    /// <summary>
    /// What a handler's <c>OnMethodBegin</c> returns, given back to its <c>OnMethodEnd</c> for the
    /// same call. <c>default(CallTargetState)</c> (no state) is what <c>OnMethodEnd</c> gets when
    /// <c>OnMethodBegin</c> is missing or threw.
    /// </summary>
    public struct CallTargetState
    {
        private readonly object state;
        private readonly long startTicks;

        /// <summary>A state holding <paramref name="state"/>.</summary>
        public CallTargetState(object state)
        {
            this.state = state;
            this.startTicks = 0;
        }

        /// <summary>A state holding <paramref name="state"/> and a time of the handler's.</summary>
        public CallTargetState(object state, long startTicks)
        {
            this.state = state;
            this.startTicks = startTicks;
        }

        /// <summary>The object <c>OnMethodBegin</c> put in, or null.</summary>
        public object State
        {
            get { return state; }
        }

        /// <summary>The time <c>OnMethodBegin</c> put in, or 0.</summary>
        public long StartTicks
        {
            get { return startTicks; }
        }

        /// <summary>No state.</summary>
        public static CallTargetState GetDefault()
        {
            return default(CallTargetState);
        }
    }

    /// <summary>
    /// What <c>OnMethodEnd</c> of a method returning a value returns: the value the caller gets
    /// (the method's own, or one of the handler's).
    /// </summary>
    public struct CallTargetReturn<TReturn>
    {
        private readonly TReturn returnValue;

        /// <summary>The caller gets <paramref name="returnValue"/>.</summary>
        public CallTargetReturn(TReturn returnValue)
        {
            this.returnValue = returnValue;
        }

        /// <summary>The value the caller gets.</summary>
        public TReturn GetReturnValue()
        {
            return returnValue;
        }

        /// <summary>The default value of <typeparamref name="TReturn"/>.</summary>
        public static CallTargetReturn<TReturn> GetDefault()
        {
            return default(CallTargetReturn<TReturn>);
        }
    }

    /// <summary>What <c>OnMethodEnd</c> of a method returning <c>void</c> returns.</summary>
    public struct CallTargetReturn
    {
        /// <summary>The one value.</summary>
        public static CallTargetReturn GetDefault()
        {
            return default(CallTargetReturn);
        }
    }
}
