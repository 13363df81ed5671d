// The app of tests/runtime/instrument.rs `hostile_methods_*`: methods whose signatures a wrapper
// can get wrong (a pointer, a TypedReference, a byref return, twelve arguments, a
// struct returned by value, a method that throws; `__arglist` is left out: CoreCLR on Linux has
// no vararg calls), and a copy of this assembly in
// a collectible AssemblyLoadContext whose methods are asked to be ReJITted while it is loaded,
// then unloaded. Its output must be the same wrapped or not.
//
// The profiler (tests/instrument-profiler, INSTRUMENT_HOSTILE) starts its instrumentation when the
// collectible copy's module loads (so both copies are wrapped through ReJIT) and writes
// INSTRUMENT_READY once the requests are made; this app waits for that file before it calls the
// copies' methods.
using System;
using System.IO;
using System.Reflection;
using System.Runtime.CompilerServices;
using System.Threading;

namespace InstrumentHostile
{
    public struct Pair
    {
        public long A, B;
    }

    public static class Hostile
    {
        static int field = 7;

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static unsafe int Deref(int* p) { return *p + 1; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static int Typed(TypedReference r) { return __refvalue(r, int) * 2; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static ref int Field() { return ref field; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long Twelve(int a, long b, short c, byte d, double e, float f, char g, bool h, uint i, ulong j,
            sbyte k, ushort l)
        {
            return a + b + c + d + (long)e + (long)f + g + (h ? 1 : 0) + i + (long)j + k + l;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static Pair Make(long a) { return new Pair { A = a, B = -a }; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static string Thrower(int n)
        {
            if (n > 0) throw new InvalidOperationException("hostile " + n);
            return "none";
        }
    }

    static class Program
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        static unsafe void Run(string who)
        {
            int x = 41;
            Console.WriteLine(who + " deref " + Hostile.Deref(&x));
            int y = 21;
            Console.WriteLine(who + " typed " + Hostile.Typed(__makeref(y)));
            Hostile.Field() += 1;
            Console.WriteLine(who + " field " + Hostile.Field());
            Console.WriteLine(who + " twelve " + Hostile.Twelve(1, 2, 3, 4, 5.5, 6.5f, 'a', true, 9, 10, -11, 12));
            Pair p = Hostile.Make(5);
            Console.WriteLine(who + " pair " + p.A + " " + p.B);
            try { Hostile.Thrower(3); } catch (InvalidOperationException e) { Console.WriteLine(who + " caught " + e.Message); }
        }

        // AssemblyLoadContext(string, bool isCollectible) came with .NET Core 3.0; the compiler's
        // class library lacks it, so reflection reaches it.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static WeakReference LoadRunUnload(string path, string ready)
        {
            Type alcType = Type.GetType("System.Runtime.Loader.AssemblyLoadContext", true);
            object alc = alcType.GetConstructor(new[] { typeof(string), typeof(bool) })
                .Invoke(new object[] { "Collectible", true });
            var copy = (Assembly)alcType.GetMethod("LoadFromAssemblyPath").Invoke(alc, new object[] { path });
            // Loading the copy started the instrumentation: wait for its ReJIT requests.
            for (int i = 0; ready != null && !File.Exists(ready) && i < 6000; i++) Thread.Sleep(10);
            copy.GetType("InstrumentHostile.Program", true)
                .GetMethod("Run", BindingFlags.NonPublic | BindingFlags.Static)
                .Invoke(null, new object[] { "copy" });
            alcType.GetMethod("Unload").Invoke(alc, null);
            return new WeakReference(copy);
        }

        static int Main(string[] args)
        {
            Run("main");
            WeakReference copy = LoadRunUnload(typeof(Program).Assembly.Location,
                Environment.GetEnvironmentVariable("INSTRUMENT_READY"));
            for (int i = 0; copy.IsAlive && i < 200; i++)
            {
                GC.Collect();
                GC.WaitForPendingFinalizers();
            }
            Run("main again");
            Console.WriteLine(copy.IsAlive ? "InstrumentHostile: the copy is still alive" : "InstrumentHostile done");
            return copy.IsAlive ? 1 : 0;
        }
    }
}
