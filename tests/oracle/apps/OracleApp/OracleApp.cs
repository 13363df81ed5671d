// OracleApp: drives every profiler callback CoreCLR raises on Linux, for the differential oracle
// (tests/runtime/oracle.rs), which loads the Rust and the C callback logger into this process and compares
// what they wrote. What it does, in order:
//   - threads: two named worker threads (one renamed while running, one name not ASCII);
//   - transitions: P/Invokes into libc (getpid) and a reverse P/Invoke (qsort calling a delegate);
//   - dynamic methods: DynamicMethods compiled, run, dropped and collected;
//   - exceptions: a filter that declines and one that accepts, finally blocks unwinding through
//     frames, a rethrow, a throw from a finally, a catch in a nested frame;
//   - EventPipe: an EventSource (its provider is created) writing an event;
//   - GC: pinned handles, a pinned-object-heap array, weak handles, a ConditionalWeakTable with
//     live entries, finalizable objects, a large object, induced gen0/1/2 and compacting collections;
//   - unloading: a copy of this assembly in a collectible AssemblyLoadContext makes an object,
//     then the context is unloaded and collected.
// With the argument `attach` it first prints "waiting for attach" and waits (up to 30 s) for the C
// logger to be attached (corprof-attach) and say so. With the argument `rejit` it then has the C logger request a ReJIT of RejitTarget (and of a token
// that is no method) and calls RejitTarget again; with `detach` it has the C logger ask to detach
// and waits for ProfilerDetachSucceeded. The C logger's library (libcorprof_oracle_c.so) must be
// on LD_LIBRARY_PATH for those. Prints "oracle app done" and exits 100.
using System;
using System.Collections.Generic;
using System.Diagnostics.Tracing;
using System.Reflection;
using System.Reflection.Emit;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Threading;

namespace OracleApp
{
    public sealed class OracleException : Exception
    {
        public OracleException(string message) : base(message) { }
    }

    public class Node
    {
        public Node Next;
        public int[] Data = new int[4];
    }

    class Finalizable
    {
        public static int Finalized;
        ~Finalizable() { Interlocked.Increment(ref Finalized); }
    }

    [EventSource(Name = "Oracle-Events")]
    sealed class OracleEvents : EventSource
    {
        public static readonly OracleEvents Log = new OracleEvents();

        [Event(1, Level = EventLevel.Informational)]
        public void Tick(int n) { WriteEvent(1, n); }
    }

    // Instantiated only in the collectible copy of this assembly, so its class unloads.
    public class Unloadable
    {
        public List<string> Items = new List<string> { "one", "two" };

        public static int Make()
        {
            return new Unloadable().Items.Count;
        }
    }

    static class Program
    {
        static int s_finallies;
        static int s_caught;

        [DllImport("libc.so.6", EntryPoint = "getpid")]
        static extern int GetPid();

        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        delegate int Compare(IntPtr a, IntPtr b);

        [DllImport("libc.so.6", EntryPoint = "qsort")]
        static extern void QSort(int[] items, UIntPtr count, UIntPtr size, Compare compare);

        // Exported by the C logger (tests/oracle/gen_logger.py), the profiler of the rejit and
        // detach runs: they request what only a profiler can.
        [DllImport("libcorprof_oracle_c.so")]
        static extern int oracle_request_rejit(int token, int badToken);

        [DllImport("libcorprof_oracle_c.so")]
        static extern int oracle_request_detach();

        [DllImport("libcorprof_oracle_c.so")]
        static extern int oracle_detached();

        [DllImport("libcorprof_oracle_c.so")]
        static extern int oracle_attached();

        static bool WaitForAttach()
        {
            Console.WriteLine("waiting for attach");
            Console.Out.Flush();
            for (int i = 0; i < 1200 && oracle_attached() == 0; i++)
            {
                Thread.Sleep(25);
            }
            return oracle_attached() == 1;
        }

        static int CompareInts(IntPtr a, IntPtr b)
        {
            return Marshal.ReadInt32(a).CompareTo(Marshal.ReadInt32(b));
        }

