// The app of scripts/bench-instrument: calls a small method in a loop and prints the time and the
// bytes allocated per call, so one run can compare it unwrapped, wrapped with empty Rust handlers
// (tests/instrument-profiler, CORPROF_INSTRUMENT_BENCH) and under enter/leave hooks.
using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;

namespace InstrumentBench
{
    static class Program
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Small(int x) { return x + 1; }

        static long Run(int n)
        {
            long sum = 0;
            for (int i = 0; i < n; i++) sum += Small(i);
            return sum;
        }

        static int Main(string[] args)
        {
            int n = args.Length > 0 ? int.Parse(args[0]) : 20000000;
            // Warm up past tiering, so the loop measured runs optimized code.
            for (int r = 0; r < 4; r++) { Run(200000); System.Threading.Thread.Sleep(150); }
            long best = long.MaxValue, bytes = 0, check = 0;
            for (int r = 0; r < 5; r++)
            {
                long before = GC.GetAllocatedBytesForCurrentThread();
                var sw = Stopwatch.StartNew();
                check = Run(n);
                sw.Stop();
                bytes = GC.GetAllocatedBytesForCurrentThread() - before;
                best = Math.Min(best, sw.Elapsed.Ticks);
            }
            double ns = best * 100.0 / n; // TimeSpan ticks are 100 ns
            Console.WriteLine("ns_per_call={0:F2} bytes_per_call={1:F3} check={2}", ns, (double)bytes / n, check);
            return 0;
        }
    }
}
