// Conformance scenario "classunload" (tests/conformance/classunload), after the runtime's
// src/tests/profiler/unittest/classload.cs and unloadlibrary.cs: a second copy of this assembly
// in a collectible AssemblyLoadContext creates a TestClass there (the default copy never touches
// the class), then the context is unloaded. Exits 100 once the copy is collected.
using System;
using System.Collections.Generic;
using System.Reflection;
using System.Runtime.CompilerServices;

namespace ConfClassUnload
{
    public class TestClass : MarshalByRefObject
    {
        static string staticString = "A static string";
        string[] instanceStrings;
        static int s_count;
        static List<TestClass> instances = new List<TestClass>();

        public TestClass()
        {
            instanceStrings = new string[100];
            for (int i = 0; i < instanceStrings.Length; i++)
            {
                instanceStrings[i] = staticString + (++s_count);
            }
            Console.WriteLine("TestClass constructed");
            instances.Add(this);
        }
    }

    static class Program
    {
        // AssemblyLoadContext(string, bool isCollectible) came with .NET Core 3.0; the compiler's
        // class library lacks it, so reflection reaches it.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static WeakReference LoadAndUnload(string path)
        {
            Type alcType = Type.GetType("System.Runtime.Loader.AssemblyLoadContext", true);
            object alc = alcType.GetConstructor(new[] { typeof(string), typeof(bool) })
                .Invoke(new object[] { "Collectible", true });
            var copy = (Assembly)alcType.GetMethod("LoadFromAssemblyPath").Invoke(alc, new object[] { path });
            object instance = Activator.CreateInstance(copy.GetType("ConfClassUnload.TestClass", true));
            Console.WriteLine(instance.GetHashCode() != 0);
            GC.Collect();
            alcType.GetMethod("Unload").Invoke(alc, null);
            return new WeakReference(copy);
        }

        static int Main()
        {
            WeakReference copy = LoadAndUnload(typeof(Program).Assembly.Location);
            for (int i = 0; copy.IsAlive && i < 100; i++)
            {
                GC.Collect();
                GC.WaitForPendingFinalizers();
            }
            Console.WriteLine("classunload scenario done, unloaded " + !copy.IsAlive);
            return copy.IsAlive ? 1 : 100;
        }
    }
}
