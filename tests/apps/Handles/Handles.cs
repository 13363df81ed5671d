// The app of tests/runtime/heap.rs's handle scenario (tests/heap-profiler creates the handles).
//
// One instance each of WeakTarget, StrongTarget and PinnedTarget is allocated among fillers;
// the profiler wraps them in a weak, a strong and a pinned handle as they are allocated. The app
// keeps only the WeakTarget (until after the first GC) and every other filler (so that compacting
// GCs have survivors to move), then runs five blocking, compacting gen2 GCs. The profiler checks
// what each handle holds after every one.
using System;
using System.Runtime.CompilerServices;

namespace HandlesApp
{
    class WeakTarget { public int Value = 1; }
    class StrongTarget { public int Value = 2; }
    class PinnedTarget { public int Value = 3; }
    class Filler { public long A, B, C, D; }

    static class Program
    {
        static WeakTarget keep;
        static Filler[] survivors = new Filler[4000];

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Fill(int from, int count)
        {
            for (int i = 0; i < count; i++)
            {
                var f = new Filler();
                f.A = from + i;
                if (i % 2 == 0)
                {
                    survivors[(from + i) / 2] = f;
                }
            }
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Allocate()
        {
            Fill(0, 4000);
            keep = new WeakTarget();
            new StrongTarget();
            new PinnedTarget();
            Fill(4000, 4000);
        }

        static void Collect()
        {
            GC.Collect(2, GCCollectionMode.Forced, true, true);
            GC.WaitForPendingFinalizers();
        }

        static int Main()
        {
            Allocate();
            Collect();          // 1: the weak target is still referenced
            keep = null;
            Collect();          // 2: ... and now is not
            Collect();          // 3
            Collect();          // 4: the profiler destroys its handles afterwards
            Collect();          // 5
            long sum = 0;
            foreach (var f in survivors)
            {
                sum += f.A;
            }
            Console.WriteLine("handles app done " + sum);
            return 0;
        }
    }
}
