// The app of tests/runtime/heap.rs's non-GC heap scenario: three string literals (which .NET 8
// allocates on its non-GC "frozen" heap), then one induced GC, after which tests/heap-profiler
// looks for the literals among the runtime's non-GC objects.
using System;

namespace NonGcHeapApp
{
    static class Program
    {
        static int Main()
        {
            string[] literals = { "corprof-nongc-alpha", "corprof-nongc-beta", "corprof-nongc-gamma" };
            foreach (string s in literals)
            {
                Console.WriteLine(s);
            }
            GC.Collect();
            Console.WriteLine("nongc app done");
            return 0;
        }
    }
}
