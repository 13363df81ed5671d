// The app of corprof-record/tests/record_cli.rs: two named threads spending time 2:1 in two known
// methods, for `corprof record --mode cpu`.
//
//   RecordCpu [exit-code] [run-ms] [go|wait] [time|work]
//
// Thread "Heavy" burns CPU in RecordCpuApp.Work::Heavy; thread "Light" alternates burning in
// RecordCpuApp.Work::Light and sleeping 100 ms in RecordCpuApp.Work::Rest.
// - `time` (default): Heavy spins for run-ms (default 1500) of wall time, Light 100 ms at a time
//   over the same run: Heavy:Light = 2:1 by the wall clock, whatever else the machine runs.
// - `work`: the same shape in fixed work (loops calibrated to about run-ms on this machine): Light
//   does half of Heavy's loops, so Heavy:Light = 2:1 in CPU time, whatever else the machine runs.
// With `wait`, prints `ready <pid>` and waits for a line on stdin before starting (an attach
// comes in between). Prints `RecordCpu done` and exits with exit-code (default 0).
using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Threading;

namespace RecordCpuApp
{
    static class Work
    {
        static volatile int sink;

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void Heavy(long amount, bool byWork) { Burn(amount, byWork); }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void Light(long amount, bool byWork) { Burn(amount, byWork); }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void Rest(int ms) { Thread.Sleep(ms); }

        // `amount` loops, or loops for `amount` milliseconds.
        static void Burn(long amount, bool byWork)
        {
            if (byWork)
            {
                for (long n = 0; n < amount; n++) Loop();
                return;
            }
            var watch = Stopwatch.StartNew();
            while (watch.ElapsedMilliseconds < amount) Loop();
        }

        public static void Loop()
        {
            for (int i = 0; i < 10000; i++) sink += i;
        }

        // Loops per millisecond on this machine, now.
        public static long Rate()
        {
            var watch = Stopwatch.StartNew();
            long loops = 0;
            while (watch.ElapsedMilliseconds < 50) { Loop(); loops++; }
            return Math.Max(1, loops * 1000 / Math.Max(1, (long)watch.Elapsed.TotalMilliseconds * 1000));
        }
    }

    static class Program
    {
        const int Chunk = 100;

        static int Main(string[] args)
        {
            int exitCode = args.Length > 0 ? int.Parse(args[0]) : 0;
            long runMs = args.Length > 1 ? long.Parse(args[1]) : 1500;
            bool wait = args.Length > 2 && args[2] == "wait";
            bool byWork = args.Length > 3 && args[3] == "work";
            long rate = byWork ? Work.Rate() : 0;
            if (wait)
            {
                Console.WriteLine("ready " + Process.GetCurrentProcess().Id);
                Console.Out.Flush();
                Console.ReadLine();
            }
            var heavy = new Thread(() =>
            {
                Thread.CurrentThread.Name = "Heavy";
                Work.Heavy(byWork ? rate * runMs : runMs, byWork);
            });
            var light = new Thread(() =>
            {
                Thread.CurrentThread.Name = "Light";
                for (long done = 0; done < runMs; done += 2 * Chunk)
                {
                    Work.Light(byWork ? rate * Chunk : Chunk, byWork);
                    Work.Rest(Chunk);
                }
            });
            heavy.Start();
            light.Start();
            heavy.Join();
            light.Join();
            Console.WriteLine("RecordCpu done");
            return exitCode;
        }
    }
}
