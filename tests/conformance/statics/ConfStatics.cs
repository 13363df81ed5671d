// Conformance scenario "statics" (tests/conformance/statics): a class with an AppDomain static
// long, a string and a thread static, set by Main before it calls Ready(), whose JIT
// compilation is the profiler's cue to read them from a thread of its own. Exits 100.
using System;
using System.Runtime.CompilerServices;

namespace ConfStatics
{
    class Holder
    {
        public static long Counter;
        public static string Name;
        [ThreadStatic] public static int PerThread;
    }

    static class Program
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Ready() { }

        static int Main()
        {
            Holder.Counter = 0x123456789AL;
            Holder.Name = "conf-statics";
            Holder.PerThread = 4242;
            Ready();
            Console.WriteLine("statics scenario done " + Holder.Counter + Holder.Name + Holder.PerThread);
            return 100;
        }
    }
}
