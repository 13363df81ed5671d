// The app of tests/runtime/attach.rs: a process a profiler attaches to while it runs.
//
//   Waiter <dir> <phases>
//
// Writes <dir>/ready (holding its process ID), then for each phase n = 1..<phases> waits for the
// test to create <dir>/go<n>, does some work that raises profiler callbacks (JIT-compiles methods
// it never ran before, loads a class, starts a thread, waits for a task completed on the thread
// pool, throws and catches an exception, collects the heap) and writes <dir>/done<n>. Prints `Waiter done` and exits 0. Every wait is bounded:
// without its file after 60 s the app says so on stderr and exits 3.
using System;
using System.Diagnostics;
using System.IO;
using System.Runtime.CompilerServices;
using System.Threading;
using System.Threading.Tasks;

namespace WaiterApp
{
    class PhaseError : Exception
    {
        public PhaseError(string message) : base(message) { }
    }

    // One fresh generic instantiation per phase: each phase JIT-compiles and loads new code.
    class Box<T>
    {
        public T Value;

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static Box<T> Of(T value) { return new Box<T> { Value = value }; }
    }

    static class Program
    {
        const int WaitSeconds = 60;

        static int Main(string[] args)
        {
            if (args.Length != 2)
            {
                Console.Error.WriteLine("usage: Waiter <dir> <phases>");
                return 2;
            }
            string dir = args[0];
            int phases = int.Parse(args[1]);
            File.WriteAllText(Path.Combine(dir, "ready"), Process.GetCurrentProcess().Id.ToString());
            for (int phase = 1; phase <= phases; phase++)
            {
                string go = Path.Combine(dir, "go" + phase);
                if (!WaitFor(go))
                {
                    Console.Error.WriteLine("Waiter: no " + go + " after " + WaitSeconds + " s");
                    return 3;
                }
                Work(phase);
                File.WriteAllText(Path.Combine(dir, "done" + phase), "");
            }
            Console.WriteLine("Waiter done");
            return 0;
        }

        static bool WaitFor(string path)
        {
            var clock = Stopwatch.StartNew();
            while (!File.Exists(path))
            {
                if (clock.Elapsed.TotalSeconds > WaitSeconds)
                {
                    return false;
                }
                Thread.Sleep(10);
            }
            return true;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Work(int phase)
        {
            long sum = 0;
            switch (phase % 3)
            {
                case 1: sum += Box<int>.Of(phase).Value; break;
                case 2: sum += Box<long>.Of(phase).Value; break;
                default: sum += Box<double>.Of(phase).Value > 0 ? 1 : 0; break;
            }
            sum += Twice(phase).Result;
            var worker = new Thread(() => { Interlocked.Add(ref sum, Allocate(phase)); });
            worker.Start();
            worker.Join();
            try
            {
                throw new PhaseError("phase " + phase);
            }
            catch (PhaseError e)
            {
                sum += e.Message.Length;
            }
            GC.Collect();
            GC.WaitForPendingFinalizers();
            Console.WriteLine("phase " + phase + " " + (sum > 0 ? "ok" : "empty"));
        }

        // Completes on the thread pool, after its caller has started waiting.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static async Task<int> Twice(int phase)
        {
            await Task.Yield();
            return 2 * phase;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static long Allocate(int phase)
        {
            long total = 0;
            for (int i = 0; i < 1000; i++)
            {
                total += new int[16 + phase].Length;
            }
            return total;
        }
    }
}
