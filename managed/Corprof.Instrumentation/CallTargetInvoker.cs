// The methods the wrapped code calls (the CallTarget contract): BeginMethod before the
// method's own code, EndMethod however it ends. Each finds its handler's OnMethodBegin or
// OnMethodEnd once per instantiation (a delegate cached in a generic static class), calls it,
// and keeps whatever it throws from the app's call; a wrapped method called from inside a
// handler runs without handlers. One BeginMethod per argument count, 0 to 8.

using System;

namespace Corprof.Instrumentation
{
    internal delegate CallTargetState BeginByRef0<TTarget>(TTarget instance);
    internal delegate CallTargetState BeginByValue0<TTarget>(TTarget instance);
    internal delegate CallTargetState BeginByRef1<TTarget, TArg1>(TTarget instance, ref TArg1 arg1);
    internal delegate CallTargetState BeginByValue1<TTarget, TArg1>(TTarget instance, TArg1 arg1);
    internal delegate CallTargetState BeginByRef2<TTarget, TArg1, TArg2>(TTarget instance, ref TArg1 arg1, ref TArg2 arg2);
    internal delegate CallTargetState BeginByValue2<TTarget, TArg1, TArg2>(TTarget instance, TArg1 arg1, TArg2 arg2);
    internal delegate CallTargetState BeginByRef3<TTarget, TArg1, TArg2, TArg3>(TTarget instance, ref TArg1 arg1, ref TArg2 arg2, ref TArg3 arg3);
    internal delegate CallTargetState BeginByValue3<TTarget, TArg1, TArg2, TArg3>(TTarget instance, TArg1 arg1, TArg2 arg2, TArg3 arg3);
    internal delegate CallTargetState BeginByRef4<TTarget, TArg1, TArg2, TArg3, TArg4>(TTarget instance, ref TArg1 arg1, ref TArg2 arg2, ref TArg3 arg3, ref TArg4 arg4);
    internal delegate CallTargetState BeginByValue4<TTarget, TArg1, TArg2, TArg3, TArg4>(TTarget instance, TArg1 arg1, TArg2 arg2, TArg3 arg3, TArg4 arg4);
    internal delegate CallTargetState BeginByRef5<TTarget, TArg1, TArg2, TArg3, TArg4, TArg5>(TTarget instance, ref TArg1 arg1, ref TArg2 arg2, ref TArg3 arg3, ref TArg4 arg4, ref TArg5 arg5);
    internal delegate CallTargetState BeginByValue5<TTarget, TArg1, TArg2, TArg3, TArg4, TArg5>(TTarget instance, TArg1 arg1, TArg2 arg2, TArg3 arg3, TArg4 arg4, TArg5 arg5);
    internal delegate CallTargetState BeginByRef6<TTarget, TArg1, TArg2, TArg3, TArg4, TArg5, TArg6>(TTarget instance, ref TArg1 arg1, ref TArg2 arg2, ref TArg3 arg3, ref TArg4 arg4, ref TArg5 arg5, ref TArg6 arg6);
    internal delegate CallTargetState BeginByValue6<TTarget, TArg1, TArg2, TArg3, TArg4, TArg5, TArg6>(TTarget instance, TArg1 arg1, TArg2 arg2, TArg3 arg3, TArg4 arg4, TArg5 arg5, TArg6 arg6);
    internal delegate CallTargetState BeginByRef7<TTarget, TArg1, TArg2, TArg3, TArg4, TArg5, TArg6, TArg7>(TTarget instance, ref TArg1 arg1, ref TArg2 arg2, ref TArg3 arg3, ref TArg4 arg4, ref TArg5 arg5, ref TArg6 arg6, ref TArg7 arg7);
    internal delegate CallTargetState BeginByValue7<TTarget, TArg1, TArg2, TArg3, TArg4, TArg5, TArg6, TArg7>(TTarget instance, TArg1 arg1, TArg2 arg2, TArg3 arg3, TArg4 arg4, TArg5 arg5, TArg6 arg6, TArg7 arg7);
    internal delegate CallTargetState BeginByRef8<TTarget, TArg1, TArg2, TArg3, TArg4, TArg5, TArg6, TArg7, TArg8>(TTarget instance, ref TArg1 arg1, ref TArg2 arg2, ref TArg3 arg3, ref TArg4 arg4, ref TArg5 arg5, ref TArg6 arg6, ref TArg7 arg7, ref TArg8 arg8);
    internal delegate CallTargetState BeginByValue8<TTarget, TArg1, TArg2, TArg3, TArg4, TArg5, TArg6, TArg7, TArg8>(TTarget instance, TArg1 arg1, TArg2 arg2, TArg3 arg3, TArg4 arg4, TArg5 arg5, TArg6 arg6, TArg7 arg7, TArg8 arg8);
    internal delegate CallTargetReturn<TReturn> EndByValue<TTarget, TReturn>(TTarget instance, TReturn returnValue, Exception exception, CallTargetState state);
    internal delegate CallTargetReturn<TReturn> EndByRef<TTarget, TReturn>(TTarget instance, TReturn returnValue, Exception exception, ref CallTargetState state);
    internal delegate CallTargetReturn EndVoidByValue<TTarget>(TTarget instance, Exception exception, CallTargetState state);
    internal delegate CallTargetReturn EndVoidByRef<TTarget>(TTarget instance, Exception exception, ref CallTargetState state);

