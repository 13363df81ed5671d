// The app of tests/runtime/instrument.rs: tests/instrument-profiler wraps every method of
// InstrumentApp.Target (and of its nested and generic types, and of the Point struct) with Rust
// handlers. Its output must be the same wrapped or not; the profiler's own output says what the
// handlers saw: each method's calls, ends, exceptions and last returned value.
using System;
using System.Runtime.CompilerServices;
using System.Threading.Tasks;

namespace InstrumentApp
{
    struct Point
    {
        public int X, Y;
        [MethodImpl(MethodImplOptions.NoInlining)]
        public int Sum() { return X + Y; }
        [MethodImpl(MethodImplOptions.NoInlining)]
        public void Move(int d) { X += d; Y += d; }
    }

    class Box<T>
    {
        T value;
        public Box(T v) { value = v; }
        [MethodImpl(MethodImplOptions.NoInlining)]
        public T Get() { return value; }
    }

    class Target
    {
        public class Inner
        {
            [MethodImpl(MethodImplOptions.NoInlining)]
            public static byte Small(byte b) { return (byte)(b + 1); }
        }

        string prefix = "hello ";

        public static void Nothing() { }
        public static int Add(int a, int b) { return a + b; }
        public string Greet(string name) { return prefix + name; }
        public static long Nine(int a1, int a2, int a3, int a4, int a5, int a6, int a7, int a8, int a9)
        {
            return a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + (long)a9 * 1000;
        }
        public static double Half(double x) { return x / 2; }
        public static float Third(float x) { return x / 3; }
        public static bool Odd(int x) { return (x & 1) == 1; }
        public static char First(string s) { return s[0]; }
        public static ulong Big() { return ulong.MaxValue; }
        public static int Throws(int x)
        {
            if (x < 0) throw new InvalidOperationException("negative " + x);
            return x * 2;
        }
        public static int Fact(int n) { return n <= 1 ? 1 : n * Fact(n - 1); }
        public static int Swap(ref int a, out int b) { b = a; a = 7; return b + 1; }
        public static T Id<T>(T x) { return x; }
        // Its own try/catch/finally and a filter, with returns inside both.
        public static int Guarded(int n)
        {
            int result = 0;
            try
            {
                try
                {
                    if (n == 0) return -1;
                    result = 100 / (n - 1);
                }
                catch (DivideByZeroException) when (n == 1)
                {
                    result = -2;
                }
                finally
                {
                    result += 1000;
                }
            }
            catch (Exception)
            {
                return -3;
            }
            return result;
        }
        public static async Task<int> Later(int x)
        {
            await Task.Yield();
            return x + 1;
        }
        public static int Loop(int n)
        {
            int s = 0;
            for (int i = 0; i < n; i++) { if (i == 5) continue; s += i; }
            return s;
        }
    }

