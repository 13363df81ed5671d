// The app of tests/runtime/record_alloc.rs: allocates known numbers of objects of known types from known
// methods, so that the alloc mode's bytes per stack can be checked (exactly in exact mode, within
// sampling error in sampled mode). Arguments: how many objects of each kind (default 1000), and
// `wait`: print `ready <pid>`, wait for a line on stdin before allocating (an attach comes in
// between) and for another after printing `RecordAlloc done N` before exiting (the recording
// ends and detaches in between).
using System;
using System.Runtime.CompilerServices;

namespace RecordAllocApp
{
    class Node
    {
        public long A, B;
        public object Next;
    }

    static class Program
    {
        // Where the objects go, so the JIT cannot drop an allocation.
        static object sink;

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Bytes(int n)
        {
            for (int i = 0; i < n; i++) sink = new byte[1000];
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Nodes(int n)
        {
            for (int i = 0; i < n; i++) sink = new Node();
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Outer(int n) { Inner(n); }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Inner(int n)
        {
            for (int i = 0; i < n; i++) sink = new long[100];
        }

        static int Main(string[] args)
        {
            int n = args.Length > 0 ? int.Parse(args[0]) : 1000;
            bool wait = args.Length > 1 && args[1] == "wait";
            if (wait)
            {
                Console.WriteLine("ready " + System.Diagnostics.Process.GetCurrentProcess().Id);
                Console.ReadLine();
            }
            Bytes(n);
            Nodes(n);
            Outer(n);
            Console.WriteLine("RecordAlloc done " + n);
            if (wait) Console.ReadLine();
            return 0;
        }
    }
}
