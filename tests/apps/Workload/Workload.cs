// Workload: a small, deterministic C# program used to exercise corprof
// profilers. Built with mono's `mcs` (references only mscorlib, System and
// System.Core) and run on CoreCLR 3.1 and 8 through Workload.runtimeconfig.json.
//
// Usage: Workload [scale]    (scale >= 1, default 1)
//
// Deterministic counts for a given scale S:
//   WorkloadException thrown and caught: 5 * S  (nothing else throws)
//   GC.Collect() calls:                  3
//   threads started and joined:          4      ("workload-0" .. "workload-3")
//   distinct Jit.Mnn methods compiled:   50     (NoInlining, called S times each)
//   GenericWork<T>.Run instantiations:   10     (9 value types + string)
// Prints "Workload done" on stdout and exits 0. Exits 3 if any exception other
// than the expected WorkloadExceptions was seen (first-chance), 2 on bad usage.
// Set WORKLOAD_VERBOSE=1 to get a summary line on stderr.
using System;
using System.Collections.Generic;
using System.Linq;
using System.Runtime.CompilerServices;
using System.Runtime.ExceptionServices;
using System.Threading;

namespace Workload
{
    public sealed class WorkloadException : Exception
    {
        public readonly int Index;

        public WorkloadException(int index) : base("workload exception " + index)
        {
            Index = index;
        }
    }

    public struct S0 { public long A; }
    public struct S1 { public long A; public int B; }
    public struct S2 { public int A; public int B; public int C; }
    public struct S3 { public double A; public byte B; }
    public struct S4 { public long A; public long B; public long C; public long D; }