    // Named by a pattern, `InstrumentApp.Pat*::Get*`: GetA and GetB, not Other.
    static class Patterns
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static int GetA() { return 1; }
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static int GetB() { return 2; }
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static int Other() { return 3; }
    }

    static class Program
    {
        // Every method of the wrapped types compiled before any runs (the wrapped bodies through
        // the JIT, generic ones for int and string): one the JIT refused would throw here.
        static void PrepareAll()
        {
            var flags = System.Reflection.BindingFlags.Public | System.Reflection.BindingFlags.NonPublic
                | System.Reflection.BindingFlags.Static | System.Reflection.BindingFlags.Instance
                | System.Reflection.BindingFlags.DeclaredOnly;
            foreach (var type in new[] { typeof(Target), typeof(Target.Inner), typeof(Point), typeof(Patterns) })
            {
                foreach (var method in type.GetMethods(flags))
                {
                    if (method.IsGenericMethodDefinition)
                    {
                        RuntimeHelpers.PrepareMethod(method.MethodHandle, new[] { typeof(int).TypeHandle });
                        RuntimeHelpers.PrepareMethod(method.MethodHandle, new[] { typeof(string).TypeHandle });
                    }
                    else
                    {
                        RuntimeHelpers.PrepareMethod(method.MethodHandle);
                    }
                }
                foreach (var ctor in type.GetConstructors(flags)) RuntimeHelpers.PrepareMethod(ctor.MethodHandle);
            }
            var box = typeof(Box<int>).GetMethod("Get");
            RuntimeHelpers.PrepareMethod(box.MethodHandle, new[] { typeof(int).TypeHandle });
        }

        static int Main()
        {
            PrepareAll();
            Target.Nothing();
            Console.WriteLine("Add " + Target.Add(3, 4) + " " + Target.Add(-1, 1));
            Console.WriteLine(new Target().Greet("world"));
            Console.WriteLine("Nine " + Target.Nine(1, 2, 3, 4, 5, 6, 7, 8, 9));
            Console.WriteLine("Half " + Target.Half(5.0) + " Third " + Target.Third(9f));
            Console.WriteLine("Odd " + Target.Odd(3) + " " + Target.Odd(4));
            Console.WriteLine("First " + Target.First("xyz"));
            Console.WriteLine("Big " + Target.Big());
            Console.WriteLine("Small " + Target.Inner.Small(41));
            Console.WriteLine("Throws " + Target.Throws(21));
            try { Target.Throws(-5); } catch (InvalidOperationException e) { Console.WriteLine("caught " + e.Message); }
            Console.WriteLine("Fact " + Target.Fact(5));
            int a = 3, b;
            int r = Target.Swap(ref a, out b);
            Console.WriteLine("Swap " + r + " " + a + " " + b);
            Console.WriteLine("Id " + Target.Id(12) + " " + Target.Id("s") + " " + Target.Id(2.5));
            Console.WriteLine("Guarded " + Target.Guarded(0) + " " + Target.Guarded(1) + " " + Target.Guarded(3));
            Console.WriteLine("Later " + Target.Later(41).Result);
            Console.WriteLine("Loop " + Target.Loop(10));
            var p = new Point { X = 1, Y = 2 };
            p.Move(10);
            Console.WriteLine("Point " + p.Sum() + " " + p.X);
            Console.WriteLine("Box " + new Box<string>("boxed").Get() + " " + new Box<int>(5).Get());
            Console.WriteLine("Patterns " + (Patterns.GetA() + Patterns.GetB() + Patterns.Other()));
            Precompiled();
            return 0;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void RevertNow() { }

        // Calls into precompiled (ReadyToRun) framework code, which the profiler wraps through
        // ReJIT: once it says (INSTRUMENT_READY names a file it creates) that its ReJIT requests
        // are made. Compiled only now, so nothing here was inlined before.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Precompiled()
        {
            string ready = Environment.GetEnvironmentVariable("INSTRUMENT_READY");
            if (ready != null)
            {
                var waited = System.Diagnostics.Stopwatch.StartNew();
                while (!System.IO.File.Exists(ready))
                {
                    if (waited.Elapsed.TotalSeconds > 120) { Console.WriteLine("no ReJIT marker"); return; }
                    System.Threading.Thread.Sleep(5);
                }
            }
            var bytes = new byte[] { 1, 2, 3 };
            for (int i = 0; i < 3; i++) Console.WriteLine("Base64 " + Convert.ToBase64String(bytes, 0, 2 + (i % 2)));
            Console.WriteLine("Hex " + BitConverter.ToString(bytes, 1));
            // The wrapping taken back (the profiler's handler of RevertNow asks for it); once it
            // says the reverts are requested, the same calls again: no handler sees them.
            RevertNow();
            string reverted = Environment.GetEnvironmentVariable("INSTRUMENT_REVERTED");
            if (reverted != null)
            {
                var waited = System.Diagnostics.Stopwatch.StartNew();
                while (!System.IO.File.Exists(reverted))
                {
                    if (waited.Elapsed.TotalSeconds > 120) { Console.WriteLine("no revert marker"); return; }
                    System.Threading.Thread.Sleep(5);
                }
            }
            Console.WriteLine("After revert " + Convert.ToBase64String(bytes, 0, 2) + " " + Target.Add(5, 6) + " " + Target.Fact(3));
        }
    }
}
