// The app of tests/runtime/call_tree.rs: a known call tree (a loop, a helper called from two places,
// recursion, and an exception unwinding out of three methods), so that examples/call-tree's counts
// and folded stacks can be checked exactly.
using System;
using System.Runtime.CompilerServices;

namespace CallTreeApp
{
    static class Program
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Leaf(int x) { return x + 1; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Middle(int x) { return Leaf(x) + Leaf(x + 1); }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Other(int x) { return Leaf(x) * 2; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Rec(int n) { return n == 0 ? 0 : 1 + Rec(n - 1); }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Thrower()
        {
            Leaf(1);
            return Deeper();
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Deeper() { return 1 + Deepest(); }

        // The exception unwinds three frames: Deepest, Deeper, Thrower.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Deepest() { throw new InvalidOperationException("unwound"); }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Catcher()
        {
            try { return Thrower(); }
            catch (InvalidOperationException) { return -1; }
        }

        static int Main()
        {
            int sum = 0;
            for (int i = 0; i < 3; i++)
            {
                sum += Middle(i);
            }
            sum += Other(5) + Rec(3) + Catcher();
            Console.WriteLine("CallTree done " + sum);
            return 0;
        }
    }
}
