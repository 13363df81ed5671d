// Conformance scenario "notification" (tests/conformance/notification): an app that compiles a
// few methods and catches one exception, watched by a main profiler (JIT events) and a
// notification-only profiler (exception events). Exits 100.
using System;
using System.Runtime.CompilerServices;

namespace ConfNotification
{
    class Oops : Exception { }

    static class Program
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Throw() { throw new Oops(); }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Catch()
        {
            try { Throw(); }
            catch (Oops) { return 1; }
            return 0;
        }

        static int Main()
        {
            int caught = Catch();
            Console.WriteLine("notification scenario done " + caught);
            return caught == 1 ? 100 : 1;
        }
    }
}
