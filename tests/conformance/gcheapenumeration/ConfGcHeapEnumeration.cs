// Conformance scenario "gcheapenumeration" (tests/conformance/gcheapenumeration), after the
// runtime's src/tests/profiler/gcheapenumeration/gcheapenumeration.cs: the runtime test's
// profiler walks the heap through ICorProfilerInfo15; here the profiler walks it both ways from
// its own thread while this app's Main is being JIT-compiled, so the app just allocates and
// exits 100.
using System;

namespace ConfGcHeapEnumeration
{
    static class Program
    {
        static int Main()
        {
            object[] kept = new object[16];
            for (int i = 0; i < kept.Length; i++)
            {
                kept[i] = new object();
            }
            GC.Collect();
            GC.KeepAlive(kept);
            return 100;
        }
    }
}
