// The app of tests/runtime/instrument.rs's task tests: methods returning tasks that complete
// after an await, fault after one, complete at once, throw before returning a task, are
// cancelled, return no task, or are completed later by the app, each called once the profiler
// says (INSTRUMENT_READY names a file it creates) that its ReJIT requests are made. A Rust
// handler that ends at the tasks' completion wraps them; what the app prints is the same
// wrapped and not.

using System;
using System.Runtime.CompilerServices;
using System.Threading;
using System.Threading.Tasks;
using System.Threading.Tasks.Sources;

namespace InstrumentAsyncApp
{
    public static class Work
    {
        public static async Task<int> AfterDelay(int x)
        {
            await Task.Delay(20);
            return x + 1;
        }

        public static async Task AfterYield(string s)
        {
            await Task.Yield();
            Console.WriteLine("yielded " + s);
        }

        public static async Task<int> Faults(int x)
        {
            await Task.Yield();
            throw new InvalidOperationException("fault " + x);
        }

#pragma warning disable 1998
        public static async Task<int> AtOnce(int x)
        {
            return x * 2;
        }
#pragma warning restore 1998

        public static Task<int> ThrowsFirst(int x)
        {
            throw new ArgumentException("thrown before a task " + x);
        }

        public static async Task<int> Cancelled()
        {
            var source = new CancellationTokenSource();
            source.Cancel();
            await Task.Delay(60000, source.Token);
            return 1;
        }

        public static async Task<string> Text(string s)
        {
            await Task.Yield();
            return s + "!";
        }

        public static async Task<double> Half(double d)
        {
            await Task.Yield();
            return d / 2;
        }

        public static Task<int> NoTask()
        {
            return null;
        }

        public static int Plain(int x)
        {
            return x + 1;
        }

        // Completed by the app, after the call returned.
        public static Task<int> Later(TaskCompletionSource<int> source)
        {
            return source.Task;
        }

        // ValueTasks: holding a task (what an async method that awaited gives), complete when
        // made (a result, nothing), faulting, and holding an IValueTaskSource that takes one
        // continuation (the app's).
        public static ValueTask<int> ValueLater(int x)
        {
            return new ValueTask<int>(Inner.AfterDelay(x));
        }

        public static ValueTask<int> ValueNow(int x)
        {
            return new ValueTask<int>(x * 3);
        }

        public static ValueTask ValueYield()
        {
            return new ValueTask(Inner.AfterYield());
        }

        public static ValueTask<int> ValueFaults(int x)
        {
            return new ValueTask<int>(Inner.Faults(x));
        }

        public static ValueTask<int> ValueSource(OneContinuation source)
        {
            return new ValueTask<int>(source, 0);
        }

        // Awaits without the caller's context, which never runs what is posted to it.
        public static async Task<long> Elsewhere(long x)
        {
            await Task.Delay(5).ConfigureAwait(false);
            return x * 3;
        }
    }

    // The tasks the ValueTasks above hold (not wrapped themselves).
    public static class Inner
    {
        public static async Task<int> AfterDelay(int x)
        {
            await Task.Delay(20);
            return x + 1;
        }

        public static async Task AfterYield()
        {
            await Task.Yield();
            Console.WriteLine("yielded as a ValueTask");
        }

        public static async Task<int> Faults(int x)
        {
            await Task.Yield();
            throw new InvalidOperationException("fault " + x);
        }
    }

    // A ValueTask's source that takes one continuation, as pooled sources do, and says so if
    // anything asks for a second.
    public sealed class OneContinuation : IValueTaskSource<int>
    {
        private Action<object> continuation;
        private object continuationState;
        private int result;
        private bool done;
        public int Asked;

        public ValueTaskSourceStatus GetStatus(short token)
        {
            return done ? ValueTaskSourceStatus.Succeeded : ValueTaskSourceStatus.Pending;
        }

