// Conformance scenario "statics" (tests/conformance/statics), after the runtime's
// src/tests/profiler/unittest/getappdomainstaticaddress.cs: a class with an AppDomain static
// long, a string and a thread static, set by Main before it calls Ready(), whose JIT
// compilation is the profiler's cue to read them from a thread of its own. Then a second copy of
// this assembly in a collectible AssemblyLoadContext gives its own Holder other values and
// collects (the profiler walks every class's statics at each GC), and the context is unloaded
// and collected. Exits 100 once the copy is gone.
using System;
using System.Reflection;
using System.Runtime.CompilerServices;

namespace ConfStatics
{
    class Holder
    {
        public static long Counter;
        public static string Name;
        [ThreadStatic] public static int PerThread;
    }

    // Called in the collectible copy only.
    public static class Collectible
    {
        public static void Fill()
        {
            Holder.Counter = 0xC0FFEEL;
            Holder.Name = "collectible";
            GC.Collect();
        }
    }

    static class Program
    {
        // AssemblyLoadContext(string, bool isCollectible) came with .NET Core 3.0; the compiler's
        // class library lacks it, so reflection reaches it.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static WeakReference LoadFillAndUnload(string path)
        {
            Type alcType = Type.GetType("System.Runtime.Loader.AssemblyLoadContext", true);
            object alc = alcType.GetConstructor(new[] { typeof(string), typeof(bool) })
                .Invoke(new object[] { "Collectible", true });
            var copy = (Assembly)alcType.GetMethod("LoadFromAssemblyPath").Invoke(alc, new object[] { path });
            copy.GetType("ConfStatics.Collectible", true).GetMethod("Fill").Invoke(null, null);
            alcType.GetMethod("Unload").Invoke(alc, null);
            return new WeakReference(copy);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Ready() { }

        static int Main()
        {
            Holder.Counter = 0x123456789AL;
            Holder.Name = "conf-statics";
            Holder.PerThread = 4242;
            Ready();
            WeakReference copy = LoadFillAndUnload(typeof(Program).Assembly.Location);
            for (int i = 0; copy.IsAlive && i < 100; i++)
            {
                GC.Collect();
                GC.WaitForPendingFinalizers();
            }
            // One more walk, after the copy's classes are gone.
            GC.Collect();
            Console.WriteLine("statics scenario done " + Holder.Counter + Holder.Name + Holder.PerThread + " unloaded " + !copy.IsAlive);
            return copy.IsAlive ? 1 : 100;
        }
    }
}
