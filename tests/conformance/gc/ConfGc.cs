// Conformance scenario "gc" (tests/conformance/gc): three full and one gen0 induced GC while a
// Marker (referencing a Child and, on .NET 5+, a pinned array) and another pinned array are live
// on Main's stack; then a large and (on .NET 5+) a pinned array. Exits 100.
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
            int seen = marker.Child.Value + large.Length + (pinned == null ? 0 : 1);
            GC.KeepAlive(marker);
            GC.KeepAlive(rooted);
            return seen;
        }

        static int Main()
        {
            int seen = Run();
            Console.WriteLine("gc scenario done " + seen);
            return 100;
        }
    }
}
