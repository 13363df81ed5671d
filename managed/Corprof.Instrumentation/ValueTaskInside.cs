// What a boxed ValueTask or ValueTask<T> holds, read without touching it: null (complete when it
// was made: a result, or nothing), a Task (an async method that awaited: watching it changes
// nothing), or an IValueTaskSource, whose one continuation is the app's own (its AsTask would
// take it). The holder is the private field `_obj` (the result of a ValueTask<T> complete when
// made, `_result`) of CoreCLR 3.1 and 8; a type without them reads as "cannot tell", and the
// method ends at its return. By name and reflection only: this assembly is built against
// mscorlib, whose CoreCLR 3.1 facade does not forward the ValueTask types.

using System;
using System.Collections.Generic;
using System.Reflection;

namespace Corprof.Instrumentation
{
    internal static class ValueTaskInside
    {
        private const string Plain = "System.Threading.Tasks.ValueTask";
        private const string Generic = "System.Threading.Tasks.ValueTask`1";

        private sealed class Fields
        {
            internal FieldInfo Obj;
            internal FieldInfo Result;
        }

        private static readonly object Gate = new object();
        private static readonly Dictionary<Type, Fields> Known = new Dictionary<Type, Fields>();

        /// <summary>Whether <paramref name="type"/> is the framework's ValueTask or ValueTask&lt;T&gt;.</summary>
        internal static bool Is(Type type)
        {
            if (type == null || !type.IsValueType || type.Assembly != typeof(object).Assembly)
            {
                return false;
            }
            if (type.IsGenericType)
            {
                return !type.IsGenericTypeDefinition && type.GetGenericTypeDefinition().FullName == Generic;
            }
            return type.FullName == Plain;
        }

        private static Fields Of(Type type)
        {
            lock (Gate)
            {
                Fields f;
                if (Known.TryGetValue(type, out f))
                {
                    return f;
                }
                f = null;
                if (Is(type))
                {
                    try
                    {
                        var flags = BindingFlags.Instance | BindingFlags.NonPublic;
                        var obj = type.GetField("_obj", flags);
                        if (obj != null && obj.FieldType == typeof(object))
                        {
                            f = new Fields { Obj = obj, Result = type.IsGenericType ? type.GetField("_result", flags) : null };
                        }
                    }
                    catch (Exception)
                    {
                        f = null;
                    }
                }
                Known[type] = f;
                return f;
            }
        }

        /// <summary>False when <paramref name="boxed"/> is no ValueTask this can read.</summary>
        internal static bool Of(object boxed, out object inside)
        {
            inside = null;
            var f = boxed == null ? null : Of(boxed.GetType());
            if (f == null)
            {
                return false;
            }
            inside = f.Obj.GetValue(boxed);
            return true;
        }

        /// <summary>The result a ValueTask&lt;T&gt; complete when made holds (null when unreadable).</summary>
        internal static object Result(object boxed)
        {
            var f = boxed == null ? null : Of(boxed.GetType());
            return f == null || f.Result == null ? null : f.Result.GetValue(boxed);
        }
    }
}
