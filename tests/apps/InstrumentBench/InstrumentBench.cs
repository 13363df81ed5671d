// The app of scripts/bench-instrument: calls a small method in a loop and prints the time and the
// bytes allocated per call, so one run can compare it unwrapped, wrapped with empty Rust handlers
// (tests/instrument-profiler, CORPROF_INSTRUMENT_BENCH) and under enter/leave hooks.
using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;

namespace InstrumentBench
{
    // Fifty methods for the start-up measurement: wrapped all (`InstrumentBench.Many::_`) or none.
    static class Many
    {
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M0(int x) { return x + 0; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M1(int x) { return x + 1; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M2(int x) { return x + 2; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M3(int x) { return x + 3; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M4(int x) { return x + 4; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M5(int x) { return x + 5; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M6(int x) { return x + 6; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M7(int x) { return x + 7; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M8(int x) { return x + 8; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M9(int x) { return x + 9; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M10(int x) { return x + 10; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M11(int x) { return x + 11; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M12(int x) { return x + 12; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M13(int x) { return x + 13; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M14(int x) { return x + 14; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M15(int x) { return x + 15; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M16(int x) { return x + 16; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M17(int x) { return x + 17; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M18(int x) { return x + 18; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M19(int x) { return x + 19; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M20(int x) { return x + 20; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M21(int x) { return x + 21; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M22(int x) { return x + 22; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M23(int x) { return x + 23; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M24(int x) { return x + 24; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M25(int x) { return x + 25; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M26(int x) { return x + 26; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M27(int x) { return x + 27; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M28(int x) { return x + 28; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M29(int x) { return x + 29; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M30(int x) { return x + 30; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M31(int x) { return x + 31; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M32(int x) { return x + 32; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M33(int x) { return x + 33; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M34(int x) { return x + 34; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M35(int x) { return x + 35; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M36(int x) { return x + 36; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M37(int x) { return x + 37; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M38(int x) { return x + 38; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M39(int x) { return x + 39; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M40(int x) { return x + 40; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M41(int x) { return x + 41; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M42(int x) { return x + 42; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M43(int x) { return x + 43; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M44(int x) { return x + 44; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M45(int x) { return x + 45; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M46(int x) { return x + 46; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M47(int x) { return x + 47; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M48(int x) { return x + 48; }
        [MethodImpl(MethodImplOptions.NoInlining)] public static int M49(int x) { return x + 49; }
        public static int All() { return Many.M0(1) + Many.M1(1) + Many.M2(1) + Many.M3(1) + Many.M4(1) + Many.M5(1) + Many.M6(1) + Many.M7(1) + Many.M8(1) + Many.M9(1) + Many.M10(1) + Many.M11(1) + Many.M12(1) + Many.M13(1) + Many.M14(1) + Many.M15(1) + Many.M16(1) + Many.M17(1) + Many.M18(1) + Many.M19(1) + Many.M20(1) + Many.M21(1) + Many.M22(1) + Many.M23(1) + Many.M24(1) + Many.M25(1) + Many.M26(1) + Many.M27(1) + Many.M28(1) + Many.M29(1) + Many.M30(1) + Many.M31(1) + Many.M32(1) + Many.M33(1) + Many.M34(1) + Many.M35(1) + Many.M36(1) + Many.M37(1) + Many.M38(1) + Many.M39(1) + Many.M40(1) + Many.M41(1) + Many.M42(1) + Many.M43(1) + Many.M44(1) + Many.M45(1) + Many.M46(1) + Many.M47(1) + Many.M48(1) + Many.M49(1); }
    }

    static class Program
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Small(int x) { return x + 1; }

        static long Run(int n)
        {
            long sum = 0;
            for (int i = 0; i < n; i++) sum += Small(i);
            return sum;
        }

        static int Main(string[] args)
        {
            if (args.Length > 0 && args[0] == "startup")
            {
                // Start, call the fifty methods once, end: the run's wall time is start-up's.
                return Many.All() == 50 + 1225 ? 0 : 1;
            }
            int n = args.Length > 0 ? int.Parse(args[0]) : 20000000;
            // Warm up past tiering, so the loop measured runs optimized code.
            for (int r = 0; r < 4; r++) { Run(200000); System.Threading.Thread.Sleep(150); }
            long best = long.MaxValue, bytes = 0, check = 0;
            for (int r = 0; r < 5; r++)
            {
                long before = GC.GetAllocatedBytesForCurrentThread();
                var sw = Stopwatch.StartNew();
                check = Run(n);
                sw.Stop();
                bytes = GC.GetAllocatedBytesForCurrentThread() - before;
                best = Math.Min(best, sw.Elapsed.Ticks);
            }
            double ns = best * 100.0 / n; // TimeSpan ticks are 100 ns
            Console.WriteLine("ns_per_call={0:F2} bytes_per_call={1:F3} check={2}", ns, (double)bytes / n, check);
            return 0;
        }
    }
}