    internal static class Begin0<THandler, TTarget>
    {
        internal static readonly BeginByRef0<TTarget> ByRef;
        internal static readonly BeginByValue0<TTarget> ByValue;

        static Begin0()
        {
            var types = new[] { typeof(TTarget) };
            ByRef = (BeginByRef0<TTarget>)Binder.Bind(typeof(THandler), "OnMethodBegin", types, typeof(BeginByRef0<TTarget>));
            if (ByRef == null)
            {
                ByValue = (BeginByValue0<TTarget>)Binder.Bind(typeof(THandler), "OnMethodBegin", types, typeof(BeginByValue0<TTarget>));
            }
            if (ByRef == null && ByValue == null)
            {
                Log.Missing(typeof(THandler), "OnMethodBegin", Shape.Of(types, null));
            }
        }
    }

    internal static class Begin1<THandler, TTarget, TArg1>
    {
        internal static readonly BeginByRef1<TTarget, TArg1> ByRef;
        internal static readonly BeginByValue1<TTarget, TArg1> ByValue;

        static Begin1()
        {
            var types = new[] { typeof(TTarget), typeof(TArg1) };
            ByRef = (BeginByRef1<TTarget, TArg1>)Binder.Bind(typeof(THandler), "OnMethodBegin", types, typeof(BeginByRef1<TTarget, TArg1>));
            if (ByRef == null)
            {
                ByValue = (BeginByValue1<TTarget, TArg1>)Binder.Bind(typeof(THandler), "OnMethodBegin", types, typeof(BeginByValue1<TTarget, TArg1>));
            }
            if (ByRef == null && ByValue == null)
            {
                Log.Missing(typeof(THandler), "OnMethodBegin", Shape.Of(types, null));
            }
        }
    }

    internal static class Begin2<THandler, TTarget, TArg1, TArg2>
    {
        internal static readonly BeginByRef2<TTarget, TArg1, TArg2> ByRef;
        internal static readonly BeginByValue2<TTarget, TArg1, TArg2> ByValue;

        static Begin2()
        {
            var types = new[] { typeof(TTarget), typeof(TArg1), typeof(TArg2) };
            ByRef = (BeginByRef2<TTarget, TArg1, TArg2>)Binder.Bind(typeof(THandler), "OnMethodBegin", types, typeof(BeginByRef2<TTarget, TArg1, TArg2>));
            if (ByRef == null)
            {
                ByValue = (BeginByValue2<TTarget, TArg1, TArg2>)Binder.Bind(typeof(THandler), "OnMethodBegin", types, typeof(BeginByValue2<TTarget, TArg1, TArg2>));
            }
            if (ByRef == null && ByValue == null)
            {
                Log.Missing(typeof(THandler), "OnMethodBegin", Shape.Of(types, null));
            }
        }
    }

