// A C# handler's OnAsyncMethodEnd: for a wrapped method returning Task or Task<T> (or a
// ValueTask or ValueTask<T> holding a task or complete when made), when its
// handler has one, EndMethod (after OnMethodEnd, at the method's return) registers a
// continuation on the task it returns, which calls OnAsyncMethodEnd once the task completes: with
// the result of a Task<T> that ran to completion (default(T), and null for a Task, otherwise),
// the exception of one that faulted (reading it marks it observed), a TaskCanceledException for
// one cancelled; at once when the method threw or returned null. The continuation runs
// synchronously on the thread that completes the task, on the default scheduler, never on the
// caller's SynchronizationContext. The app's task is not replaced: what OnAsyncMethodEnd returns
// is not given to the app.

using System;
using System.Reflection;
using System.Threading;
using System.Threading.Tasks;

namespace Corprof.Instrumentation
{
    internal delegate TResult AsyncEndByValue<TTarget, TResult>(TTarget instance, TResult returnValue, Exception exception, CallTargetState state);
    internal delegate TResult AsyncEndByRef<TTarget, TResult>(TTarget instance, TResult returnValue, Exception exception, ref CallTargetState state);
    internal delegate void AsyncWatch<TTarget, TReturn>(TTarget instance, TReturn task, Exception exception, CallTargetState state);

    /// <summary>
    /// What EndMethod does with a method's Task when its handler has an OnAsyncMethodEnd for it:
    /// null when <typeparamref name="TReturn"/> is neither <c>Task</c> nor <c>Task&lt;T&gt;</c> or the
    /// handler has none (an optional method: its absence is not said).
    /// </summary>
    internal static class AsyncEndOf<THandler, TTarget, TReturn>
    {
        internal static readonly AsyncWatch<TTarget, TReturn> Watch;

        static AsyncEndOf()
        {
            try
            {
                var type = typeof(TReturn);
                Type result = null;
                string watcher = null;
                if (type == typeof(Task))
                {
                    result = typeof(object);
                    watcher = "WatchTask";
                }
                else if (type.IsGenericType && type.GetGenericTypeDefinition() == typeof(Task<>))
                {
                    result = type.GetGenericArguments()[0];
                    watcher = "WatchTaskOf";
                }
                else if (ValueTaskInside.Is(type))
                {
                    result = type.IsGenericType ? type.GetGenericArguments()[0] : typeof(object);
                    watcher = "WatchValueTask";
                }
                if (result == null)
                {
                    return;
                }
                var end = typeof(AsyncHandlerEnd<,,>).MakeGenericType(typeof(THandler), typeof(TTarget), result);
                var bound = end.GetMethod("IsBound", BindingFlags.Static | BindingFlags.NonPublic);
                if (bound == null || !(bool)bound.Invoke(null, null))
                {
                    return;
                }
                var method = end.GetMethod(watcher, BindingFlags.Static | BindingFlags.NonPublic);
                if (method.IsGenericMethodDefinition)
                {
                    method = method.MakeGenericMethod(type);
                }
                Watch = (AsyncWatch<TTarget, TReturn>)Delegate.CreateDelegate(typeof(AsyncWatch<TTarget, TReturn>), method, false);
            }
            catch (Exception)
            {
                Watch = null;
            }
        }
    }

    /// <summary>The handler's OnAsyncMethodEnd for one result type, and the continuation calling it.</summary>
    internal static class AsyncHandlerEnd<THandler, TTarget, TResult>
    {
        private static readonly AsyncEndByValue<TTarget, TResult> ByValue;
        private static readonly AsyncEndByRef<TTarget, TResult> ByRef;
        private static readonly Action<Task, object> OnTask = Done;

