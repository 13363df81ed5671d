// Conformance scenario "dynamicoptimization" (tests/conformance/dynamicoptimization), after the
// runtime's src/tests/profiler/dynamicoptimization/DynamicOptimization.cs: copies of this assembly
// are loaded into collectible AssemblyLoadContexts before and after the profiler is asked (through
// conf_switch, a P/Invoke into its library) to turn COR_PRF_DISABLE_OPTIMIZATIONS, then
// COR_PRF_DISABLE_INLINING, on and off again. Each copy's Lib.Run is then JIT-compiled
// (RuntimeHelpers.PrepareMethod); an EventListener on the runtime's own provider reads the
// optimization tier of that compilation from its MethodLoadVerbose event and hands it to the
// profiler (conf_compiled), which writes what it saw. Exits 100.
using System;
using System.Diagnostics.Tracing;
using System.Reflection;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Threading;

namespace ConfDynamicOptimization
{
    public static class Lib
    {
        // Inlined into Run unless the JIT is told not to (by either flag).
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        public static int Inlinee() { return 100; }

        public static int Run() { return Inlinee(); }
    }

    // The tier of each JIT compilation of Lib.Run, from the runtime's MethodLoadVerbose event
    // (id 143): its MethodFlags carry the optimization tier in bits 7 to 9.
    sealed class JitListener : EventListener
    {
        readonly object gate = new object();
        int seen;
        int lastTier = -1;

        protected override void OnEventSourceCreated(EventSource source)
        {
            if (source.Name == "Microsoft-Windows-DotNETRuntime")
            {
                // The JIT keyword (0x10) at verbose level brings MethodLoadVerbose.
                EnableEvents(source, EventLevel.Verbose, (EventKeywords)0x10);
            }
        }

        protected override void OnEventWritten(EventWrittenEventArgs e)
        {
            if (e.EventId != 143 || e.PayloadNames == null)
            {
                return;
            }
            string ns = (string)e.Payload[e.PayloadNames.IndexOf("MethodNamespace")];
            string name = (string)e.Payload[e.PayloadNames.IndexOf("MethodName")];
            if (ns == "ConfDynamicOptimization.Lib" && name == "Run")
            {
                uint flags = Convert.ToUInt32(e.Payload[e.PayloadNames.IndexOf("MethodFlags")]);
                lock (gate)
                {
                    seen++;
                    lastTier = (int)((flags >> 7) & 7);
                    Monitor.PulseAll(gate);
                }
            }
        }

        public int Count { get { lock (gate) { return seen; } } }

        // The tier of the compilation after `before` were seen, or -1 if its event never came.
        public int TierAfter(int before)
        {
            lock (gate)
            {
                DateTime end = DateTime.UtcNow.AddSeconds(20);
                while (seen <= before && DateTime.UtcNow < end)
                {
                    Monitor.Wait(gate, 100);
                }
                return seen > before ? lastTier : -1;
            }
        }
    }

    static class Program
    {
        const string Lib = "libconformance.so";

        // which: 1 COR_PRF_DISABLE_OPTIMIZATIONS, 2 COR_PRF_DISABLE_INLINING; on: 1 or 0.
        [DllImport(Lib)]
        static extern int conf_switch(int which, int on);

        [DllImport(Lib)]
        static extern void conf_compiled(int copy, int tier);

        static Type alcType = Type.GetType("System.Runtime.Loader.AssemblyLoadContext", true);

        // AssemblyLoadContext(string, bool isCollectible) came with .NET Core 3.0; the compiler's
        // class library lacks it, so reflection reaches it.
        static Assembly LoadCopy(string name)
        {
            object alc = alcType.GetConstructor(new[] { typeof(string), typeof(bool) })
                .Invoke(new object[] { name, true });
            return (Assembly)alcType.GetMethod("LoadFromAssemblyPath")
                .Invoke(alc, new object[] { typeof(Program).Assembly.Location });
        }

        static void Compile(JitListener listener, Assembly copy, int index)
        {
            MethodInfo run = copy.GetType("ConfDynamicOptimization.Lib", true).GetMethod("Run");
            int before = listener.Count;
            RuntimeHelpers.PrepareMethod(run.MethodHandle);
            conf_compiled(index, listener.TierAfter(before));
            if ((int)run.Invoke(null, null) != 100)
            {
                throw new Exception("Run returned the wrong value");
            }
        }

        static void Round(JitListener listener, int which, int first)
        {
            Assembly before = LoadCopy("before " + which);
            conf_switch(which, 1);
            Assembly afterOn = LoadCopy("after on " + which);
            conf_switch(which, 0);
            Assembly afterOff = LoadCopy("after off " + which);
            Compile(listener, before, first);
            Compile(listener, afterOn, first + 1);
            Compile(listener, afterOff, first + 2);
        }

        static int Main()
        {
            using (var listener = new JitListener())
            {
                Round(listener, 1, 1);
                Round(listener, 2, 4);
            }
            Console.WriteLine("dynamicoptimization scenario done");
            return 100;
        }
    }
}