    internal static class Begin3<THandler, TTarget, TArg1, TArg2, TArg3>
    {
        internal static readonly BeginByRef3<TTarget, TArg1, TArg2, TArg3> ByRef;
        internal static readonly BeginByValue3<TTarget, TArg1, TArg2, TArg3> ByValue;

        static Begin3()
        {
            var types = new[] { typeof(TTarget), typeof(TArg1), typeof(TArg2), typeof(TArg3) };
            ByRef = (BeginByRef3<TTarget, TArg1, TArg2, TArg3>)Binder.Bind(typeof(THandler), "OnMethodBegin", types, typeof(BeginByRef3<TTarget, TArg1, TArg2, TArg3>));
            if (ByRef == null)
            {
                ByValue = (BeginByValue3<TTarget, TArg1, TArg2, TArg3>)Binder.Bind(typeof(THandler), "OnMethodBegin", types, typeof(BeginByValue3<TTarget, TArg1, TArg2, TArg3>));
            }
            if (ByRef == null && ByValue == null)
            {
                Log.Missing(typeof(THandler), "OnMethodBegin", Shape.Of(types, null));
            }
        }
    }

    internal static class Begin4<THandler, TTarget, TArg1, TArg2, TArg3, TArg4>
    {
        internal static readonly BeginByRef4<TTarget, TArg1, TArg2, TArg3, TArg4> ByRef;
        internal static readonly BeginByValue4<TTarget, TArg1, TArg2, TArg3, TArg4> ByValue;

        static Begin4()
        {
            var types = new[] { typeof(TTarget), typeof(TArg1), typeof(TArg2), typeof(TArg3), typeof(TArg4) };
            ByRef = (BeginByRef4<TTarget, TArg1, TArg2, TArg3, TArg4>)Binder.Bind(typeof(THandler), "OnMethodBegin", types, typeof(BeginByRef4<TTarget, TArg1, TArg2, TArg3, TArg4>));
            if (ByRef == null)
            {
                ByValue = (BeginByValue4<TTarget, TArg1, TArg2, TArg3, TArg4>)Binder.Bind(typeof(THandler), "OnMethodBegin", types, typeof(BeginByValue4<TTarget, TArg1, TArg2, TArg3, TArg4>));
            }
            if (ByRef == null && ByValue == null)
            {
                Log.Missing(typeof(THandler), "OnMethodBegin", Shape.Of(types, null));
            }
        }
    }

    internal static class Begin5<THandler, TTarget, TArg1, TArg2, TArg3, TArg4, TArg5>
    {
        internal static readonly BeginByRef5<TTarget, TArg1, TArg2, TArg3, TArg4, TArg5> ByRef;
        internal static readonly BeginByValue5<TTarget, TArg1, TArg2, TArg3, TArg4, TArg5> ByValue;

        static Begin5()
        {
            var types = new[] { typeof(TTarget), typeof(TArg1), typeof(TArg2), typeof(TArg3), typeof(TArg4), typeof(TArg5) };
            ByRef = (BeginByRef5<TTarget, TArg1, TArg2, TArg3, TArg4, TArg5>)Binder.Bind(typeof(THandler), "OnMethodBegin", types, typeof(BeginByRef5<TTarget, TArg1, TArg2, TArg3, TArg4, TArg5>));
            if (ByRef == null)
            {
                ByValue = (BeginByValue5<TTarget, TArg1, TArg2, TArg3, TArg4, TArg5>)Binder.Bind(typeof(THandler), "OnMethodBegin", types, typeof(BeginByValue5<TTarget, TArg1, TArg2, TArg3, TArg4, TArg5>));
            }
            if (ByRef == null && ByValue == null)
            {
                Log.Missing(typeof(THandler), "OnMethodBegin", Shape.Of(types, null));
            }
        }
    }

    internal static class Begin6<THandler, TTarget, TArg1, TArg2, TArg3, TArg4, TArg5, TArg6>
    {
        internal static readonly BeginByRef6<TTarget, TArg1, TArg2, TArg3, TArg4, TArg5, TArg6> ByRef;
        internal static readonly BeginByValue6<TTarget, TArg1, TArg2, TArg3, TArg4, TArg5, TArg6> ByValue;

