// The end of a method returning a Task, for a Rust handler that asked to end at the task's
// completion: the wrapped method's end code hands its task here instead of calling corprof's
// native end entry, and a continuation calls that entry once the task completes. The
// continuation runs synchronously on the thread that completes the task (or here, when it has
// completed already), on the default scheduler, never on the caller's SynchronizationContext;
// it reads the task's status (and a successful Task<T>'s result) only, never its exception, so
// the app's task, its exception and whether it was observed stay as they were.

using System;
using System.Runtime.InteropServices;
using System.Threading;
using System.Threading.Tasks;

namespace Corprof.Instrumentation
{
    /// <summary>corprof's native entry for the end of a task: (method, state, how, integer, float).</summary>
    [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
    internal delegate void TaskEndEntry(int method, long state, int how, long integer, double number);

    /// <summary>What the wrapped code of a task-returning method calls at its end; not for handlers.</summary>
    public static class AsyncEnd
    {
        // How the call ended, as the native entry reads it.
        private const int Completed = 0;
        private const int Faulted = 1;
        private const int Canceled = 2;
        private const int NoTask = 3;

        /// <summary>The native entry, bound once per address (the library's, for the process's life).</summary>
        private sealed class Bound
        {
            internal readonly IntPtr Address;
            internal readonly TaskEndEntry Call;

            internal Bound(IntPtr address, TaskEndEntry call)
            {
                Address = address;
                Call = call;
            }
        }

        private static volatile Bound bound;

        private static TaskEndEntry Entry(IntPtr address)
        {
            var b = bound;
            if (b != null && b.Address == address)
            {
                return b.Call;
            }
            if (address == IntPtr.Zero)
            {
                return null;
            }
            var call = (TaskEndEntry)Marshal.GetDelegateForFunctionPointer(address, typeof(TaskEndEntry));
            bound = new Bound(address, call);
            return call;
        }

        /// <summary>One call waiting for its task.</summary>
        private sealed class Pending
        {
            internal readonly TaskEndEntry Call;
            internal readonly int Method;
            internal readonly long State;

            internal Pending(TaskEndEntry call, int method, long state)
            {
                Call = call;
                Method = method;
                State = state;
            }
        }

        private static readonly Action<Task, object> OnTask = Done;

        /// <summary>
        /// The end of a method returning <c>Task</c> (or a <c>Task&lt;T&gt;</c> whose result is not
        /// passed): at once when <paramref name="exception"/> left it or it returned no task, else
        /// when the task completes. Never throws.
        /// </summary>
        public static void EndTask(object task, object exception, int method, long state, IntPtr entry)
        {
            try
            {
                var call = Entry(entry);
                if (call == null)
                {
                    return;
                }
                if (exception != null)
                {
                    call(method, state, Faulted, 0, 0);
                    return;
                }
                var t = task as Task;
                if (t == null)
                {
                    call(method, state, NoTask, 0, 0);
                    return;
                }
                t.ContinueWith(OnTask, new Pending(call, method, state), CancellationToken.None,
                    TaskContinuationOptions.ExecuteSynchronously, TaskScheduler.Default);
            }
            catch (Exception)
            {
                // The app's call goes on as written.
            }
        }

        /// <summary>
        /// The end of a method returning <c>Task&lt;T&gt;</c>: as <see cref="EndTask"/>, with the
        /// result, when the task ran to completion and <typeparamref name="T"/> is a primitive.
        /// </summary>
        public static void EndTaskOf<T>(object task, object exception, int method, long state, IntPtr entry)
        {
            try
            {
                var call = Entry(entry);
                if (call == null)
                {
                    return;
                }
                if (exception != null)
                {
                    call(method, state, Faulted, 0, 0);
                    return;
                }
                var t = task as Task<T>;
                if (t == null)
                {
                    EndTask(task, null, method, state, entry);
                    return;
                }
                t.ContinueWith(Of<T>.OnTask, new Pending(call, method, state), CancellationToken.None,
                    TaskContinuationOptions.ExecuteSynchronously, TaskScheduler.Default);
            }
            catch (Exception)
            {
                // The app's call goes on as written.
            }
        }

        private static class Of<T>
        {
            internal static readonly Action<Task<T>, object> OnTask = DoneOf<T>;
        }

        /// <summary>
        /// The end of a method returning <c>ValueTask</c> (boxed by the wrapped code): as
        /// <see cref="EndTask"/> when the value holds a Task (an async method that awaited) or
        /// nothing (complete at the return); at once, as for no task, when it holds an
        /// <c>IValueTaskSource</c>, which takes one continuation: the app's.
        /// </summary>
        public static void EndValueTask(object valueTask, object exception, int method, long state, IntPtr entry)
        {
            // What it holds, as EndTask takes it: a task, nothing known (as for no task), or,
            // complete when made, a task complete already.
            object inside = null;
            if (exception == null && ValueTaskInside.Of(valueTask, out inside) && inside == null)
            {
                inside = Task.CompletedTask;
            }
            EndTask(exception == null ? inside : null, exception, method, state, entry);
        }

        /// <summary>
        /// The end of a method returning <c>ValueTask&lt;T&gt;</c>: as <see cref="EndValueTask"/>,
        /// with the result as <see cref="EndTaskOf{T}"/> gives it.
        /// </summary>
        public static void EndValueTaskOf<T>(object valueTask, object exception, int method, long state, IntPtr entry)
        {
            object inside = null;
            if (exception == null && ValueTaskInside.Of(valueTask, out inside) && inside == null)
            {
                // Complete when made: its result is the value's own field (no task to make).
                try
                {
                    var call = Entry(entry);
                    if (call != null)
                    {
                        long integer;
                        double number;
                        Bits(ValueTaskInside.Result(valueTask), out integer, out number);
                        call(method, state, Completed, integer, number);
                    }
                }
                catch (Exception)
                {
                    // The app's call goes on as written.
                }
                return;
            }
            EndTaskOf<T>(exception == null ? inside : null, exception, method, state, entry);
        }

        private static int How(Task task)
        {
            // The status alone: reading the exception would mark it observed.
            switch (task.Status)
            {
                case TaskStatus.RanToCompletion:
                    return Completed;
                case TaskStatus.Canceled:
                    return Canceled;
                default:
                    return Faulted;
            }
        }

        private static void Done(Task task, object pending)
        {
            try
            {
                var p = (Pending)pending;
                p.Call(p.Method, p.State, How(task), 0, 0);
            }
            catch (Exception)
            {
                // A continuation that threw would leave a faulted task of ours unobserved.
            }
        }

        private static void DoneOf<T>(Task<T> task, object pending)
        {
            try
            {
                var p = (Pending)pending;
                int how = How(task);
                long integer = 0;
                double number = 0;
                if (how == Completed)
                {
                    Bits(task.Result, out integer, out number);
                }
                p.Call(p.Method, p.State, how, integer, number);
            }
            catch (Exception)
            {
                // As in Done.
            }
        }

        /// <summary>A primitive's value as the native entry reads it (the integer or the float).</summary>
        private static void Bits(object value, out long integer, out double number)
        {
            integer = 0;
            number = 0;
            if (value == null || !value.GetType().IsPrimitive)
            {
                return;
            }
            switch (Type.GetTypeCode(value.GetType()))
            {
                case TypeCode.Boolean:
                    integer = (bool)value ? 1 : 0;
                    break;
                case TypeCode.Char:
                    integer = (char)value;
                    break;
                case TypeCode.SByte:
                    integer = (sbyte)value;
                    break;
                case TypeCode.Byte:
                    integer = (byte)value;
                    break;
                case TypeCode.Int16:
                    integer = (short)value;
                    break;
                case TypeCode.UInt16:
                    integer = (ushort)value;
                    break;
                case TypeCode.Int32:
                    integer = (int)value;
                    break;
                case TypeCode.UInt32:
                    integer = (uint)value;
                    break;
                case TypeCode.Int64:
                    integer = (long)value;
                    break;
                case TypeCode.UInt64:
                    integer = unchecked((long)(ulong)value);
                    break;
                case TypeCode.Single:
                    number = (float)value;
                    break;
                case TypeCode.Double:
                    number = (double)value;
                    break;
                default:
                    // IntPtr and UIntPtr.
                    if (value is IntPtr)
                    {
                        integer = ((IntPtr)value).ToInt64();
                    }
                    else if (value is UIntPtr)
                    {
                        integer = unchecked((long)((UIntPtr)value).ToUInt64());
                    }
                    break;
            }
        }
    }
}
