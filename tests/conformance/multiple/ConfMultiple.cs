// Conformance scenario "multiple" (tests/conformance/multiple): an app that profilers load into at
// startup and attach to while it waits.
//
//   ConfMultiple <dir> <phases>
//
// Writes <dir>/ready (holding its process ID); then for each phase n = 1..<phases> waits for
// <dir>/go<n>, throws and catches one ConfMultiple.Trigger (the profilers' cue to detach) and
// writes <dir>/done<n>. Every wait is bounded (60 s, then exit 3). Exits 100.
using System;
using System.Diagnostics;
using System.IO;
using System.Runtime.CompilerServices;
using System.Threading;

namespace ConfMultiple
{
    class Trigger : Exception
    {
    }

    static class Program
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Throw()
        {
            throw new Trigger();
        }

        static bool WaitFor(string path)
        {
            var clock = Stopwatch.StartNew();
            while (!File.Exists(path))
            {
                if (clock.Elapsed.TotalSeconds > 60)
                {
                    Console.Error.WriteLine("ConfMultiple: no " + path + " after 60 s");
                    return false;
                }
                Thread.Sleep(10);
            }
            return true;
        }

        static int Main(string[] args)
        {
            string dir = args[0];
            int phases = int.Parse(args[1]);
            File.WriteAllText(Path.Combine(dir, "ready"), Process.GetCurrentProcess().Id.ToString());
            for (int phase = 1; phase <= phases; phase++)
            {
                if (!WaitFor(Path.Combine(dir, "go" + phase)))
                {
                    return 3;
                }
                try
                {
                    Throw();
                }
                catch (Trigger)
                {
                }
                File.WriteAllText(Path.Combine(dir, "done" + phase), "");
            }
            Console.WriteLine("multiple scenario done");
            return 100;
        }
    }
}