        static Begin6()
        {
            var types = new[] { typeof(TTarget), typeof(TArg1), typeof(TArg2), typeof(TArg3), typeof(TArg4), typeof(TArg5), typeof(TArg6) };
            ByRef = (BeginByRef6<TTarget, TArg1, TArg2, TArg3, TArg4, TArg5, TArg6>)Binder.Bind(typeof(THandler), "OnMethodBegin", types, typeof(BeginByRef6<TTarget, TArg1, TArg2, TArg3, TArg4, TArg5, TArg6>));
            if (ByRef == null)
            {
                ByValue = (BeginByValue6<TTarget, TArg1, TArg2, TArg3, TArg4, TArg5, TArg6>)Binder.Bind(typeof(THandler), "OnMethodBegin", types, typeof(BeginByValue6<TTarget, TArg1, TArg2, TArg3, TArg4, TArg5, TArg6>));
            }
            if (ByRef == null && ByValue == null)
            {
                Log.Missing(typeof(THandler), "OnMethodBegin", Shape.Of(types, null));
            }
        }
    }

    internal static class Begin7<THandler, TTarget, TArg1, TArg2, TArg3, TArg4, TArg5, TArg6, TArg7>
    {
        internal static readonly BeginByRef7<TTarget, TArg1, TArg2, TArg3, TArg4, TArg5, TArg6, TArg7> ByRef;
        internal static readonly BeginByValue7<TTarget, TArg1, TArg2, TArg3, TArg4, TArg5, TArg6, TArg7> ByValue;

        static Begin7()
        {
            var types = new[] { typeof(TTarget), typeof(TArg1), typeof(TArg2), typeof(TArg3), typeof(TArg4), typeof(TArg5), typeof(TArg6), typeof(TArg7) };
            ByRef = (BeginByRef7<TTarget, TArg1, TArg2, TArg3, TArg4, TArg5, TArg6, TArg7>)Binder.Bind(typeof(THandler), "OnMethodBegin", types, typeof(BeginByRef7<TTarget, TArg1, TArg2, TArg3, TArg4, TArg5, TArg6, TArg7>));
            if (ByRef == null)
            {
                ByValue = (BeginByValue7<TTarget, TArg1, TArg2, TArg3, TArg4, TArg5, TArg6, TArg7>)Binder.Bind(typeof(THandler), "OnMethodBegin", types, typeof(BeginByValue7<TTarget, TArg1, TArg2, TArg3, TArg4, TArg5, TArg6, TArg7>));
            }
            if (ByRef == null && ByValue == null)
            {
                Log.Missing(typeof(THandler), "OnMethodBegin", Shape.Of(types, null));
            }
        }
    }

    internal static class Begin8<THandler, TTarget, TArg1, TArg2, TArg3, TArg4, TArg5, TArg6, TArg7, TArg8>
    {
        internal static readonly BeginByRef8<TTarget, TArg1, TArg2, TArg3, TArg4, TArg5, TArg6, TArg7, TArg8> ByRef;
        internal static readonly BeginByValue8<TTarget, TArg1, TArg2, TArg3, TArg4, TArg5, TArg6, TArg7, TArg8> ByValue;

        static Begin8()
        {
            var types = new[] { typeof(TTarget), typeof(TArg1), typeof(TArg2), typeof(TArg3), typeof(TArg4), typeof(TArg5), typeof(TArg6), typeof(TArg7), typeof(TArg8) };
            ByRef = (BeginByRef8<TTarget, TArg1, TArg2, TArg3, TArg4, TArg5, TArg6, TArg7, TArg8>)Binder.Bind(typeof(THandler), "OnMethodBegin", types, typeof(BeginByRef8<TTarget, TArg1, TArg2, TArg3, TArg4, TArg5, TArg6, TArg7, TArg8>));
            if (ByRef == null)
            {
                ByValue = (BeginByValue8<TTarget, TArg1, TArg2, TArg3, TArg4, TArg5, TArg6, TArg7, TArg8>)Binder.Bind(typeof(THandler), "OnMethodBegin", types, typeof(BeginByValue8<TTarget, TArg1, TArg2, TArg3, TArg4, TArg5, TArg6, TArg7, TArg8>));
            }
            if (ByRef == null && ByValue == null)
            {
                Log.Missing(typeof(THandler), "OnMethodBegin", Shape.Of(types, null));
            }
        }
    }

