// Conformance scenario "elttransitions" (tests/conformance/elttransitions), after the runtime's
// src/tests/profiler/elttransitions/elttransitions.cs: a forward P/Invoke into the profiler's
// library (conf_do_pinvoke) that calls back into managed code, first through a marshalled
// delegate, then (on .NET 5+) straight into an [UnmanagedCallersOnly] method through its native
// entry point. The test puts the library's folder on LD_LIBRARY_PATH. Exits 100.
using System;
using System.Reflection;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;

namespace System.Runtime.InteropServices
{
    // The compiler's class library predates this attribute; the runtime recognizes it by its
    // full name, whatever assembly defines it.
    [AttributeUsage(AttributeTargets.Method, Inherited = false)]
    sealed class UnmanagedCallersOnlyAttribute : Attribute
    {
#pragma warning disable 0649 // the runtime's fields, never set here
        public Type[] CallConvs;
        public string EntryPoint;
#pragma warning restore 0649
    }
}

namespace ConfEltTransitions
{
    static class Program
    {
        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        delegate int Callback(int x);

        [DllImport("libconformance.so")]
        static extern int conf_do_pinvoke(IntPtr callback, int x);

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int ThroughDelegate(int x) { return x + 1; }

        [UnmanagedCallersOnly]
        static int DoReversePInvoke(int x) { return x + 2; }

        static int Main()
        {
            Callback callback = ThroughDelegate;
            int viaDelegate = conf_do_pinvoke(Marshal.GetFunctionPointerForDelegate(callback), 13);
            GC.KeepAlive(callback);
            int viaEntryPoint = 15;
            if (Environment.Version.Major >= 5)
            {
                IntPtr entry = typeof(Program).GetMethod("DoReversePInvoke", BindingFlags.NonPublic | BindingFlags.Static)
                    .MethodHandle.GetFunctionPointer();
                viaEntryPoint = conf_do_pinvoke(entry, 13);
            }
            Console.WriteLine("elttransitions scenario done " + viaDelegate + " " + viaEntryPoint);
            return viaDelegate == 14 && viaEntryPoint == 15 ? 100 : 1;
        }
    }
}
