// The app of corprof-record/tests/record_cli.rs's attacks on the signal sampler: each mode makes
// one situation a per-thread signal can land in at its worst, with an output that depends on
// nothing but the arguments (lines starting `measured ` excepted), so a profiled run can be
// compared with an unprofiled one.
//
//   SignalAttacks exits [threads]     threads (default 2000) that start, spin a little and end,
//                                     8 at a time: signals are pending as they exit
//   SignalAttacks faults [rounds]     4 threads throwing NullReferenceException and
//                                     DivideByZeroException (the runtime's SIGSEGV and SIGFPE
//                                     handlers), 2 threads in loops with no call (a GC must
//                                     interrupt them by its activation signal, SIGRTMIN), 1 thread
//                                     forcing collections
//   SignalAttacks deep [rounds]       recursion down and up again, on the main thread (its stack
//                                     grows as it goes) and on a thread of a 256 KiB stack,
//                                     nearly to its end
//   SignalAttacks many [threads]      threads (default 200) spinning at once: each waits until
//                                     all have started, then spins about 5 ms of its CPU time
//   SignalAttacks brief [threads]     threads (default 200) started one after another, each
//                                     spinning about half a millisecond (most end before the next
//                                     starts, each living less than a 1 ms interval)
//   SignalAttacks short [threads]     threads (default 400), 4 at a time, each spinning 1 ms of
//                                     its own CPU time; prints `measured cpu-ms <total>`, the CPU
//                                     time those threads used (each one's CPU clock at its end)
//   SignalAttacks ending [ms]         4 background threads spinning and faulting, still running
//                                     when Main returns after `ms` (default 300): the runtime
//                                     shuts down while they are sampled
//   SignalAttacks attach [rounds]     for a profiler to attach to: 2 threads spinning (Spin-0,
//                                     Spin-1) and 1 spinning and faulting (Fault-0) already run
//                                     when it prints `ready <pid>`; at a line on stdin each does
//                                     `rounds` (default 2000) more rounds and ends
//
// Prints its counts, then `SignalAttacks <mode> done`, and exits 0; an unexpected exception
// prints it and the app exits 1.
using System;
using System.Collections.Generic;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Threading;

namespace SignalAttacksApp
{
    class Node { public int Value = 1; }

    static class Program
    {
        static int failures;
        static volatile bool stop;

        struct Timespec { public long Sec; public long Nsec; }

        [DllImport("libc", EntryPoint = "clock_gettime")]
        static extern int ClockGettime(int clock, out Timespec time);