    internal static class End<THandler, TTarget, TReturn>
    {
        internal static readonly EndByValue<TTarget, TReturn> ByValue;
        internal static readonly EndByRef<TTarget, TReturn> ByRef;

        static End()
        {
            var types = new[] { typeof(TTarget), typeof(TReturn), typeof(Exception), typeof(CallTargetState) };
            ByValue = (EndByValue<TTarget, TReturn>)Binder.Bind(typeof(THandler), "OnMethodEnd", types, typeof(EndByValue<TTarget, TReturn>));
            if (ByValue == null)
            {
                ByRef = (EndByRef<TTarget, TReturn>)Binder.Bind(typeof(THandler), "OnMethodEnd", types, typeof(EndByRef<TTarget, TReturn>));
            }
            if (ByValue == null && ByRef == null)
            {
                Log.Missing(typeof(THandler), "OnMethodEnd", Shape.Of(types, typeof(CallTargetReturn<TReturn>)));
            }
        }
    }

    internal static class EndVoid<THandler, TTarget>
    {
        internal static readonly EndVoidByValue<TTarget> ByValue;
        internal static readonly EndVoidByRef<TTarget> ByRef;

        static EndVoid()
        {
            var types = new[] { typeof(TTarget), typeof(Exception), typeof(CallTargetState) };
            ByValue = (EndVoidByValue<TTarget>)Binder.Bind(typeof(THandler), "OnMethodEnd", types, typeof(EndVoidByValue<TTarget>));
            if (ByValue == null)
            {
                ByRef = (EndVoidByRef<TTarget>)Binder.Bind(typeof(THandler), "OnMethodEnd", types, typeof(EndVoidByRef<TTarget>));
            }
            if (ByValue == null && ByRef == null)
            {
                Log.Missing(typeof(THandler), "OnMethodEnd", Shape.Of(types, typeof(CallTargetReturn)));
            }
        }
    }

    /// <summary>
    /// Whether a handler runs on this thread: a wrapped method it calls (a ToString, say) runs
    /// without handlers, instead of calling the handler again and again.
    /// </summary>
    internal static class Reentry
    {
        [ThreadStatic]
        internal static bool Inside;
    }

    internal static class Shape
    {
        /// <summary>`(T1, T2) -> R`, as the log says what was looked for.</summary>
        internal static string Of(Type[] types, Type returns)
        {
            var names = new string[types.Length];
            for (int i = 0; i < types.Length; i++)
            {
                names[i] = Name(types[i]);
            }
            return "(" + string.Join(", ", names) + ")" + (returns == null ? "" : " -> " + Name(returns));
        }

        /// <summary>`Namespace.Type`, a generic one `Namespace.Box<System.Int32>`.</summary>
        internal static string Name(Type type)
        {
            if (!type.IsGenericType)
            {
                return type.FullName ?? type.Name;
            }
            var definition = type.GetGenericTypeDefinition().FullName ?? type.Name;
            int tick = definition.IndexOf('`');
            var args = type.GetGenericArguments();
            var names = new string[args.Length];
            for (int i = 0; i < args.Length; i++)
            {
                names[i] = Name(args[i]);
            }
            return (tick < 0 ? definition : definition.Substring(0, tick)) + "<" + string.Join(", ", names) + ">";
        }
    }

    /// <summary>What the wrapped code calls; not for handlers.</summary>
    public static class CallTargetInvoker
    {
        /// <summary>Calls THandler.OnMethodBegin with the instance (null for a static method) and 0 argument(s).</summary>
        public static CallTargetState BeginMethod<THandler, TTarget>(TTarget instance)
        {
            if (Reentry.Inside)
            {
                return default(CallTargetState);
            }
            Reentry.Inside = true;
            try
            {
                var byRef = Begin0<THandler, TTarget>.ByRef;
                if (byRef != null)
                {
                    return byRef(instance);
                }
                var byValue = Begin0<THandler, TTarget>.ByValue;
                if (byValue != null)
                {
                    return byValue(instance);
                }
            }
            catch (Exception e)
            {
                Log.Threw(typeof(THandler), "OnMethodBegin", e);
            }
            finally
            {
                Reentry.Inside = false;
            }
            return default(CallTargetState);
        }

