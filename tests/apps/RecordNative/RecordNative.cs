// The app of corprof-record/tests/record_native.rs (`corprof record --native`): each mode spends
// its time where a native frame lies beneath a managed one.
//
//   RecordNative gc [ms]          a thread "Allocator" allocating for `ms` (default 1500) in
//                                 Program::Allocate, keeping a share of what it allocates alive,
//                                 so that collections (in libcoreclr.so, on that thread) have
//                                 work to do
//   RecordNative pinvoke [rounds] a thread "Native" calling corprof_spin_entry of
//                                 libcorprofnative.so (with symbols) from Program::Named, then of
//                                 libcorprofstripped.so (stripped) from Program::Stripped, each
//                                 `rounds` (default 3000) rounds; both built from spin.c by the
//                                 test, found on LD_LIBRARY_PATH
//   RecordNative unload [times]   a thread "Unload" that loads libcorprofunload.so (dlopen),
//                                 spins in it and unloads it (dlclose), `times` (default 200)
//                                 times: samples land in a library gone by the time they are
//                                 named
//
// Prints `RecordNative <mode> done` and exits 0; an unexpected exception prints it and the app
// exits 1.
using System;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Threading;

namespace RecordNativeApp
{
    class Node
    {
        public Node Next;
        public byte[] Payload;
    }

    static class Program
    {
        [DllImport("corprofnative", EntryPoint = "corprof_spin_entry")]
        static extern ulong NamedSpin(ulong rounds);

        [DllImport("corprofstripped", EntryPoint = "corprof_spin_entry")]
        static extern ulong StrippedSpin(ulong rounds);

        [DllImport("libc", EntryPoint = "dlopen")]
        static extern IntPtr DlOpen(string file, int mode);

        [DllImport("libc", EntryPoint = "dlsym")]
        static extern IntPtr DlSym(IntPtr handle, string name);

        [DllImport("libc", EntryPoint = "dlclose")]
        static extern int DlClose(IntPtr handle);

        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        delegate ulong SpinFn(ulong rounds);

        static Node[] live = new Node[50000];
        static ulong sink;

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Allocate(int ms)
        {
            var random = new Random(1);
            var started = DateTime.UtcNow;
            long made = 0;
            while ((DateTime.UtcNow - started).TotalMilliseconds < ms)
            {
                for (int i = 0; i < 10000; i++)
                {
                    var node = new Node { Payload = new byte[16 + random.Next(256)] };
                    node.Next = live[random.Next(live.Length)];
                    // One in four kept: collections find survivors to mark and move.
                    if ((i & 3) == 0) live[random.Next(live.Length)] = node;
                    made++;
                }
            }
            if (made == 0) throw new Exception("nothing allocated");
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Named(int rounds) { sink += NamedSpin((ulong)rounds); }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Stripped(int rounds) { sink += StrippedSpin((ulong)rounds); }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Unload(int times)
        {
            for (int i = 0; i < times; i++)
            {
                // RTLD_NOW | RTLD_LOCAL
                IntPtr lib = DlOpen("libcorprofunload.so", 2);
                if (lib == IntPtr.Zero) throw new Exception("dlopen libcorprofunload.so failed");
                IntPtr entry = DlSym(lib, "corprof_spin_entry");
                if (entry == IntPtr.Zero) throw new Exception("no corprof_spin_entry");
                var spin = (SpinFn)Marshal.GetDelegateForFunctionPointer(entry, typeof(SpinFn));
                sink += spin(20);
                if (DlClose(lib) != 0) throw new Exception("dlclose failed");
            }
        }

        static void OnThread(string name, ThreadStart work)
        {
            var thread = new Thread(work);
            thread.Name = name;
            thread.Start();
            thread.Join();
        }

        static int Main(string[] args)
        {
            string mode = args.Length > 0 ? args[0] : "gc";
            int n = args.Length > 1 ? int.Parse(args[1]) : -1;
            try
            {
                switch (mode)
                {
                    case "gc": OnThread("Allocator", () => Allocate(n < 0 ? 1500 : n)); break;
                    case "pinvoke":
                        OnThread("Native", () => { Named(n < 0 ? 3000 : n); Stripped(n < 0 ? 3000 : n); });
                        break;
                    case "unload": OnThread("Unload", () => Unload(n < 0 ? 200 : n)); break;
                    default: Console.WriteLine("unknown mode " + mode); return 2;
                }
            }
            catch (Exception e)
            {
                Console.WriteLine(e);
                return 1;
            }
            Console.WriteLine("RecordNative " + mode + " done");
            return 0;
        }
    }
}
