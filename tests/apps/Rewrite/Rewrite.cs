// The app of tests/runtime/rewrite.rs: tests/rewrite-profiler rewrites two of its methods when they are
// JIT-compiled. `Answer` returns 41 as written and 42 as rewritten; `Work` (a loop around a
// try/catch) gets a call to Console.WriteLine inserted before its first instruction, and its
// results prove that the original loop and handler still run: Work(7) = 1402, Work(3) = 101.
using System;
using System.Runtime.CompilerServices;

namespace RewriteApp
{
    static class Program
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Answer()
        {
            return 41;
        }

        // sum of the i in [0, n) that are not 2 mod 3, times 100, plus how many were (each
        // one throws and is caught).
        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Work(int n)
        {
            int sum = 0;
            int caught = 0;
            for (int i = 0; i < n; i++)
            {
                try
                {
                    if (i % 3 == 2)
                    {
                        throw new InvalidOperationException("every third");
                    }
                    sum += i;
                }
                catch (InvalidOperationException)
                {
                    caught++;
                }
            }
            return sum * 100 + caught;
        }

        static int Main()
        {
            Console.WriteLine("Answer " + Answer());
            Console.WriteLine("Work " + Work(7));
            Console.WriteLine("Work " + Work(3));
            return 0;
        }
    }
}
