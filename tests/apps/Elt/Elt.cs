// The elt-tracer's test app: recursion, exceptions through several frames, four threads,
// generic methods, a static constructor, floating-point and struct results computed across
// hooked calls, and methods with primitive parameters for the ARGS lines. Every method is
// reached a known number of times, and every first call has known arguments, so the profiler's
// counts and ARGS lines can be asserted exactly; the output must not change under the profiler.
using System;
using System.Globalization;
using System.Runtime.CompilerServices;
using System.Threading;

namespace EltApp
{
    public class AppError : Exception
    {
        public readonly int Code;
        [MethodImpl(MethodImplOptions.NoInlining)]
        public AppError(int code) : base("app error") { Code = code; }
    }

    public static class Recursion
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static int Fib(int n) { return n < 2 ? n : Fib(n - 1) + Fib(n - 2); }
    }

    public static class Errors
    {
        public static int Finallies;

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static int Level3(int i)
        {
            if (i >= 0) throw new AppError(i * 10);
            return i;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static int Level2(int i)
        {
            try { return Level3(i + 1) + 1; }
            finally { Finallies++; }
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static int Level1(int i) { return Level2(i + 1) + 1; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static int Catch(int i)
        {
            try { return Level1(i); }
            catch (AppError e) { return e.Code; }
        }
    }

    public static class Workers
    {
        static long[] results;

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static int Step(int i) { return i * 3 + 1; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void Body(object state)
        {
            int id = (int)state;
            long sum = 0;
            for (int i = 0; i < 1000; i++) sum += Step(i) * (id + 1);
            results[id] = sum;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long Run()
        {
            results = new long[4];
            var threads = new Thread[4];
            for (int t = 0; t < 4; t++)
            {
                threads[t] = new Thread(Body);
                threads[t].Start(t);
            }
            long total = 0;
            for (int t = 0; t < 4; t++)
            {
                threads[t].Join();
                total += results[t];
            }
            return total;
        }
    }

    public static class Generic
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static T Echo<T>(T value) { return value; }
    }

    public class Box<T>
    {
        private readonly T value;
        [MethodImpl(MethodImplOptions.NoInlining)]
        public Box(T value) { this.value = value; }
        [MethodImpl(MethodImplOptions.NoInlining)]
        public T Get() { return value; }
    }

    public static class Config
    {
        public static readonly int Seed;
        static Config() { Seed = Compute(7); }
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static int Compute(int x) { return x * x + 1; }
    }

    public class Counter
    {
        private int total;
        [MethodImpl(MethodImplOptions.NoInlining)]
        public Counter(int start) { total = start; }
        [MethodImpl(MethodImplOptions.NoInlining)]
        public int Add(int x) { total += x; return total; }
    }

    public struct Pair
    {
        public int A, B;
        [MethodImpl(MethodImplOptions.NoInlining)]
        public int Sum() { return A * 10 + B; }
    }

    public struct Vec2 { public double X, Y; }

    public struct Mixed { public long L; public double D; }

    public static class Shapes
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static double Area(double r) { return Math.PI * r * r; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static float Half(float x) { return x / 2; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static Pair MakePair(int a, int b) { Pair p; p.A = a; p.B = b; return p; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static Vec2 Scale(Vec2 v, double k) { Vec2 r; r.X = v.X * k; r.Y = v.Y * k + 0.25; return r; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static Mixed Combine(long l, double d) { Mixed m; m.L = l * 3; m.D = d / 4; return m; }

        // Every integer and floating-point argument register, each weighted differently.
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static double Many(int a, int b, int c, int d, int e, int f,
                                  double g, double h, double i, double j, double k, double l, double m, double n)
        {
            return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f
                + 7 * g + 8 * h + 9 * i + 10 * j + 11 * k + 12 * l + 13 * m + 14 * n;
        }
    }

    public static class Prims
    {
        public static long Sunk;

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long Mix(int a, long b, double c, bool d) { return a + b + (long)(c * 2) + (d ? 1 : 0); }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static double Ratio(int a, double b) { return a * b; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static bool Not(bool b) { return !b; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void Sink(long x) { Sunk += x; }

        // Sixteen arguments, ten on the stack: more ranges than the profiler's first buffer holds.
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long Wide(int a, int b, int c, int d, int e, int f, int g, int h,
                                int i, int j, int k, int l, int m, int n, int o, long p)
        {
            return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h
                + 9 * i + 10 * j + 11 * k + 12 * l + 13 * m + 14 * n + 15 * o + 16 * p;
        }
    }

    public static class Program
    {
        public static int Main(string[] args)
        {
            Thread.CurrentThread.CurrentCulture = CultureInfo.InvariantCulture;
            Console.WriteLine("fib " + Recursion.Fib(15));

            int codes = 0;
            for (int i = 0; i < 5; i++) codes += Errors.Catch(i);
            Console.WriteLine("codes " + codes + " finallies " + Errors.Finallies);

            Console.WriteLine("threads " + Workers.Run());

            int echoed = Generic.Echo(1) + Generic.Echo(2) + Generic.Echo(3);
            string s = Generic.Echo("a") + Generic.Echo("b");
            Console.WriteLine("echo " + echoed + " " + s);
            Console.WriteLine("box " + new Box<int>(5).Get() + " " + new Box<string>("s").Get());

            Console.WriteLine("seed " + Config.Seed);

            var counter = new Counter(10);
            counter.Add(5);
            counter.Add(6);
            Console.WriteLine("counter " + counter.Add(7));

            double area = Shapes.Area(2.0);
            float half = Shapes.Half(3f);
            Pair pair = Shapes.MakePair(3, 4);
            Vec2 v; v.X = 1.5; v.Y = -2.0;
            Vec2 scaled = Shapes.Scale(v, 3.0);
            Mixed mixed = Shapes.Combine(7, 10.0);
            double many = Shapes.Many(1, 2, 3, 4, 5, 6, 0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5);
            Console.WriteLine("area " + area.ToString("R") + " half " + half.ToString("R"));
            Console.WriteLine("pair " + pair.Sum() + " scaled " + scaled.X.ToString("R") + " " + scaled.Y.ToString("R"));
            Console.WriteLine("mixed " + mixed.L + " " + mixed.D.ToString("R") + " many " + many.ToString("R"));
            double across = area * half + pair.Sum() + scaled.X * scaled.Y + mixed.D + many;
            Console.WriteLine("across " + across.ToString("R"));

            long mix = Prims.Mix(3, 40000000000L, 2.5, true) + Prims.Mix(1, 2, 0.5, false);
            double ratio = Prims.Ratio(7, 0.5);
            bool not = Prims.Not(false);
            Prims.Sink(-12);
            Console.WriteLine("prims " + mix + " " + ratio.ToString("R") + " " + not + " " + Prims.Sunk);
            Console.WriteLine("wide " + Prims.Wide(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16));

            Console.WriteLine("Elt done");
            return 0;
        }
    }
}