        /// <summary>Calls THandler.OnMethodBegin with the instance (null for a static method) and 1 argument(s).</summary>
        public static CallTargetState BeginMethod<THandler, TTarget, TArg1>(TTarget instance, ref TArg1 arg1)
        {
            if (Reentry.Inside)
            {
                return default(CallTargetState);
            }
            Reentry.Inside = true;
            try
            {
                var byRef = Begin1<THandler, TTarget, TArg1>.ByRef;
                if (byRef != null)
                {
                    return byRef(instance, ref arg1);
                }
                var byValue = Begin1<THandler, TTarget, TArg1>.ByValue;
                if (byValue != null)
                {
                    return byValue(instance, arg1);
                }
            }
            catch (Exception e)
            {
                Log.Threw(typeof(THandler), "OnMethodBegin", e);
            }
            finally
            {
                Reentry.Inside = false;
            }
            return default(CallTargetState);
        }

        /// <summary>Calls THandler.OnMethodBegin with the instance (null for a static method) and 2 argument(s).</summary>
        public static CallTargetState BeginMethod<THandler, TTarget, TArg1, TArg2>(TTarget instance, ref TArg1 arg1, ref TArg2 arg2)
        {
            if (Reentry.Inside)
            {
                return default(CallTargetState);
            }
            Reentry.Inside = true;
            try
            {
                var byRef = Begin2<THandler, TTarget, TArg1, TArg2>.ByRef;
                if (byRef != null)
                {
                    return byRef(instance, ref arg1, ref arg2);
                }
                var byValue = Begin2<THandler, TTarget, TArg1, TArg2>.ByValue;
                if (byValue != null)
                {
                    return byValue(instance, arg1, arg2);
                }
            }
            catch (Exception e)
            {
                Log.Threw(typeof(THandler), "OnMethodBegin", e);
            }
            finally
            {
                Reentry.Inside = false;
            }
            return default(CallTargetState);
        }

        /// <summary>Calls THandler.OnMethodBegin with the instance (null for a static method) and 3 argument(s).</summary>
        public static CallTargetState BeginMethod<THandler, TTarget, TArg1, TArg2, TArg3>(TTarget instance, ref TArg1 arg1, ref TArg2 arg2, ref TArg3 arg3)
        {
            if (Reentry.Inside)
            {
                return default(CallTargetState);
            }
            Reentry.Inside = true;
            try
            {
                var byRef = Begin3<THandler, TTarget, TArg1, TArg2, TArg3>.ByRef;
                if (byRef != null)
                {
                    return byRef(instance, ref arg1, ref arg2, ref arg3);
                }
                var byValue = Begin3<THandler, TTarget, TArg1, TArg2, TArg3>.ByValue;
                if (byValue != null)
                {
                    return byValue(instance, arg1, arg2, arg3);
                }
            }
            catch (Exception e)
            {
                Log.Threw(typeof(THandler), "OnMethodBegin", e);
            }
            finally
            {
                Reentry.Inside = false;
            }
            return default(CallTargetState);
        }

        /// <summary>Calls THandler.OnMethodBegin with the instance (null for a static method) and 4 argument(s).</summary>
        public static CallTargetState BeginMethod<THandler, TTarget, TArg1, TArg2, TArg3, TArg4>(TTarget instance, ref TArg1 arg1, ref TArg2 arg2, ref TArg3 arg3, ref TArg4 arg4)
        {
            if (Reentry.Inside)
            {
                return default(CallTargetState);
            }
            Reentry.Inside = true;
            try
            {
                var byRef = Begin4<THandler, TTarget, TArg1, TArg2, TArg3, TArg4>.ByRef;
                if (byRef != null)
                {
                    return byRef(instance, ref arg1, ref arg2, ref arg3, ref arg4);
                }
                var byValue = Begin4<THandler, TTarget, TArg1, TArg2, TArg3, TArg4>.ByValue;
                if (byValue != null)
                {
                    return byValue(instance, arg1, arg2, arg3, arg4);
                }
            }
            catch (Exception e)
            {
                Log.Threw(typeof(THandler), "OnMethodBegin", e);
            }
            finally
            {
                Reentry.Inside = false;
            }
            return default(CallTargetState);
        }