        static AsyncHandlerEnd()
        {
            var types = new[] { typeof(TTarget), typeof(TResult), typeof(Exception), typeof(CallTargetState) };
            ByValue = (AsyncEndByValue<TTarget, TResult>)Binder.Bind(typeof(THandler), "OnAsyncMethodEnd", types, typeof(AsyncEndByValue<TTarget, TResult>));
            if (ByValue == null)
            {
                ByRef = (AsyncEndByRef<TTarget, TResult>)Binder.Bind(typeof(THandler), "OnAsyncMethodEnd", types, typeof(AsyncEndByRef<TTarget, TResult>));
            }
        }

        private static bool IsBound()
        {
            return ByValue != null || ByRef != null;
        }

        /// <summary>One call waiting for its task.</summary>
        private sealed class Pending
        {
            internal readonly TTarget Instance;
            internal readonly CallTargetState State;

            internal Pending(TTarget instance, CallTargetState state)
            {
                Instance = instance;
                State = state;
            }
        }

        private static void WatchTask(TTarget instance, Task task, Exception exception, CallTargetState state)
        {
            Watch(instance, task, exception, state);
        }

        private static void WatchTaskOf(TTarget instance, Task<TResult> task, Exception exception, CallTargetState state)
        {
            Watch(instance, task, exception, state);
        }

        // A ValueTask (named by reflection: see ValueTaskInside): watched as the task it holds;
        // called at once when complete when made; not called for one holding an
        // IValueTaskSource, whose one continuation is the app's.
        private static void WatchValueTask<TValueTask>(TTarget instance, TValueTask valueTask, Exception exception, CallTargetState state)
        {
            if (exception != null)
            {
                Call(instance, default(TResult), exception, state);
                return;
            }
            object inside;
            object boxed = valueTask;
            if (!ValueTaskInside.Of(boxed, out inside))
            {
                return;
            }
            if (inside == null)
            {
                var result = ValueTaskInside.Result(boxed);
                Call(instance, result is TResult ? (TResult)result : default(TResult), null, state);
                return;
            }
            var task = inside as Task;
            if (task != null)
            {
                Watch(instance, task, null, state);
            }
        }

        private static void Watch(TTarget instance, Task task, Exception exception, CallTargetState state)
        {
            if (exception != null || task == null)
            {
                Call(instance, default(TResult), exception, state);
                return;
            }
            try
            {
                task.ContinueWith(OnTask, new Pending(instance, state), CancellationToken.None,
                    TaskContinuationOptions.ExecuteSynchronously, TaskScheduler.Default);
            }
            catch (Exception)
            {
                // The app's call goes on as written.
            }
        }

        private static void Done(Task task, object pending)
        {
            var p = (Pending)pending;
            var value = default(TResult);
            Exception exception = null;
            if (task.Status == TaskStatus.RanToCompletion)
            {
                var typed = task as Task<TResult>;
                if (typed != null)
                {
                    value = typed.Result;
                }
            }
            else if (task.IsFaulted)
            {
                var all = task.Exception;
                exception = all != null && all.InnerExceptions.Count == 1 ? all.InnerException : all;
            }
            else
            {
                exception = new TaskCanceledException(task);
            }
            Call(p.Instance, value, exception, p.State);
        }

        // Called whatever Reentry says: a task complete already runs its continuation inline, from
        // EndMethod, where Reentry is set (so that the wrapped methods ContinueWith may call run
        // without handlers). The handler's own calls to wrapped methods run without handlers.
        private static void Call(TTarget instance, TResult value, Exception exception, CallTargetState state)
        {
            var outer = Reentry.Inside;
            Reentry.Inside = true;
            try
            {
                if (ByValue != null)
                {
                    ByValue(instance, value, exception, state);
                }
                else if (ByRef != null)
                {
                    ByRef(instance, value, exception, ref state);
                }
            }
            catch (Exception e)
            {
                Log.Threw(typeof(THandler), "OnAsyncMethodEnd", e);
            }
            finally
            {
                Reentry.Inside = outer;
            }
        }
    }
}
