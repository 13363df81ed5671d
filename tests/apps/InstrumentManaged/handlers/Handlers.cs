// The managed handlers of tests/runtime/instrument.rs: each says what it saw on stderr, as
// `handler: ...` lines, which the test reads in order.

using System;
using Corprof.Instrumentation;

namespace Handlers
{
    /// <summary>Says every begin (the instance and the arguments) and end (the value or the exception, and its own state back).</summary>
    public static class Recorder
    {
        private static int next;

        private static string Show(object o)
        {
            return o == null ? "null" : o.ToString();
        }

        private static CallTargetState Begin(object instance, params object[] args)
        {
            int id = System.Threading.Interlocked.Increment(ref next);
            var shown = new string[args.Length];
            for (int i = 0; i < args.Length; i++)
            {
                shown[i] = Show(args[i]);
            }
            Console.Error.WriteLine("handler: begin #" + id + " this=" + Show(instance) + " args=[" + string.Join(", ", shown) + "]");
            return new CallTargetState(id);
        }

        private static void End(object value, Exception exception, CallTargetState state)
        {
            Console.Error.WriteLine("handler: end #" + Show(state.State) + " " +
                (exception != null ? "threw " + exception.GetType().Name + ": " + exception.Message : "returned " + Show(value)));
        }

        public static CallTargetState OnMethodBegin<TTarget>(TTarget instance)
        {
            return Begin(instance);
        }

        public static CallTargetState OnMethodBegin<TTarget, TArg1>(TTarget instance, ref TArg1 arg1)
        {
            return Begin(instance, arg1);
        }

        public static CallTargetState OnMethodBegin<TTarget, TArg1, TArg2>(TTarget instance, ref TArg1 arg1, ref TArg2 arg2)
        {
            return Begin(instance, arg1, arg2);
        }

        // By value: the other shape the invoker takes.
        public static CallTargetState OnMethodBegin<TTarget, TArg1, TArg2, TArg3, TArg4, TArg5, TArg6>(
            TTarget instance, TArg1 arg1, TArg2 arg2, TArg3 arg3, TArg4 arg4, TArg5 arg5, TArg6 arg6)
        {
            return Begin(instance, arg1, arg2, arg3, arg4, arg5, arg6);
        }

        public static CallTargetReturn<TReturn> OnMethodEnd<TTarget, TReturn>(TTarget instance, TReturn returnValue, Exception exception, CallTargetState state)
        {
            End(returnValue, exception, state);
            return new CallTargetReturn<TReturn>(returnValue);
        }

        public static CallTargetReturn OnMethodEnd<TTarget>(TTarget instance, Exception exception, CallTargetState state)
        {
            End("void", exception, state);
            return CallTargetReturn.GetDefault();
        }
    }

    /// <summary>
    /// Says each task-returning method's begin, its end at the return (OnMethodEnd) and its end
    /// when the task completes (OnAsyncMethodEnd), counting the last in the app domain's data.
    /// </summary>
    public static class AsyncRecorder
    {
        private static int next;
        private static int ends;

        private static CallTargetState Begin(object arg)
        {
            int id = System.Threading.Interlocked.Increment(ref next);
            Console.Error.WriteLine("handler: async begin #" + id + (arg == null ? "" : " " + arg));
            return new CallTargetState(id);
        }

        public static CallTargetState OnMethodBegin<TTarget>(TTarget instance)
        {
            return Begin(null);
        }

        public static CallTargetState OnMethodBegin<TTarget, TArg1>(TTarget instance, ref TArg1 arg1)
        {
            return Begin(arg1);
        }

        public static CallTargetReturn<TReturn> OnMethodEnd<TTarget, TReturn>(TTarget instance, TReturn returnValue, Exception exception, CallTargetState state)
        {
            Console.Error.WriteLine("handler: async end #" + state.State + " at the return: " +
                (exception != null ? "threw" : returnValue == null ? "null" : "a task"));
            return new CallTargetReturn<TReturn>(returnValue);
        }

        public static TReturn OnAsyncMethodEnd<TTarget, TReturn>(TTarget instance, TReturn returnValue, Exception exception, CallTargetState state)
        {
            Console.Error.WriteLine("handler: async done #" + state.State + " " +
                (exception != null ? "threw " + exception.GetType().Name + ": " + exception.Message
                    : "returned " + (returnValue == null ? "null" : returnValue.ToString())));
            int n = System.Threading.Interlocked.Increment(ref ends);
            AppDomain.CurrentDomain.SetData("corprof-test-async-ends", n);
            return returnValue;
        }
    }

    /// <summary>Throws in OnAsyncMethodEnd: said once, the app's task as it was.</summary>
    public static class AsyncThrowing
    {
        public static TReturn OnAsyncMethodEnd<TTarget, TReturn>(TTarget instance, TReturn returnValue, Exception exception, ref CallTargetState state)
        {
            throw new InvalidOperationException("a handler that throws when the task completes");
        }
    }

    /// <summary>Throws in both: the app's calls go on as written.</summary>
    public static class Throwing
    {
        public static CallTargetState OnMethodBegin<TTarget, TArg1, TArg2>(TTarget instance, ref TArg1 arg1, ref TArg2 arg2)
        {
            throw new InvalidOperationException("a handler that throws");
        }

        public static CallTargetReturn<TReturn> OnMethodEnd<TTarget, TReturn>(TTarget instance, TReturn returnValue, Exception exception, CallTargetState state)
        {
            throw new InvalidOperationException("a handler that throws at the end");
        }
    }

    /// <summary>Has no OnMethodEnd: said once, and the begins still run.</summary>
    public static class BeginOnly
    {
        public static CallTargetState OnMethodBegin<TTarget, TArg1>(TTarget instance, ref TArg1 arg1)
        {
            Console.Error.WriteLine("handler: begin only " + arg1);
            return default(CallTargetState);
        }
    }

    /// <summary>Replaces the value returned (by ref state: the other OnMethodEnd shape).</summary>
    public static class Replacer
    {
        public static CallTargetReturn<TReturn> OnMethodEnd<TTarget, TReturn>(TTarget instance, TReturn returnValue, Exception exception, ref CallTargetState state)
        {
            return new CallTargetReturn<TReturn>((TReturn)(object)42);
        }
    }
}
