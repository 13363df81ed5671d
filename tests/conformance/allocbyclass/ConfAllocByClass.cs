// Conformance scenario "allocbyclass" (tests/conformance/allocbyclass), after the runtime's
// src/tests/profiler/gc/gcskipobjectsallocatedbyclasscallback.cs: 1000 Kept objects held alive,
// then an induced GC; 300 Dropped objects left to die and 20 more Kept, then another. Exits 100.
using System;
using System.Runtime.CompilerServices;

namespace ConfAllocByClass
{
    class Kept { public int Value; }
    class Dropped { public int Value; }

    static class Program
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        static Kept[] AllocateKept(int n)
        {
            var kept = new Kept[n];
            for (int i = 0; i < n; i++)
            {
                kept[i] = new Kept { Value = i };
            }
            return kept;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int AllocateDropped(int n)
        {
            int sum = 0;
            for (int i = 0; i < n; i++)
            {
                sum += new Dropped { Value = i }.Value;
            }
            return sum;
        }

        static int Main()
        {
            Kept[] first = AllocateKept(1000);
            GC.Collect();
            int sum = AllocateDropped(300);
            Kept[] second = AllocateKept(20);
            GC.Collect();
            GC.KeepAlive(first);
            GC.KeepAlive(second);
            Console.WriteLine("allocbyclass scenario done " + sum);
            return 100;
        }
    }
}
