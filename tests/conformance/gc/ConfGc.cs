// Conformance scenario "gc" (tests/conformance/gc): three full and one gen0 induced GC while a
// Marker (referencing a Child and, on .NET 5+, a pinned array) and another pinned array are live
// on Main's stack, then two GCs started by allocation; then a large and (on .NET 5+) a pinned
// array. Exits 100 when the process ran exactly those six GCs.
using System;
using System.Reflection;
using System.Runtime.CompilerServices;

namespace ConfGc
{
    class Child { public int Value = 7; }
    class Marker { public Child Child = new Child(); public object Pinned; }

    static class Program
    {
        // GC.AllocateArray<T>(int, bool pinned) exists from .NET 5 (the pinned object heap); the
        // compiler's class library lacks it, so reflection finds it where the runtime has it.
        static object AllocatePinned(int length)
        {
            MethodInfo generic = typeof(GC).GetMethod("AllocateArray");
            if (generic == null)
            {
                return null;
            }
            return generic.MakeGenericMethod(typeof(byte)).Invoke(null, new object[] { length, true });
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Run()
        {
            var marker = new Marker();
            // On the pinned object heap (.NET 5+) before the GCs: one referenced by the Marker,
            // one from this frame only, so the heap walk shows both an object reference to and a
            // root of a pinned-heap object (the runtime's gc.cs).
            marker.Pinned = AllocatePinned(1000);
            object rooted = AllocatePinned(1000);
            for (int i = 0; i < 3; i++)
            {
                GC.Collect();
            }
            GC.Collect(0);
            byte[] large = new byte[100000];
            object pinned = AllocatePinned(1000);
            // Two GCs the allocator starts (not induced): small arrays until the GC count has
            // risen by exactly two. The profiler must count these too. (Last: with this loop
            // before the large array, 8.0.4 raised no ObjectAllocated for that array, in each of
            // three runs, while the pinned arrays' still came; not investigated further.)
            int target = GC.CollectionCount(0) + 2;
            while (GC.CollectionCount(0) < target)
            {
                sink = new byte[1000];
            }
            int seen = marker.Child.Value + large.Length + (pinned == null ? 0 : 1);
            GC.KeepAlive(marker);
            GC.KeepAlive(rooted);
            return seen;
        }

        // Where the allocation loop's arrays go, so that the JIT keeps every allocation.
        static byte[] sink;

        // Every GC collects generation 0, so its count is the number of GCs of the process.
        const int ExpectedGcs = 6;

        static int Main()
        {
            int before = GC.CollectionCount(0);
            int seen = Run();
            int gcs = GC.CollectionCount(0);
            Console.WriteLine("gc scenario done " + seen + ", GCs before Run " + before + ", after " + gcs);
            // The profiler's count is checked against ExpectedGcs: exactly the app's GCs ran.
            return before == 0 && gcs == ExpectedGcs ? 100 : 1;
        }
    }
}