        // CLOCK_THREAD_CPUTIME_ID: this thread's CPU time since it started.
        static long ThreadCpuNs()
        {
            Timespec t;
            ClockGettime(3, out t);
            return t.Sec * 1000000000L + t.Nsec;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static long Spin(long loops)
        {
            long x = 1;
            for (long i = 0; i < loops; i++) x = x * 6364136223846793005L + 1442695040888963407L;
            return x;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Deref(Node node) { return node.Value; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Divide(int a, int b) { return a / b; }

        static void Run(List<Thread> threads, int atOnce)
        {
            for (int i = 0; i < threads.Count; i += atOnce)
            {
                int end = Math.Min(threads.Count, i + atOnce);
                for (int k = i; k < end; k++) threads[k].Start();
                for (int k = i; k < end; k++) threads[k].Join();
            }
        }

        static Thread Guarded(string name, ThreadStart body, int stack = 0)
        {
            ThreadStart run = () =>
            {
                try { body(); }
                catch (Exception e)
                {
                    Interlocked.Increment(ref failures);
                    Console.WriteLine(name + " failed: " + e);
                }
            };
            var t = stack > 0 ? new Thread(run, stack) : new Thread(run);
            t.Name = name;
            return t;
        }

        static void Exits(int count)
        {
            int ended = 0;
            var threads = new List<Thread>();
            for (int i = 0; i < count; i++)
            {
                int n = i;
                threads.Add(Guarded("Exit-" + n, () => { Spin(2000 + n % 7 * 3000); Interlocked.Increment(ref ended); }));
            }
            Run(threads, 8);
            Console.WriteLine("exits threads=" + count + " ended=" + ended);
        }

        static void Faults(int rounds)
        {
            int nulls = 0, divides = 0, collections = 0;
            long spun = 0;
            var threads = new List<Thread>();
            for (int i = 0; i < 4; i++)
            {
                threads.Add(Guarded("Fault-" + i, () =>
                {
                    Node none = null;
                    for (int n = 0; n < rounds; n++)
                    {
                        try { Deref(none); } catch (NullReferenceException) { Interlocked.Increment(ref nulls); }
                        try { Divide(n, 0); } catch (DivideByZeroException) { Interlocked.Increment(ref divides); }
                    }
                }));
            }
            for (int i = 0; i < 2; i++)
            {
                threads.Add(Guarded("Loop-" + i, () =>
                {
                    // No call and no allocation inside: the GC stops this thread by interrupting it.
                    long x = 1;
                    while (!stop)
                    {
                        for (int k = 0; k < 1000000; k++) x = x * 6364136223846793005L + 1;
                    }
                    Interlocked.Add(ref spun, x == 0 ? 1 : 0);
                }));
            }
            var collector = Guarded("Collector", () =>
            {
                for (int n = 0; n < rounds / 10; n++)
                {
                    var garbage = new List<byte[]>();
                    for (int k = 0; k < 100; k++) garbage.Add(new byte[1000 + k]);
                    GC.Collect();
                    Interlocked.Increment(ref collections);
                }
            });
            foreach (var t in threads) t.Start();
            collector.Start();
            for (int i = 0; i < 4; i++) threads[i].Join();
            collector.Join();
            stop = true;
            foreach (var t in threads) t.Join();
            Console.WriteLine("faults nulls=" + nulls + " divides=" + divides + " collections=" + collections + " spun=" + spun);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static long Recurse(int depth)
        {
            // Locals that stay live across the call, so each frame takes room on the stack.
            long a = depth, b = depth * 3, c = depth ^ 0x55, d = depth + 7;
            if (depth == 0) return Spin(20000);
            long below = Recurse(depth - 1);
            return below + a + b + c + d;
        }

        static void Deep(int rounds)
        {
            long main = 0, small = 0;
            // A thread of a 256 KiB stack: 1500 frames of this size come near its end.
            var thread = Guarded("SmallStack", () =>
            {
                for (int n = 0; n < rounds; n++) small += Recurse(1500) & 0xffff;
            }, 256 * 1024);
            thread.Start();
            for (int n = 0; n < rounds; n++) main += Recurse(20000 + n % 3 * 5000) & 0xffff;
            thread.Join();
            Console.WriteLine("deep main=" + main + " small=" + small);
        }

        static void Many(int count)
        {
            long total = 0;
            var gate = new ManualResetEvent(false);
            var threads = new List<Thread>();
            for (int i = 0; i < count; i++)
            {
                threads.Add(Guarded("Many-" + i, () => { gate.WaitOne(); Interlocked.Add(ref total, Spin(4000000) & 1); }));
            }
            foreach (var t in threads) t.Start();
            gate.Set();
            foreach (var t in threads) t.Join();
            Console.WriteLine("many threads=" + count + " total=" + total);
        }

        static void Brief(int count)
        {
            long total = 0;
            var threads = new List<Thread>();
            for (int i = 0; i < count; i++)
            {
                threads.Add(Guarded("Brief-" + i, () => { Interlocked.Add(ref total, Spin(400000) & 1); }));
            }
            Run(threads, count);
            Console.WriteLine("brief threads=" + count + " total=" + total);
        }

        static void Short(int count)
        {
            long cpuNs = 0;
            int ended = 0;
            var threads = new List<Thread>();
            for (int i = 0; i < count; i++)
            {
                threads.Add(Guarded("Short-" + i, () =>
                {
                    long start = ThreadCpuNs();
                    while (ThreadCpuNs() - start < 1000000) Spin(1000);
                    Interlocked.Increment(ref ended);
                    Interlocked.Add(ref cpuNs, ThreadCpuNs());
                }));
            }
            Run(threads, 4);
            Console.WriteLine("short threads=" + count + " ended=" + ended);
            Console.WriteLine("measured cpu-ms " + cpuNs / 1000000.0);
        }

        static void Ending(int ms)
        {
            for (int i = 0; i < 4; i++)
            {
                var t = Guarded("Ending-" + i, () =>
                {
                    Node none = null;
                    for (int n = 0; ; n++)
                    {
                        Spin(5000);
                        try { Deref(none); } catch (NullReferenceException) { }
                    }
                });
                t.IsBackground = true;
                t.Start();
            }
            Thread.Sleep(ms);
            Console.WriteLine("ending main returns");
        }

        static void Attach(int rounds)
        {
            int left = 3;
            var threads = new List<Thread>();
            for (int i = 0; i < 3; i++)
            {
                bool faults = i == 2;
                threads.Add(Guarded(faults ? "Fault-0" : "Spin-" + i, () =>
                {
                    Node none = null;
                    int after = -1;
                    for (int n = 0; after != 0; n++)
                    {
                        Spin(20000);
                        if (faults) { try { Deref(none); } catch (NullReferenceException) { } }
                        if (after > 0) after--;
                        else if (after < 0 && stop) after = rounds;
                    }
                    Interlocked.Decrement(ref left);
                }));
            }
            foreach (var t in threads) t.Start();
            Console.WriteLine("ready " + System.Diagnostics.Process.GetCurrentProcess().Id);
            Console.ReadLine();
            stop = true;
            foreach (var t in threads) t.Join();
            Console.WriteLine("attach threads=3 left=" + left);
        }

        static int Main(string[] args)
        {
            string mode = args.Length > 0 ? args[0] : "";
            int n = args.Length > 1 ? int.Parse(args[1]) : -1;
            switch (mode)
            {
                case "exits": Exits(n < 0 ? 2000 : n); break;
                case "faults": Faults(n < 0 ? 2000 : n); break;
                case "deep": Deep(n < 0 ? 300 : n); break;
                case "many": Many(n < 0 ? 200 : n); break;
                case "brief": Brief(n < 0 ? 200 : n); break;
                case "attach": Attach(n < 0 ? 2000 : n); break;
                case "short": Short(n < 0 ? 400 : n); break;
                case "ending": Ending(n < 0 ? 300 : n); break;
                default: Console.WriteLine("usage: SignalAttacks exits|faults|deep|many|brief|short|ending|attach [n]"); return 2;
            }
            Console.WriteLine("SignalAttacks " + mode + " done");
            return failures == 0 ? 0 : 1;
        }
    }
}
