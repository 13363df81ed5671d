// A copy of this assembly in a collectible AssemblyLoadContext runs Plugin.Work (its code, its
// class, its module and assembly are handed to a profiler), then the context is unloaded and
// collected; only then does the default copy call AfterUnload, whose compilation is where
// tests/doors-profiler asks the runtime about the IDs it kept (tests/runtime/doors.rs). Exits 0
// with "Unload done" once the copy is gone.
using System;
using System.Reflection;
using System.Runtime.CompilerServices;

namespace Unload
{
    public class Plugin
    {
        public int value;

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static int Work(int n)
        {
            var p = new Plugin();
            for (int i = 0; i < n; i++) p.value += i;
            return p.value;
        }
    }

    static class Program
    {
        // AssemblyLoadContext(string, bool isCollectible) came with .NET Core 3.0; the compiler's
        // class library lacks it, so reflection reaches it.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static WeakReference LoadRunUnload(string path)
        {
            Type alcType = Type.GetType("System.Runtime.Loader.AssemblyLoadContext", true);
            object alc = alcType.GetConstructor(new[] { typeof(string), typeof(bool) })
                .Invoke(new object[] { "Collectible", true });
            var copy = (Assembly)alcType.GetMethod("LoadFromAssemblyPath").Invoke(alc, new object[] { path });
            object result = copy.GetType("Unload.Plugin", true).GetMethod("Work").Invoke(null, new object[] { 10 });
            Console.WriteLine("plugin worked " + result);
            alcType.GetMethod("Unload").Invoke(alc, null);
            return new WeakReference(copy);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int AfterUnload(bool unloaded)
        {
            return unloaded ? 1 : 0;
        }

        static int Main()
        {
            Console.WriteLine("kept " + Plugin.Work(3));
            WeakReference copy = LoadRunUnload(typeof(Program).Assembly.Location);
            for (int i = 0; copy.IsAlive && i < 200; i++)
            {
                GC.Collect();
                GC.WaitForPendingFinalizers();
            }
            // The collectible copy's memory goes with its LoaderAllocator, after the managed
            // side is collected: a few more collections let the runtime free it.
            for (int i = 0; i < 10; i++)
            {
                GC.Collect();
                GC.WaitForPendingFinalizers();
            }
            int after = AfterUnload(!copy.IsAlive);
            Console.WriteLine(after == 1 ? "Unload done" : "Unload: the copy is still alive");
            return after == 1 ? 0 : 1;
        }
    }
}
