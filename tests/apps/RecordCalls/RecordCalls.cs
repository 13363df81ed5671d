// The app of tests/runtime/record_calls.rs: a known call tree (a loop, a helper called from two places,
// recursion, a second thread, and an exception that unwinds through two hooked frames to a
// catcher), so the calls mode's counts per call path can be checked exactly. Prints on stderr how
// long each Spin call took by the app's own Stopwatch (µs), to check the times against.
using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Threading;

namespace RecordCallsApp
{
    static class Program
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Leaf(int x) { return x + 1; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Middle(int x) { return Leaf(x) + Leaf(x + 1); }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Rec(int n) { return n == 0 ? 0 : 1 + Rec(n - 1); }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Thrower()
        {
            Leaf(1);
            throw new InvalidOperationException("unwound");
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Passer() { return Thrower() + 1; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Catcher()
        {
            try { return Passer(); }
            catch (InvalidOperationException) { return Leaf(-1); }
        }

        // The Spin calls' durations by the app's clock, main thread's and worker's.
        static long mainSpinUs, workerSpinUs;

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Spin(int ms, out long us)
        {
            var watch = Stopwatch.StartNew();
            int n = 0;
            while (watch.ElapsedMilliseconds < ms) n++;
            us = watch.ElapsedTicks * 1000000 / Stopwatch.Frequency;
            return n > 0 ? 1 : 0;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Worker() { Leaf(Spin(20, out workerSpinUs)); }

        static int Main()
        {
            // Stopwatch's first use loads and initializes it: not inside a timed Spin.
            Stopwatch.StartNew().Stop();
            int sum = 0;
            for (int i = 0; i < 5; i++) sum += Middle(i);
            sum += Rec(3);
            for (int i = 0; i < 2; i++) sum += Catcher();
            var t = new Thread(Worker);
            t.Start();
            t.Join();
            sum += Spin(30, out mainSpinUs);
            Console.WriteLine("RecordCalls done " + sum);
            Console.Error.WriteLine("RecordCalls spin " + mainSpinUs + " " + workerSpinUs);
            return 0;
        }
    }
}
