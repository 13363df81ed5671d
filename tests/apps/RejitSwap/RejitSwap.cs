// The app of tests/runtime/rejit.rs and examples/rejit-swap: it calls Greeting, asks the profiler to
// swap it (a P/Invoke into the profiler's own library, found on LD_LIBRARY_PATH), calls it
// again, asks for the revert, and calls it once more. Each call prints what Greeting returned.
using System;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;

namespace RejitSwapApp
{
    static class Program
    {
        [DllImport("librejit_swap.so")]
        static extern int rejit_swap_request();

        [DllImport("librejit_swap.so")]
        static extern int rejit_swap_revert();

        // Not inlined: ReJIT replaces this method's code, which a caller that inlined it would
        // not run.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static string Greeting()
        {
            return "original greeting";
        }

        static int Main()
        {
            Console.WriteLine("before: " + Greeting());
            Console.WriteLine("request: 0x" + rejit_swap_request().ToString("X8"));
            Console.WriteLine("swapped: " + Greeting());
            Console.WriteLine("swapped again: " + Greeting());
            Console.WriteLine("revert: 0x" + rejit_swap_revert().ToString("X8"));
            Console.WriteLine("reverted: " + Greeting());
            return 0;
        }
    }
}
