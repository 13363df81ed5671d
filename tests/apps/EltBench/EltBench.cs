// The EltBench app (scripts/bench-elt, tests/elt_reference.rs): N calls of a small method that
// is never inlined, so a profiler's enter/leave hooks run exactly N times for it.
//
//   EltBench <N>   prints "EltBench <N> checksum <sum of Leaf(i) for i < N>"
//
// Method tokens, in declaration order (mcs): Leaf 0x06000001, Run 0x06000002, Main 0x06000003.
using System;
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
            if (args.Length != 1 || !int.TryParse(args[0], out int n) || n < 0)
            {
                Console.Error.WriteLine("usage: EltBench <N>");
                return 2;
            }
            Console.WriteLine("EltBench " + n + " checksum " + Run(n));
            return 0;
        }
    }
}
