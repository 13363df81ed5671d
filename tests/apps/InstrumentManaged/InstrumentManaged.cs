// The app of tests/runtime/instrument.rs's managed-handler tests: methods of every shape the
// CallTarget contract passes (static and instance, a struct's `this`, 0 to 6 arguments, `ref`
// arguments, void and values, a generic type, an exception), each called once the profiler says
// (INSTRUMENT_READY names a file it creates) that its ReJIT requests are made. What it prints is
// the same wrapped and not, but for Changed.Answer, whose handler replaces the value.

using System;
using System.Runtime.CompilerServices;
using System.Threading;
using System.Threading.Tasks;

namespace InstrumentManagedApp
{
    public class Target
    {
        private readonly int factor;

        public Target(int factor)
        {
            this.factor = factor;
        }

        public static int Add(int a, int b)
        {
            return a + b;
        }

        public static void Nothing()
        {
            Console.WriteLine("nothing");
        }

        public int Scale(int x)
        {
            return factor * x;
        }

        public static string Greet(string name)
        {
            return "hello " + name;
        }

        public static long Six(int a, long b, short c, byte d, double e, string f)
        {
            return a + b + c + d + (long)e + f.Length;
        }

        public static void Swap(ref int a, ref int b)
        {
            int t = a;
            a = b;
            b = t;
        }

        public static int Throws(int x)
        {
            throw new InvalidOperationException("thrown " + x);
        }

        public override string ToString()
        {
            return "Target(" + factor + ")";
        }
    }

    public struct Point
    {
        public int X;
        public int Y;

        public int Sum()
        {
            return X + Y;
        }

        public override string ToString()
        {
            return "(" + X + "," + Y + ")";
        }
    }

    public class Box<T>
    {
        private readonly T value;

        public Box(T value)
        {
            this.value = value;
        }

        public T Get()
        {
            return value;
        }
    }

    public static class Faulty
    {
        public static int Add(int a, int b)
        {
            return a + b;
        }
    }

    public static class Partial
    {
        public static int Twice(int x)
        {
            return 2 * x;
        }
    }

    public static class Changed
    {
        public static int Answer()
        {
            return 7;
        }
    }

    public static class Gone
    {
        public static int Run()
        {
            return 5;
        }
    }

    // Task-returning methods, for a handler's OnAsyncMethodEnd: completing later (a value, none,
    // a fault), complete at the return (cancelled, a value), null, and a throw before any task.
    public static class Async
    {
        public static async Task<int> Later(int x)
        {
            await Task.Yield();
            return x * 2;
        }

        public static async Task Plain()
        {
            await Task.Yield();
        }

        public static async Task<int> Fails(int x)
        {
            await Task.Yield();
            throw new InvalidOperationException("async fault " + x);
        }

        public static Task<int> Cancelled()
        {
            return Task.FromCanceled<int>(new CancellationToken(true));
        }

        public static Task<int> Done()
        {
            return Task.FromResult(5);
        }

        public static Task<int> Nothing()
        {
            return null;
        }

        public static Task<int> Throws()
        {
            throw new ArgumentException("before a task");
        }
    }

    // ValueTasks, on .NET 5+ only (CoreCLR 3.1's mscorlib facade, which this app is built
    // against, does not forward them): holding a task, and complete when made.
    public static class AsyncValue
    {
        public static ValueTask<int> Later(int x)
        {
            return new ValueTask<int>(Inner.Twice(x));
        }

        public static ValueTask<int> Now()
        {
            return new ValueTask<int>(6);
        }
    }

    public static class Inner
    {
        public static async Task<int> Twice(int x)
        {
            await Task.Yield();
            return 2 * x;
        }
    }

    // A handler whose OnAsyncMethodEnd throws, for a task complete at the return (its
    // continuation runs at once, on the caller's thread).
    public static class AsyncFaulty
    {
        public static Task<int> Now()
        {
            return Task.FromResult(1);
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
                    System.Threading.Thread.Sleep(2);
                }
            }
            Run();
            if (ready != null && Environment.GetEnvironmentVariable("INSTRUMENT_ONLY") == null)
            {
                WaitForAsyncEnds();
            }
            return 0;
        }

        static void RunAsync()
        {
            Console.WriteLine(Async.Later(21).Result);
            Async.Plain().Wait();
            Console.WriteLine("plain");
            try
            {
                Async.Fails(3).Wait();
            }
            catch (AggregateException e)
            {
                Console.WriteLine("async caught " + e.InnerException.Message);
            }
            try
            {
                Async.Cancelled().Wait();
            }
            catch (AggregateException e)
            {
                Console.WriteLine("cancelled " + (e.InnerException is TaskCanceledException));
            }
            Console.WriteLine(Async.Done().Result);
            Console.WriteLine(Async.Nothing() == null);
            try
            {
                Async.Throws();
            }
            catch (ArgumentException e)
            {
                Console.WriteLine("caught " + e.Message);
            }
            Console.WriteLine(AsyncFaulty.Now().Result);
            if (Environment.Version.Major >= 5)
            {
                RunValueTasks();
            }
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void RunValueTasks()
        {
            Console.WriteLine(AsyncValue.Later(20).Result);
            Console.WriteLine(AsyncValue.Now().Result);
        }

        // Profiled, the handler counts its OnAsyncMethodEnd calls in the app domain's data: the
        // app waits for all of them (seven, nine with the ValueTasks): a continuation may run
        // after the app's own wait returned.
        static void WaitForAsyncEnds()
        {
            int all = Environment.Version.Major >= 5 ? 9 : 7;
            var waited = System.Diagnostics.Stopwatch.StartNew();
            while (!(AppDomain.CurrentDomain.GetData("corprof-test-async-ends") is int n && n >= all))
            {
                if (waited.Elapsed.TotalSeconds > 60)
                {
                    Console.WriteLine("the async ends were not all seen");
                    return;
                }
                Thread.Sleep(2);
            }
        }

        // Compiled only now, after the ReJIT requests: nothing here was inlined before.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Run()
        {
            Console.WriteLine(Target.Add(3, 4));
            Target.Nothing();
            Console.WriteLine(new Target(5).Scale(3));
            Console.WriteLine(new Point { X = 2, Y = 3 }.Sum());
            Console.WriteLine(Target.Greet("you"));
            Console.WriteLine(Target.Six(1, 2, 3, 4, 5.5, "six"));
            int a = 1, b = 2;
            Target.Swap(ref a, ref b);
            Console.WriteLine(a + " " + b);
            try
            {
                Target.Throws(9);
            }
            catch (InvalidOperationException e)
            {
                Console.WriteLine("caught " + e.Message);
            }
            Console.WriteLine(new Box<int>(11).Get());
            Console.WriteLine(new Box<string>("boxed").Get());
            Console.WriteLine(Faulty.Add(1, 2));
            Console.WriteLine(Partial.Twice(21));
            Console.WriteLine(Partial.Twice(4));
            Console.WriteLine(Changed.Answer());
            Console.WriteLine(Gone.Run());
            RunAsync();
            Console.WriteLine(Convert.ToBase64String(new byte[] { 1, 2, 3 }));
        }
    }
}
