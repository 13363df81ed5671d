// Conformance scenario "gcbasic" (tests/conformance/gcbasic), after the runtime's
// src/tests/profiler/gc/gcbasic.cs: on a worker thread, two pinned arrays (.NET 5+) and rounds of
// growing large arrays that make the GC run on its own; then exactly two induced GCs. Exits 100.
using System;
using System.Reflection;
using System.Threading;

namespace ConfGcBasic
{
    static class Program
    {
        // GC.AllocateArray<T>(int, bool pinned) exists from .NET 5; the compiler's class library
        // lacks it, so reflection finds it where the runtime has it.
        static object AllocatePinned(int length)
        {
            MethodInfo generic = typeof(GC).GetMethod("AllocateArray");
            if (generic == null)
            {
                return null;
            }
            return generic.MakeGenericMethod(typeof(int)).Invoke(null, new object[] { length, true });
        }

        static long kept;

        static void DoWork()
        {
            object pinned0 = AllocatePinned(100000);
            object pinned1 = AllocatePinned(200000);
            for (int round = 0; round < 3; round++)
            {
                int[] large = new int[1000000];
                for (int i = 0; i < 20; i++)
                {
                    large = new int[large.Length + 100000];
                }
                kept += large.Length;
            }
            GC.KeepAlive(pinned0);
            GC.KeepAlive(pinned1);
        }

        static int Main()
        {
            var worker = new Thread(DoWork);
            worker.Start();
            worker.Join();
            GC.Collect();
            GC.Collect();
            Console.WriteLine("gcbasic scenario done " + kept);
            return 100;
        }
    }
}
