// The app of corprof-record/tests/record_signals.rs: runs until it is stopped (a signal, or a
// line on stdin), spending its time in `Work::Spin` and allocating in `Work::Allocate`, and prints
// `ready <pid>` once both have run for 300 ms. Arguments: `cancel`: a Console.CancelKeyPress handler
// cancels every Ctrl-C (prints `cancelled`), so only a line on stdin or another signal ends it;
// `exit N`: a line on stdin ends it with status N (default 0).
using System;
using System.Runtime.CompilerServices;
using System.Threading;

namespace RecordRunApp
{
    static class Work
    {
        // Where the objects go, so the JIT cannot drop an allocation.
        static object sink;
        public static long total;

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void Spin(int n)
        {
            long x = 0;
            for (int i = 0; i < n; i++) x += (long)i * i % 7;
            total += x;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void Allocate(int n)
        {
            for (int i = 0; i < n; i++) sink = new byte[200];
        }
    }

    static class Program
    {
        static volatile bool stop;

        static int Main(string[] args)
        {
            int status = 0;
            for (int i = 0; i < args.Length; i++)
            {
                if (args[i] == "cancel")
                {
                    Console.CancelKeyPress += (s, e) => { Console.WriteLine("cancelled"); e.Cancel = true; };
                }
                else if (args[i] == "exit" && i + 1 < args.Length)
                {
                    status = int.Parse(args[++i]);
                }
            }
            var stdin = new Thread(() => { Console.ReadLine(); stop = true; });
            stdin.IsBackground = true;
            stdin.Start();
            // A recording stopped at `ready` holds both methods many times over: 300 ms of
            // 10 ms samples, and megabytes of allocations at one sample per 100 KB.
            var clock = System.Diagnostics.Stopwatch.StartNew();
            while (clock.ElapsedMilliseconds < 300)
            {
                Work.Spin(200000);
                Work.Allocate(500);
            }
            Console.WriteLine("ready " + System.Diagnostics.Process.GetCurrentProcess().Id);
            while (!stop)
            {
                Work.Spin(200000);
                Work.Allocate(500);
            }
            Console.WriteLine("RecordRun done");
            return status;
        }
    }
}
