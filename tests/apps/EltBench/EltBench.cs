// The EltBench app (scripts/bench-elt, tests/runtime/elt_reference.rs): N calls of a small method that
// is never inlined, so a profiler's enter/leave hooks run exactly N times for it.
//
//   EltBench <N>            prints "EltBench <N> checksum <sum of Leaf(i) for i < N>"
//   EltBench <N> <ROUNDS>   runs the N calls ROUNDS times (hooks then run N * ROUNDS times) and
//                           also writes "EltBench best <ns> ns per call" to stderr: the fastest
//                           round's time per call, measured inside the process, so that start-up,
//                           JIT and shutdown are not in it
//
// Method tokens, in declaration order (mcs): Leaf 0x06000001, Run 0x06000002, Main 0x06000003.
using System;
using System.Diagnostics;
using System.Globalization;
using System.Runtime.CompilerServices;

namespace EltBenchApp
{
    static class Program
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Leaf(int x)
        {
            return x ^ (x >> 3);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static long Run(int n)
        {
            long sum = 0;
            for (int i = 0; i < n; i++)
            {
                sum += Leaf(i);
            }
            return sum;
        }

        static int Main(string[] args)
        {
            int n = 0, rounds = 1;
            if (args.Length < 1 || args.Length > 2 || !int.TryParse(args[0], out n) || n < 0
                || (args.Length == 2 && (!int.TryParse(args[1], out rounds) || rounds < 1)))
            {
                Console.Error.WriteLine("usage: EltBench <N> [ROUNDS]");
                return 2;
            }
            long checksum = 0;
            double best = double.MaxValue;
            for (int round = 0; round < rounds; round++)
            {
                Stopwatch watch = Stopwatch.StartNew();
                checksum = Run(n);
                watch.Stop();
                best = Math.Min(best, watch.Elapsed.TotalMilliseconds * 1e6 / Math.Max(n, 1));
            }
            Console.WriteLine("EltBench " + n + " checksum " + checksum);
            if (args.Length == 2)
            {
                Console.Error.WriteLine("EltBench best " + best.ToString("F3", CultureInfo.InvariantCulture) + " ns per call");
            }
            return 0;
        }
    }
}
