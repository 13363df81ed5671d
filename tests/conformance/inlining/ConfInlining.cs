// Conformance scenario "inlining" (tests/conformance/inlining): Caller calls two tiny methods
// marked for aggressive inlining; the profiler refuses to inline Refused and lets Allowed be
// inlined. The test turns tiered compilation off, so Caller is optimized (and inlines) on its
// first compile. Exits 100.
using System;
using System.Runtime.CompilerServices;

namespace ConfInlining
{
    static class Program
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        static int Refused(int x) { return x + 1; }

        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        static int Allowed(int x) { return x * 2; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Caller(int x) { return Refused(x) + Allowed(x); }

        static int Main()
        {
            int result = Caller(20);
            Console.WriteLine("inlining scenario done " + result);
            return result == 61 ? 100 : 1;
        }
    }
}
