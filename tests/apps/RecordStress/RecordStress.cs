// The app of corprof-record/tests/record_cli.rs's signal-sampler stress test: work that leans on
// the runtime's own signals while a profiler interrupts its threads, with an output that depends
// on nothing but its arguments, so a profiled run can be compared with an unprofiled one.
//
//   RecordStress [rounds]
//
// Four threads run `rounds` rounds (default 300) each, at the same time:
// - "Faults": dereferences null and divides by zero in managed code (the runtime turns the
//   SIGSEGV and SIGFPE its handlers catch into NullReferenceException and
//   DivideByZeroException), and throws and catches its own exceptions through a few frames;
// - "Garbage": allocates arrays, strings and lists (short-lived and some kept), and forces a
//   collection every 25 rounds (the runtime suspends every thread for each: its activation
//   signal);
// - "Waits": sleeps 1 ms, waits on a monitor the "Pulses" thread pulses, and joins a short thread;
// - "Pulses": pulses that monitor.
// Prints one line per thread with its counts and a checksum, then `RecordStress done`, and
// exits 0; any unexpected exception fails the thread, prints it, and the app exits 1.
using System;
using System.Collections.Generic;
using System.Runtime.CompilerServices;
using System.Threading;

namespace RecordStressApp
{
    class Node
    {
        public int Value = 1;
    }

    class AppError : Exception
    {
        public AppError(int n) : base("round " + n) { }
    }

    static class Program
    {
        static readonly object Gate = new object();
        static int pulses;
        static volatile bool waitsDone;
        static int failures;

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Deref(Node node) { return node.Value; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static long Plain(int n)
        {
            long x = n;
            for (int i = 0; i < 50000; i++) x = x * 31 + i;
            return x & 1;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Divide(int a, int b) { return a / b; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Throw(int depth, int n)
        {
            if (depth == 0) throw new AppError(n);
            Throw(depth - 1, n);
        }

        static string Faults(int rounds)
        {
            int nulls = 0, divides = 0, own = 0;
            long sum = 0;
            Node none = null;
            for (int n = 0; n < rounds; n++)
            {
                // Plain work between the faults: while the runtime handles a fault the sampler's
                // signal waits, so a thread doing nothing else is seldom sampled, and the test
                // asks for samples of every thread.
                sum += Plain(n);
                try { sum += Deref(none); } catch (NullReferenceException) { nulls++; }
                try { sum += Divide(n, n - n); } catch (DivideByZeroException) { divides++; }
                try { Throw(n % 8, n); } catch (AppError e) { own++; sum += e.Message.Length; }
                try
                {
                    try { Throw(2, n); }
                    finally { sum += 1; }
                }
                catch (AppError) { own++; }
            }
            return "Faults nulls=" + nulls + " divides=" + divides + " own=" + own + " sum=" + sum;
        }

        static string Garbage(int rounds)
        {
            var kept = new List<object>();
            long sum = 0;
            for (int n = 0; n < rounds; n++)
            {
                for (int i = 0; i < 200; i++)
                {
                    var bytes = new byte[64 + (i * 37 + n) % 4000];
                    bytes[bytes.Length - 1] = (byte)i;
                    sum += bytes[bytes.Length - 1];
                    var text = string.Concat("item-", i.ToString(), "-", n.ToString());
                    sum += text.Length;
                    var list = new List<int>(i % 50);
                    for (int k = 0; k < i % 50; k++) list.Add(k);
                    sum += list.Count;
                    if (i % 40 == 0) kept.Add(bytes);
                }
                if (kept.Count > 500) kept.RemoveRange(0, 250);
                if (n % 25 == 0) GC.Collect();
            }
            return "Garbage sum=" + sum + " kept=" + kept.Count;
        }

        static string Waits(int rounds)
        {
            int woken = 0, joined = 0;
            for (int n = 0; n < rounds; n++)
            {
                Thread.Sleep(1);
                lock (Gate)
                {
                    while (pulses == 0) Monitor.Wait(Gate);
                    pulses--;
                    woken++;
                }
                if (n % 20 == 0)
                {
                    var t = new Thread(() => { Thread.Sleep(1); });
                    t.Start();
                    t.Join();
                    joined++;
                }
            }
            waitsDone = true;
            return "Waits woken=" + woken + " joined=" + joined;
        }

        static void Pulses()
        {
            while (!waitsDone)
            {
                lock (Gate)
                {
                    pulses++;
                    Monitor.PulseAll(Gate);
                }
                Thread.Sleep(1);
            }
        }

        static int Main(string[] args)
        {
            int rounds = args.Length > 0 ? int.Parse(args[0]) : 300;
            var results = new string[3];
            Func<int, string>[] work = { Faults, Garbage, Waits };
            string[] names = { "Faults", "Garbage", "Waits" };
            var threads = new List<Thread>();
            for (int i = 0; i < work.Length; i++)
            {
                int index = i;
                var t = new Thread(() =>
                {
                    try { results[index] = work[index](rounds); }
                    catch (Exception e)
                    {
                        Interlocked.Increment(ref failures);
                        results[index] = names[index] + " failed: " + e;
                        waitsDone = true;
                    }
                });
                t.Name = names[i];
                threads.Add(t);
            }
            var pulser = new Thread(Pulses);
            pulser.Name = "Pulses";
            foreach (var t in threads) t.Start();
            pulser.Start();
            foreach (var t in threads) t.Join();
            pulser.Join();
            foreach (var line in results) Console.WriteLine(line);
            Console.WriteLine("RecordStress done");
            return failures == 0 ? 0 : 1;
        }
    }
}