    public static class GenericWork<T>
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long Run(T value, long seed)
        {
            T[] pair = new T[] { value, default(T) };
            return seed * 31 + pair.Length;
        }
    }

    public static class Jit
    {
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M00(long x) { return x * 3 + 1000; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M01(long x) { return (x ^ 1037) + 5; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M02(long x) { return (x << 1) - 1074; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M03(long x) { return x + (x >> 3) + 9; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M04(long x) { return (x * 11) ^ (x >> 7); }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M05(long x) { return x * 13 + 1185; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M06(long x) { return (x ^ 1222) + 15; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M07(long x) { return (x << 1) - 1259; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M08(long x) { return x + (x >> 3) + 19; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M09(long x) { return (x * 21) ^ (x >> 7); }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M10(long x) { return x * 23 + 1370; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M11(long x) { return (x ^ 1407) + 25; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M12(long x) { return (x << 1) - 1444; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M13(long x) { return x + (x >> 3) + 29; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M14(long x) { return (x * 31) ^ (x >> 7); }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M15(long x) { return x * 33 + 1555; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M16(long x) { return (x ^ 1592) + 35; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M17(long x) { return (x << 1) - 1629; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M18(long x) { return x + (x >> 3) + 39; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M19(long x) { return (x * 41) ^ (x >> 7); }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M20(long x) { return x * 43 + 1740; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M21(long x) { return (x ^ 1777) + 45; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M22(long x) { return (x << 1) - 1814; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M23(long x) { return x + (x >> 3) + 49; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M24(long x) { return (x * 51) ^ (x >> 7); }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M25(long x) { return x * 53 + 1925; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M26(long x) { return (x ^ 1962) + 55; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M27(long x) { return (x << 1) - 1999; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M28(long x) { return x + (x >> 3) + 59; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M29(long x) { return (x * 61) ^ (x >> 7); }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M30(long x) { return x * 63 + 2110; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M31(long x) { return (x ^ 2147) + 65; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M32(long x) { return (x << 1) - 2184; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M33(long x) { return x + (x >> 3) + 69; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M34(long x) { return (x * 71) ^ (x >> 7); }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M35(long x) { return x * 73 + 2295; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M36(long x) { return (x ^ 2332) + 75; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M37(long x) { return (x << 1) - 2369; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M38(long x) { return x + (x >> 3) + 79; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M39(long x) { return (x * 81) ^ (x >> 7); }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M40(long x) { return x * 83 + 2480; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M41(long x) { return (x ^ 2517) + 85; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M42(long x) { return (x << 1) - 2554; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M43(long x) { return x + (x >> 3) + 89; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M44(long x) { return (x * 91) ^ (x >> 7); }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M45(long x) { return x * 93 + 2665; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M46(long x) { return (x ^ 2702) + 95; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M47(long x) { return (x << 1) - 2739; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M48(long x) { return x + (x >> 3) + 99; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static long M49(long x) { return (x * 101) ^ (x >> 7); }

        // Calls every method above once, in order.
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long Chain(long x)
        {
            x = M00(x);
            x = M01(x);
            x = M02(x);
            x = M03(x);
            x = M04(x);
            x = M05(x);
            x = M06(x);
            x = M07(x);
            x = M08(x);
            x = M09(x);
            x = M10(x);
            x = M11(x);
            x = M12(x);
            x = M13(x);
            x = M14(x);
            x = M15(x);
            x = M16(x);
            x = M17(x);
            x = M18(x);
            x = M19(x);
            x = M20(x);
            x = M21(x);
            x = M22(x);
            x = M23(x);
            x = M24(x);
            x = M25(x);
            x = M26(x);
            x = M27(x);
            x = M28(x);
            x = M29(x);
            x = M30(x);
            x = M31(x);
            x = M32(x);
            x = M33(x);
            x = M34(x);
            x = M35(x);
            x = M36(x);
            x = M37(x);
            x = M38(x);
            x = M39(x);
            x = M40(x);
            x = M41(x);
            x = M42(x);
            x = M43(x);
            x = M44(x);
            x = M45(x);
            x = M46(x);
            x = M47(x);
            x = M48(x);
            x = M49(x);
            return x;
        }
    }

    public static class Thrower
    {
        public static int FinallyRuns;

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void Outer(int index)
        {
            Middle(index);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Middle(int index)
        {
            try
            {
                Inner(index);
            }
            finally
            {
                FinallyRuns++;
            }
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Inner(int index)
        {
            throw new WorkloadException(index);
        }
    }

    public static class Program
    {
        public const int ExceptionsPerScale = 5;
        public const int GcCollects = 3;
        public const int Threads = 4;

        static int firstChance;
        static int unexpected;
        static readonly object gate = new object();
        static long threadSum;

        static long LoadModules(int scale)
        {
            // System.Core -> System.Linq
            long total = Enumerable.Range(0, 64 * scale)
                .Where(i => i % 3 != 0)
                .Select(i => (long)i * i)
                .Sum();
            int[] sorted = new[] { 5, 3, 9, 1, 7 }.OrderBy(i => i).ToArray();
            total += sorted.First() + sorted.Last();

            // System / System.Core -> System.Collections. (Not Queue<T> or
            // Stack<T>: mono's mcs binds those to mscorlib, whose facade on
            // CoreCLR 3.1 does not forward them.)
            var linked = new LinkedList<int>();
            var set = new SortedSet<int>();
            var sorted2 = new SortedDictionary<int, int>();
            var hash = new HashSet<int>();
            for (int i = 0; i < 16; i++)
            {
                linked.AddLast(i);
                set.Add(15 - i);
                sorted2[15 - i] = i;
                hash.Add(i % 5);
            }
            total += linked.First.Value + linked.Last.Value + set.Min + set.Max
                + sorted2.Keys.First() + hash.Count;

            // mscorlib -> System.Private.CoreLib
            var dict = new Dictionary<string, int>();
            var list = new List<int>();
            for (int i = 0; i < 16; i++)
            {
                dict["k" + i] = i;
                list.Add(i * 2);
            }
            total += dict["k7"] + list.Count + string.Join(",", list.Take(3)).Length;
            return total;
        }

        static long CompileMethods(int scale)
        {
            long acc = 1;
            for (int r = 0; r < scale; r++)
            {
                acc = Jit.Chain(acc);
                acc = GenericWork<S0>.Run(new S0 { A = acc }, acc);
                acc = GenericWork<S1>.Run(new S1 { A = acc, B = 1 }, acc);
                acc = GenericWork<S2>.Run(new S2 { A = 1, B = 2, C = 3 }, acc);
                acc = GenericWork<S3>.Run(new S3 { A = 0.5, B = 4 }, acc);
                acc = GenericWork<S4>.Run(new S4 { A = 1, B = 2, C = 3, D = 4 }, acc);
                acc = GenericWork<int>.Run(r, acc);
                acc = GenericWork<long>.Run(acc, acc);
                acc = GenericWork<double>.Run(1.5, acc);
                acc = GenericWork<byte>.Run(7, acc);
                acc = GenericWork<string>.Run("w", acc);
            }
            return acc;
        }

        static int ThrowAndCatch(int count)
        {
            int caught = 0;
            for (int i = 0; i < count; i++)
            {
                try
                {
                    Thrower.Outer(i);
                }
                catch (WorkloadException e)
                {
                    if (e.Index == i)
                        caught++;
                }
            }
            return caught;
        }

        static void ThreadBody(object state)
        {
            int iterations = (int)state;
            long local = 0;
            for (int i = 0; i < iterations; i++)
                local = Jit.M00(local) ^ i;
            lock (gate)
            {
                threadSum += local & 0xffff;
            }
        }

        static void RunThreads(int scale)
        {
            var threads = new Thread[Threads];
            for (int i = 0; i < Threads; i++)
            {
                threads[i] = new Thread(ThreadBody);
                threads[i].Name = "workload-" + i;
                threads[i].Start(20000 * scale);
            }
            for (int i = 0; i < Threads; i++)
                threads[i].Join();
        }

        public static int Main(string[] args)
        {
            int scale = 1;
            if (args.Length > 0 && (!int.TryParse(args[0], out scale) || scale < 1 || scale > 1000000))
            {
                Console.Error.WriteLine("usage: Workload [scale]   (1 <= scale <= 1000000)");
                return 2;
            }

            AppDomain.CurrentDomain.FirstChanceException += OnFirstChance;

            long check = LoadModules(scale);
            check += CompileMethods(scale);
            GC.Collect();                                   // 1

            int expected = ExceptionsPerScale * scale;
            int caught = ThrowAndCatch(expected);
            GC.Collect();                                   // 2

            RunThreads(scale);
            GC.Collect();                                   // 3

            AppDomain.CurrentDomain.FirstChanceException -= OnFirstChance;

            if (Environment.GetEnvironmentVariable("WORKLOAD_VERBOSE") != null)
            {
                Console.Error.WriteLine(
                    "Workload: scale=" + scale + " thrown=" + firstChance + " caught=" + caught
                    + " finally=" + Thrower.FinallyRuns + " unexpected=" + unexpected
                    + " gcCollects=" + GcCollects + " threads=" + Threads
                    + " gen0Count=" + GC.CollectionCount(0) + " runtime=" + Environment.Version
                    + " check=" + (check ^ threadSum));
            }
            if (caught != expected || firstChance != expected || unexpected != 0
                || Thrower.FinallyRuns != expected)
            {
                Console.Error.WriteLine(
                    "Workload: exception counts off: expected " + expected + ", caught " + caught
                    + ", first-chance " + firstChance + ", unexpected " + unexpected);
                return 3;
            }

            Console.WriteLine("Workload done");
            return 0;
        }

        static void OnFirstChance(object sender, FirstChanceExceptionEventArgs e)
        {
            Interlocked.Increment(ref firstChance);
            if (!(e.Exception is WorkloadException))
                Interlocked.Increment(ref unexpected);
        }
    }
}