        public void OnCompleted(Action<object> next, object state, short token, ValueTaskSourceOnCompletedFlags flags)
        {
            Asked++;
            if (continuation != null)
            {
                throw new InvalidOperationException("a second continuation");
            }
            continuation = next;
            continuationState = state;
        }

        public int GetResult(short token)
        {
            return result;
        }

        public void Complete(int value)
        {
            result = value;
            done = true;
            var next = continuation;
            if (next != null)
            {
                next(continuationState);
            }
        }
    }

    // A context that runs nothing posted to it: code that needed it would never run.
    sealed class Stuck : SynchronizationContext
    {
        public int Posts;

        public override void Post(SendOrPostCallback d, object state)
        {
            Interlocked.Increment(ref Posts);
        }
    }

    public static class Program
    {
        static int Main()
        {
            string ready = Environment.GetEnvironmentVariable("INSTRUMENT_READY");
            if (ready != null)
            {
                var waited = System.Diagnostics.Stopwatch.StartNew();
                while (!System.IO.File.Exists(ready))
                {
                    if (waited.Elapsed.TotalSeconds > 60)
                    {
                        Console.WriteLine("the profiler never said it was ready");
                        return 2;
                    }
                    Thread.Sleep(2);
                }
            }
            Run().GetAwaiter().GetResult();
            InContext();
            return 0;
        }

        // Compiled only now, after the ReJIT requests: nothing here was inlined before.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static async Task Run()
        {
            Console.WriteLine("AfterDelay " + await Work.AfterDelay(41));
            await Work.AfterYield("once");
            try
            {
                await Work.Faults(3);
            }
            catch (InvalidOperationException e)
            {
                Console.WriteLine("caught " + e.Message);
            }
            Console.WriteLine("AtOnce " + await Work.AtOnce(21));
            try
            {
                await Work.ThrowsFirst(4);
            }
            catch (ArgumentException e)
            {
                Console.WriteLine("caught " + e.Message);
            }
            try
            {
                await Work.Cancelled();
            }
            catch (OperationCanceledException e)
            {
                Console.WriteLine("cancelled " + e.GetType().Name);
            }
            Console.WriteLine("Text " + await Work.Text("hi"));
            Console.WriteLine("Half " + await Work.Half(5));
            Console.WriteLine("NoTask " + (Work.NoTask() == null));
            Console.WriteLine("Plain " + Work.Plain(1));
            var source = new TaskCompletionSource<int>();
            var later = Work.Later(source);
            Console.WriteLine("Later returned, completed " + later.IsCompleted);
            source.SetResult(5);
            Console.WriteLine("Later " + await later);
            // ValueTask is not in CoreCLR 3.1's mscorlib facade, which this app is built against.
            if (Environment.Version.Major >= 5)
            {
                await ValueTasks();
            }
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static async Task ValueTasks()
        {
            Console.WriteLine("ValueLater " + await Work.ValueLater(41));
            Console.WriteLine("ValueNow " + await Work.ValueNow(14));
            await Work.ValueYield();
            try
            {
                await Work.ValueFaults(5);
            }
            catch (InvalidOperationException e)
            {
                Console.WriteLine("caught " + e.Message);
            }
            var one = new OneContinuation();
            var pending = Work.ValueSource(one);
            var awaited = Task.Run(async () => await pending);
            while (one.Asked == 0 && !awaited.IsCompleted)
            {
                Thread.Sleep(1);
            }
            one.Complete(9);
            Console.WriteLine("ValueSource " + await awaited + " continuations asked " + one.Asked);
        }

        // Blocking on a task under a context that never runs anything: the wrapping posts
        // nothing to it and waits for nothing of it.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static void InContext()
        {
            var stuck = new Stuck();
            var before = SynchronizationContext.Current;
            SynchronizationContext.SetSynchronizationContext(stuck);
            try
            {
                Console.WriteLine("Elsewhere " + Work.Elsewhere(14).Result + " posts " + stuck.Posts);
            }
            finally
            {
                SynchronizationContext.SetSynchronizationContext(before);
            }
        }
    }
}
