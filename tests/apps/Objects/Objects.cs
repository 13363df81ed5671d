// The app of tests/runtime/objects.rs (examples/object-census, a profiler without `unsafe`).
//
// Exact counts the profiler must report: 7 ObjectsApp.Oops thrown (and caught), 1000
// ObjectsApp.Parcel allocated (four longs each: 48 bytes on x64), 3 ObjectsApp.Parcel[5] arrays
// (24 + 5 * 8 = 64 bytes each) in one Parcel[3][], and 3 induced GCs.
using System;
using System.Runtime.CompilerServices;

namespace ObjectsApp
{
    class Oops : Exception
    {
        public Oops(int n) : base("oops " + n) { }
    }

    class Parcel { public long A, B, C, D; }

    static class Program
    {
        static Parcel[][] kept = new Parcel[3][];

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Throw(int n)
        {
            throw new Oops(n);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static long Allocate()
        {
            long sum = 0;
            for (int i = 0; i < 1000; i++)
            {
                var p = new Parcel();
                p.A = i;
                sum += p.A;
                if (i % 400 == 0)
                {
                    kept[i / 400] = new Parcel[5];
                    kept[i / 400][0] = p;
                }
            }
            return sum;
        }

        static int Main()
        {
            int caught = 0;
            for (int n = 0; n < 7; n++)
            {
                try
                {
                    Throw(n);
                }
                catch (Oops)
                {
                    caught++;
                }
            }
            long sum = Allocate();
            for (int g = 0; g < 3; g++)
            {
                GC.Collect();
            }
            Console.WriteLine("Objects done " + caught + " " + sum + " " + kept.Length);
            return 0;
        }
    }
}
