// The app of corprof-record/tests/record_cli.rs: two named threads spending time 2:1 in two known
// methods, for `corprof record --mode cpu`.
//
//   RecordCpu [exit-code] [run-ms] [go|wait] [time|work]
//
// Thread "Heavy" burns CPU in RecordCpuApp.Work::Heavy, thread "Light" in RecordCpuApp.Work::Light.
// - `time` (default): Heavy spins for run-ms (default 1500) of wall time; over the same time Light
//   alternates 100 ms spinning and 100 ms asleep in RecordCpuApp.Work::Rest: Heavy:Light = 2:1 by
//   the wall clock, whatever else the machine runs.
// - `work`: the threads take turns (the other waits), Heavy burning 200 ms-worth of loops then
//   sleeping 100 ms (still in Work::Heavy), Light burning 100 ms-worth (calibrated in CPU time on
//   this machine), for about run-ms: Heavy:Light = 2:1 in CPU time (but 3:1 by the wall clock),
//   each burning alone so that neither slows the other.
// Tiered compilation is off (RecordCpu.runtimeconfig.json): code compiled once, optimized, costs
// the same in the first round as in the last.
// With `wait`, prints `ready <pid>` and waits for a line on stdin before starting (an attach
// comes in between). Prints `cpu-ms Heavy <ms> Light <ms>`, the CPU time each thread spent in
// its method by its own CPU clock, then `RecordCpu done`, and exits with exit-code (default 0).
using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Threading;

namespace RecordCpuApp
{
    static class Work
    {
        static volatile int sink;

        // CPU nanoseconds each spent in Heavy and Light (the threads' own CPU clocks).
        public static long HeavyNs, LightNs;

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void Heavy(long amount, bool byWork, int napMs)
        {
            long start = ThreadCpuNs();
            Burn(amount, byWork);
            if (napMs > 0) Thread.Sleep(napMs);
            HeavyNs += ThreadCpuNs() - start;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void Light(long amount, bool byWork)
        {
            long start = ThreadCpuNs();
            Burn(amount, byWork);
            LightNs += ThreadCpuNs() - start;
        }

        struct Timespec { public long Sec; public long Nsec; }

        [DllImport("libc", EntryPoint = "clock_gettime")]
        static extern int ClockGettime(int clock, out Timespec time);

        // CLOCK_THREAD_CPUTIME_ID: this thread's CPU time.
        static long ThreadCpuNs()
        {
            Timespec t;
            ClockGettime(3, out t);
            return t.Sec * 1000000000L + t.Nsec;
        }

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

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void Loop()
        {
            for (int i = 0; i < 10000; i++) sink += i;
        }

        // Loops per millisecond of CPU time on this machine (measured by the process's CPU time
        // while only this thread works, so other load on the machine does not shrink it).
        public static long Rate()
        {
            var process = Process.GetCurrentProcess();
            var start = process.TotalProcessorTime;
            long loops = 0;
            double usedMs = 0;
            while (usedMs < 200)
            {
                for (int n = 0; n < 100; n++) Loop();
                loops += 100;
                process.Refresh();
                usedMs = (process.TotalProcessorTime - start).TotalMilliseconds;
            }
            return Math.Max(1, (long)(loops / usedMs));
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
            Thread heavy, light;
            if (byWork)
            {
                // Taking turns: each burns CPU alone, so neither runs slower for the other's sake.
                var heavyTurn = new AutoResetEvent(true);
                var lightTurn = new AutoResetEvent(false);
                long rounds = Math.Max(1, runMs / (4 * Chunk));
                heavy = new Thread(() =>
                {
                    Thread.CurrentThread.Name = "Heavy";
                    for (long r = 0; r < rounds; r++)
                    {
                        heavyTurn.WaitOne();
                        Work.Heavy(2 * Chunk * rate, true, Chunk);
                        lightTurn.Set();
                    }
                });
                light = new Thread(() =>
                {
                    Thread.CurrentThread.Name = "Light";
                    for (long r = 0; r < rounds; r++)
                    {
                        lightTurn.WaitOne();
                        Work.Light(Chunk * rate, true);
                        heavyTurn.Set();
                    }
                });
            }
            else
            {
                heavy = new Thread(() =>
                {
                    Thread.CurrentThread.Name = "Heavy";
                    Work.Heavy(runMs, false, 0);
                });
                light = new Thread(() =>
                {
                    Thread.CurrentThread.Name = "Light";
                    for (long done = 0; done < runMs; done += 2 * Chunk)
                    {
                        Work.Light(Chunk, false);
                        Work.Rest(Chunk);
                    }
                });
            }
            heavy.Start();
            light.Start();
            heavy.Join();
            light.Join();
            Console.WriteLine("cpu-ms Heavy " + Work.HeavyNs / 1000000 + " Light " + Work.LightNs / 1000000);
            Console.WriteLine("RecordCpu done");
            return exitCode;
        }
    }
}
