// Conformance scenario "dispenser" (tests/conformance/dispenser), after the runtime's
// src/tests/profiler/unittest/metadatagetdispenser.cs: the app only runs, so its modules load
// (the profiler opens each module's file through the metadata dispenser). Exits 100.
using System;

namespace ConfDispenser
{
    static class Program
    {
        static int Main()
        {
            Console.WriteLine("dispenser scenario done");
            return 100;
        }
    }
}