        /// <summary>Calls THandler.OnMethodBegin with the instance (null for a static method) and 5 argument(s).</summary>
        public static CallTargetState BeginMethod<THandler, TTarget, TArg1, TArg2, TArg3, TArg4, TArg5>(TTarget instance, ref TArg1 arg1, ref TArg2 arg2, ref TArg3 arg3, ref TArg4 arg4, ref TArg5 arg5)
        {
            if (Reentry.Inside)
            {
                return default(CallTargetState);
            }
            Reentry.Inside = true;
            try
            {
                var byRef = Begin5<THandler, TTarget, TArg1, TArg2, TArg3, TArg4, TArg5>.ByRef;
                if (byRef != null)
                {
                    return byRef(instance, ref arg1, ref arg2, ref arg3, ref arg4, ref arg5);
                }
                var byValue = Begin5<THandler, TTarget, TArg1, TArg2, TArg3, TArg4, TArg5>.ByValue;
                if (byValue != null)
                {
                    return byValue(instance, arg1, arg2, arg3, arg4, arg5);
                }
            }
            catch (Exception e)
            {
                Log.Threw(typeof(THandler), "OnMethodBegin", e);
            }
            finally
            {
                Reentry.Inside = false;
            }
            return default(CallTargetState);
        }

        /// <summary>Calls THandler.OnMethodBegin with the instance (null for a static method) and 6 argument(s).</summary>
        public static CallTargetState BeginMethod<THandler, TTarget, TArg1, TArg2, TArg3, TArg4, TArg5, TArg6>(TTarget instance, ref TArg1 arg1, ref TArg2 arg2, ref TArg3 arg3, ref TArg4 arg4, ref TArg5 arg5, ref TArg6 arg6)
        {
            if (Reentry.Inside)
            {
                return default(CallTargetState);
            }
            Reentry.Inside = true;
            try
            {
                var byRef = Begin6<THandler, TTarget, TArg1, TArg2, TArg3, TArg4, TArg5, TArg6>.ByRef;
                if (byRef != null)
                {
                    return byRef(instance, ref arg1, ref arg2, ref arg3, ref arg4, ref arg5, ref arg6);
                }
                var byValue = Begin6<THandler, TTarget, TArg1, TArg2, TArg3, TArg4, TArg5, TArg6>.ByValue;
                if (byValue != null)
                {
                    return byValue(instance, arg1, arg2, arg3, arg4, arg5, arg6);
                }
            }
            catch (Exception e)
            {
                Log.Threw(typeof(THandler), "OnMethodBegin", e);
            }
            finally
            {
                Reentry.Inside = false;
            }
            return default(CallTargetState);
        }

        /// <summary>Calls THandler.OnMethodBegin with the instance (null for a static method) and 7 argument(s).</summary>
        public static CallTargetState BeginMethod<THandler, TTarget, TArg1, TArg2, TArg3, TArg4, TArg5, TArg6, TArg7>(TTarget instance, ref TArg1 arg1, ref TArg2 arg2, ref TArg3 arg3, ref TArg4 arg4, ref TArg5 arg5, ref TArg6 arg6, ref TArg7 arg7)
        {
            if (Reentry.Inside)
            {
                return default(CallTargetState);
            }
            Reentry.Inside = true;
            try
            {
                var byRef = Begin7<THandler, TTarget, TArg1, TArg2, TArg3, TArg4, TArg5, TArg6, TArg7>.ByRef;
                if (byRef != null)
                {
                    return byRef(instance, ref arg1, ref arg2, ref arg3, ref arg4, ref arg5, ref arg6, ref arg7);
                }
                var byValue = Begin7<THandler, TTarget, TArg1, TArg2, TArg3, TArg4, TArg5, TArg6, TArg7>.ByValue;
                if (byValue != null)
                {
                    return byValue(instance, arg1, arg2, arg3, arg4, arg5, arg6, arg7);
                }
            }
            catch (Exception e)
            {
                Log.Threw(typeof(THandler), "OnMethodBegin", e);
            }
            finally
            {
                Reentry.Inside = false;
            }
            return default(CallTargetState);
        }

