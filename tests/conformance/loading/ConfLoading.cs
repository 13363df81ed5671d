// Conformance scenario "loading" (tests/conformance/loading): a Reflection.Emit assembly, a
// second copy of this assembly in a collectible AssemblyLoadContext that is then unloaded, and
// three instantiations of a generic class. Prints the assemblies and modules it loaded
// (`counted: …`, compared with the profiler's counts). Exits 100 once the collectible copy is
// collected.
using System;
using System.Reflection;
using System.Reflection.Emit;
using System.Runtime.CompilerServices;

namespace ConfLoading
{
    class Box<T>
    {
        public T Value;
        public Box(T value) { Value = value; }
    }

    static class Program
    {
        // AssemblyLoadContext(string, bool isCollectible) came with .NET Core 3.0; the compiler's
        // class library lacks it, so reflection reaches it.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static WeakReference LoadCollectibleCopy(string path)
        {
            Type alcType = Type.GetType("System.Runtime.Loader.AssemblyLoadContext", true);
            object alc = alcType.GetConstructor(new[] { typeof(string), typeof(bool) })
                .Invoke(new object[] { "conf-collectible", true });
            var copy = (Assembly)alcType.GetMethod("LoadFromAssemblyPath").Invoke(alc, new object[] { path });
            Activator.CreateInstance(copy.GetType("ConfLoading.Payload", true));
            alcType.GetMethod("Unload").Invoke(alc, null);
            return new WeakReference(copy);
        }

        static int Main()
        {
            var dynamic = AssemblyBuilder.DefineDynamicAssembly(new AssemblyName("ConfDynamic"), AssemblyBuilderAccess.Run);
            var type = dynamic.DefineDynamicModule("ConfDynamic").DefineType("ConfDynamic.Emitted", TypeAttributes.Public);
            Activator.CreateInstance(type.CreateType());

            var a = new Box<int>(1);
            var b = new Box<string>("two");
            var c = new Box<Box<int>>(a);

            WeakReference copy = LoadCollectibleCopy(typeof(Program).Assembly.Location);
            for (int i = 0; copy.IsAlive && i < 100; i++)
            {
                GC.Collect();
                GC.WaitForPendingFinalizers();
            }
            Console.WriteLine("loading scenario done " + a.Value + b.Value + c.Value.Value + " unloaded " + !copy.IsAlive);
            // Every assembly and module this process loaded: the live ones, and the collectible
            // copy with its one module. The profiler must have seen exactly these loads.
            int assemblies = copy.IsAlive ? 0 : 1, modules = assemblies;
            foreach (Assembly assembly in AppDomain.CurrentDomain.GetAssemblies())
            {
                assemblies++;
                modules += assembly.GetModules().Length;
            }
            Console.WriteLine("counted: assemblies " + assemblies + ", modules " + modules);
            return copy.IsAlive ? 1 : 100;
        }
    }

    public class Payload { }
}