        static void Threads()
        {
            var first = new Thread(() =>
            {
                Thread.Sleep(1);
                Interlocked.Increment(ref s_caught);
            });
            first.Name = "oracle-worker";
            first.Start();
            first.Join();
            var second = new Thread(() => { Thread.CurrentThread.Name = "oracle-\u00e9\u2713"; });
            second.Start();
            second.Join();
            Interlocked.Decrement(ref s_caught);
        }

        static int Transitions()
        {
            int pid = GetPid();
            int[] items = { 5, 3, 9, 1 };
            Compare compare = CompareInts;
            QSort(items, (UIntPtr)items.Length, (UIntPtr)4, compare);
            GC.KeepAlive(compare);
            return pid > 0 && items[0] == 1 && items[3] == 9 ? 1 : 0;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int RunDynamic(int i)
        {
            var method = new DynamicMethod("Add" + i, typeof(int), new[] { typeof(int), typeof(int) }, typeof(Program).Module);
            ILGenerator il = method.GetILGenerator();
            il.Emit(OpCodes.Ldarg_0);
            il.Emit(OpCodes.Ldarg_1);
            il.Emit(OpCodes.Add);
            il.Emit(OpCodes.Ret);
            var add = (Func<int, int, int>)method.CreateDelegate(typeof(Func<int, int, int>));
            return add(i, 1);
        }

        static bool Decide(Exception e, bool answer)
        {
            return e is OracleException && answer;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Throw(int depth)
        {
            if (depth == 0)
            {
                throw new OracleException("depth 0");
            }
            try
            {
                Throw(depth - 1);
            }
            finally
            {
                s_finallies++;
            }
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void DeclinedThenCaught()
        {
            try
            {
                Throw(1);
            }
            catch (OracleException e) when (Decide(e, false))
            {
                s_caught += 100;
            }
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Rethrow()
        {
            try
            {
                Throw(0);
            }
            catch (OracleException)
            {
                s_caught++;
                throw;
            }
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void ThrowFromFinally()
        {
            try
            {
                Throw(0);
            }
            finally
            {
                throw new InvalidOperationException("from a finally");
            }
        }

        static void Exceptions()
        {
            try
            {
                Throw(3);
            }
            catch (OracleException e) when (Decide(e, true))
            {
                s_caught++;
            }
            try
            {
                DeclinedThenCaught();
            }
            catch (OracleException)
            {
                s_caught++;
            }
            try
            {
                Rethrow();
            }
            catch (OracleException)
            {
                s_caught++;
            }
            // The first pass finds this handler for the OracleException; the second pass runs the
            // finally, whose InvalidOperationException replaces it.
            try
            {
                ThrowFromFinally();
            }
            catch (Exception e)
            {
                if (e is InvalidOperationException)
                {
                    s_caught++;
                }
            }
        }

        // GC.AllocateArray<T>(int, bool pinned) (.NET 5+) and GC.Collect(int, GCCollectionMode,
        // bool, bool) are not in the compiler's class library: reflection finds them.
        static object AllocatePinned(int length)
        {
            MethodInfo generic = typeof(GC).GetMethod("AllocateArray");
            return generic == null ? null : generic.MakeGenericMethod(typeof(byte)).Invoke(null, new object[] { length, true });
        }

        static void CompactingCollect()
        {
            MethodInfo collect = typeof(GC).GetMethod("Collect",
                new[] { typeof(int), typeof(GCCollectionMode), typeof(bool), typeof(bool) });
            collect.Invoke(null, new object[] { 2, GCCollectionMode.Forced, true, true });
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void MakeFinalizables()
        {
            for (int i = 0; i < 3; i++)
            {
                new Finalizable();
            }
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Gc()
        {
            var table = new ConditionalWeakTable<object, Node>();
            var keys = new List<object>();
            for (int i = 0; i < 3; i++)
            {
                var key = new Node();
                keys.Add(key);
                table.Add(key, new Node { Next = key });
            }
            byte[] pinnedBytes = new byte[64];
            GCHandle pin = GCHandle.Alloc(pinnedBytes, GCHandleType.Pinned);
            GCHandle weak = GCHandle.Alloc(new Node(), GCHandleType.Weak);
            object onPinnedHeap = AllocatePinned(1000);
            byte[] large = new byte[100000];
            var kept = new List<Node>();
            for (int i = 0; i < 3000; i++)
            {
                var node = new Node();
                if (i % 3 == 0)
                {
                    kept.Add(node);
                }
            }
            MakeFinalizables();
            GC.Collect(0);
            GC.Collect(1);
            GC.Collect();
            GC.WaitForPendingFinalizers();
            CompactingCollect();
            pin.Free();
            weak.Free();
            Node value;
            int found = table.TryGetValue(keys[0], out value) ? 1 : 0;
            GC.KeepAlive(onPinnedHeap);
            GC.KeepAlive(large);
            GC.KeepAlive(kept);
            return found;
        }

        // AssemblyLoadContext(string, bool isCollectible) came with .NET Core 3.0; the compiler's
        // class library lacks it, so reflection reaches it.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static WeakReference LoadAndUnload(string path)
        {
            Type alcType = Type.GetType("System.Runtime.Loader.AssemblyLoadContext", true);
            object alc = alcType.GetConstructor(new[] { typeof(string), typeof(bool) })
                .Invoke(new object[] { "OracleCollectible", true });
            var copy = (Assembly)alcType.GetMethod("LoadFromAssemblyPath").Invoke(alc, new object[] { path });
            object made = copy.GetType("OracleApp.Unloadable", true).GetMethod("Make").Invoke(null, null);
            if ((int)made != 2)
            {
                throw new Exception("the collectible copy did not run");
            }
            alcType.GetMethod("Unload").Invoke(alc, null);
            return new WeakReference(copy);
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int RejitTarget(int x)
        {
            return 3 * x + 1;
        }

        static bool Rejit()
        {
            int before = RejitTarget(1);
            int token = typeof(Program).GetMethod("RejitTarget", BindingFlags.NonPublic | BindingFlags.Static).MetadataToken;
            // 0x0A000001 is a MemberRef token: not a method definition, so the runtime reports a ReJITError.
            int hr = oracle_request_rejit(token, 0x0A000001);
            int after = RejitTarget(2);
            Console.WriteLine("rejit: request 0x" + hr.ToString("x") + ", before " + before + ", after " + after);
            return hr >= 0 && before == 4 && after == 7;
        }

        static bool Detach()
        {
            int hr = oracle_request_detach();
            int waited = 0;
            for (; waited < 400 && oracle_detached() == 0; waited++)
            {
                Thread.Sleep(25);
            }
            Console.WriteLine("detach: request 0x" + hr.ToString("x") + ", detached " + oracle_detached() + " after " + waited + " waits");
            return hr >= 0 && oracle_detached() == 1;
        }

        static int Main(string[] args)
        {
            bool extras = true;
            if (Array.IndexOf(args, "attach") >= 0)
            {
                extras = WaitForAttach();
            }
            Threads();
            int transitions = Transitions();
            int dynamicSum = 0;
            for (int i = 0; i < 3; i++)
            {
                dynamicSum += RunDynamic(i);
            }
            Exceptions();
            OracleEvents.Log.Tick(1);
            int found = Gc();
            WeakReference copy = LoadAndUnload(typeof(Program).Assembly.Location);
            for (int i = 0; copy.IsAlive && i < 50; i++)
            {
                GC.Collect();
                GC.WaitForPendingFinalizers();
            }
            foreach (string arg in args)
            {
                extras &= arg == "rejit" ? Rejit() : arg == "detach" ? Detach() : arg == "attach";
            }
            bool ok = extras && transitions == 1 && dynamicSum == 6 && s_caught == 5 && s_finallies == 4 && found == 1 && !copy.IsAlive;
            Console.WriteLine("oracle app done: transitions " + transitions + ", dynamic " + dynamicSum + ", caught " + s_caught
                + ", finallies " + s_finallies + ", table " + found + ", unloaded " + !copy.IsAlive);
            return ok ? 100 : 1;
        }
    }
}