        /// <summary>Calls THandler.OnMethodBegin with the instance (null for a static method) and 8 argument(s).</summary>
        public static CallTargetState BeginMethod<THandler, TTarget, TArg1, TArg2, TArg3, TArg4, TArg5, TArg6, TArg7, TArg8>(TTarget instance, ref TArg1 arg1, ref TArg2 arg2, ref TArg3 arg3, ref TArg4 arg4, ref TArg5 arg5, ref TArg6 arg6, ref TArg7 arg7, ref TArg8 arg8)
        {
            if (Reentry.Inside)
            {
                return default(CallTargetState);
            }
            Reentry.Inside = true;
            try
            {
                var byRef = Begin8<THandler, TTarget, TArg1, TArg2, TArg3, TArg4, TArg5, TArg6, TArg7, TArg8>.ByRef;
                if (byRef != null)
                {
                    return byRef(instance, ref arg1, ref arg2, ref arg3, ref arg4, ref arg5, ref arg6, ref arg7, ref arg8);
                }
                var byValue = Begin8<THandler, TTarget, TArg1, TArg2, TArg3, TArg4, TArg5, TArg6, TArg7, TArg8>.ByValue;
                if (byValue != null)
                {
                    return byValue(instance, arg1, arg2, arg3, arg4, arg5, arg6, arg7, arg8);
                }
            }
            catch (Exception e)
            {
                Log.Threw(typeof(THandler), "OnMethodBegin", e);
            }
            finally
            {
                Reentry.Inside = false;
            }
            return default(CallTargetState);
        }

        /// <summary>
        /// Calls THandler.OnMethodEnd with the instance, the value returned, the exception that
        /// left the method (null when it returned) and the state; answers the value the caller
        /// gets: the handler's, or the method's own when there is no handler or it threw.
        /// </summary>
        public static TReturn EndMethod<THandler, TTarget, TReturn>(TTarget instance, TReturn returnValue, object exception, CallTargetState state)
        {
            if (Reentry.Inside)
            {
                return returnValue;
            }
            Reentry.Inside = true;
            var value = returnValue;
            try
            {
                var byValue = End<THandler, TTarget, TReturn>.ByValue;
                var byRef = End<THandler, TTarget, TReturn>.ByRef;
                if (byValue != null)
                {
                    value = byValue(instance, returnValue, exception as Exception, state).GetReturnValue();
                }
                else if (byRef != null)
                {
                    value = byRef(instance, returnValue, exception as Exception, ref state).GetReturnValue();
                }
            }
            catch (Exception e)
            {
                Log.Threw(typeof(THandler), "OnMethodEnd", e);
                value = returnValue;
            }
            try
            {
                // A Task the caller gets: OnAsyncMethodEnd once it completes, if the handler has one.
                var watch = AsyncEndOf<THandler, TTarget, TReturn>.Watch;
                if (watch != null)
                {
                    watch(instance, value, exception as Exception, state);
                }
            }
            catch (Exception)
            {
                // The app's call goes on as written.
            }
            finally
            {
                Reentry.Inside = false;
            }
            return value;
        }

        /// <summary>EndMethod for a method returning void.</summary>
        public static void EndMethod<THandler, TTarget>(TTarget instance, object exception, CallTargetState state)
        {
            if (Reentry.Inside)
            {
                return;
            }
            Reentry.Inside = true;
            try
            {
                var byValue = EndVoid<THandler, TTarget>.ByValue;
                if (byValue != null)
                {
                    byValue(instance, exception as Exception, state);
                    return;
                }
                var byRef = EndVoid<THandler, TTarget>.ByRef;
                if (byRef != null)
                {
                    byRef(instance, exception as Exception, ref state);
                }
            }
            catch (Exception e)
            {
                Log.Threw(typeof(THandler), "OnMethodEnd", e);
            }
            finally
            {
                Reentry.Inside = false;
            }
        }
    }
}
