// The app of scripts/bench-record: a fixed amount of work on N threads, timed by the app itself,
// so the profiled and the unprofiled runs compare the work alone (start-up and exit excluded).
//
//   RecordBench <threads> <rounds> cpu|alloc [busy]
//   RecordBench <threads> <rounds> objects <bytes> [wait]
//
// cpu: each thread runs `rounds` rounds of arithmetic through a few small methods (calls the
// profiler's stack walks must go through); alloc: each round also allocates short-lived arrays
// and strings, ~2 KB per round. With `busy` (default: all threads), only that many threads work;
// the others wait, blocked, until the work is done (a server's idle pool threads: the profiler
// still walks them each tick). objects: each round allocates one object of `bytes` bytes on x64,
// header included, and nothing else (24: an `object`, the smallest; more: a byte array, rounded
// up to 8); with `wait`, the app prints `ready <pid>` and waits for a line on stdin before the
// work (a tracing session is started in between). Prints `elapsed-ms <ms>` (the work, from all
// threads started to all done) and exits 0.
using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Threading;

namespace RecordBenchApp
{
    static class Work
    {
        // Where allocations go, so the JIT cannot drop them.
        [ThreadStatic] public static object Sink;

        [MethodImpl(MethodImplOptions.NoInlining)]
        static long Mix(long x, int i)
        {
            return (x * 31 + i) ^ (x >> 7);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static long Round(long x)
        {
            for (int i = 0; i < 2000; i++) x = Mix(x, i);
            return x;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Allocate(long x)
        {
            for (int i = 0; i < 8; i++) Sink = new byte[200 + (int)(x & 63)];
            Sink = x.ToString();
        }

        // One object of `bytes` bytes per round, nothing else.
        public static long Objects(int rounds, int bytes)
        {
            if (bytes <= 24)
            {
                for (int r = 0; r < rounds; r++) Sink = new object();
            }
            else
            {
                int length = bytes - 24;
                for (int r = 0; r < rounds; r++) Sink = new byte[length];
            }
            return rounds;
        }

        public static long Run(int rounds, bool alloc)
        {
            long x = 1;
            for (int r = 0; r < rounds; r++)
            {
                x = Round(x);
                if (alloc) Allocate(x);
            }
            return x;
        }
    }

    static class Program
    {
        static int Main(string[] args)
        {
            int threads = int.Parse(args[0]);
            int rounds = int.Parse(args[1]);
            bool alloc = args[2] == "alloc";
            bool objects = args[2] == "objects";
            int bytes = objects ? int.Parse(args[3]) : 0;
            int busy = !objects && args.Length > 3 ? int.Parse(args[3]) : threads;
            if (objects && args.Length > 4 && args[4] == "wait")
            {
                Console.WriteLine("ready " + Process.GetCurrentProcess().Id);
                Console.ReadLine();
            }
            var workers = new Thread[busy];
            var idlers = new Thread[threads - busy];
            long total = 0;
            var start = new ManualResetEvent(false);
            var done = new ManualResetEvent(false);
            for (int t = 0; t < busy; t++)
            {
                workers[t] = new Thread(() =>
                {
                    start.WaitOne();
                    Interlocked.Add(ref total, objects ? Work.Objects(rounds, bytes) : Work.Run(rounds, alloc));
                });
                workers[t].Name = "Worker" + t;
                workers[t].Start();
            }
            for (int t = 0; t < idlers.Length; t++)
            {
                idlers[t] = new Thread(() => done.WaitOne());
                idlers[t].Name = "Idle" + t;
                idlers[t].Start();
            }
            var watch = Stopwatch.StartNew();
            start.Set();
            foreach (var w in workers) w.Join();
            watch.Stop();
            done.Set();
            foreach (var i in idlers) i.Join();
            GC.KeepAlive(total);
            Console.WriteLine("elapsed-ms " + watch.Elapsed.TotalMilliseconds.ToString("F1"));
            return 0;
        }
    }
}
