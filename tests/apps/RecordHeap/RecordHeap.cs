// The app of corprof-record/tests/heap.rs: known object graphs for `corprof record --mode heap`.
//
// Program.holder → Holder, which alone holds a complete binary tree of 1000 Node objects
// (node i has children 2i+1 and 2i+2) and a Blob with a 12345-byte payload; Nodes 5 and 700
// also refer to a Shared object that a static holds as well (so the Holder does not retain it).
// Program.chain holds a linked list of 500 Link objects. Without arguments everything stays alive
// to the end. With an argument N the app sleeps N milliseconds after building and then drops the
// Holder and the chain, so a snapshot taken during the sleep (--at-ms) sees them and one taken at
// the end does not; with the argument `until-snapshot` it waits instead for the snapshot, which
// the profiler takes in a full GC it forces (this app makes none once built): until
// GC.CollectionCount(2) grows, at most two minutes (a blocking GC suspends this thread, so the
// walk is over when it sees the count). With a second argument M it also keeps M Filler objects
// in a list (for scripts/bench-heap).
using System;
using System.Collections.Generic;
using System.Runtime.CompilerServices;
using System.Threading;

namespace RecordHeapApp
{
    class Node { public Node Left, Right; public Shared Extra; public int Id; }
    class Shared { public long Value = 7; }
    class Blob { public byte[] Data; }
    class Holder { public Node Root; public Blob Payload; }
    class Link { public Link Next; public int Id; }
    class Filler { public Filler Next; public object Tag; public long A; }

    static class Program
    {
        static Holder holder;
        static Shared shared;
        static Link chain;
        static List<Filler> fillers;

        static Node Build(int i, int count)
        {
            if (i >= count) return null;
            var n = new Node { Id = i };
            n.Left = Build(2 * i + 1, count);
            n.Right = Build(2 * i + 2, count);
            if (i == 5 || i == 700) n.Extra = shared;
            return n;
        }

        // Not inlined, so that no stack slot of Main still refers to what it built when the
        // snapshot is taken during Main's sleep.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static void BuildAll(string[] args)
        {
            shared = new Shared();
            holder = new Holder { Root = Build(0, 1000), Payload = new Blob { Data = new byte[12345] } };
            for (int i = 0; i < 500; i++) chain = new Link { Next = chain, Id = i };
            if (args.Length > 1)
            {
                int m = int.Parse(args[1]);
                fillers = new List<Filler>(m);
                Filler previous = null;
                for (int i = 0; i < m; i++)
                {
                    // Every third filler links to the one before, every fifth tags a shared node.
                    var f = new Filler { A = i, Next = i % 3 == 0 ? previous : null, Tag = i % 5 == 0 ? (object)holder : null };
                    fillers.Add(f);
                    previous = f;
                }
            }
        }

        static int Main(string[] args)
        {
            BuildAll(args);
            Console.WriteLine("built");
            if (args.Length > 0)
            {
                if (args[0] == "until-snapshot")
                {
                    int before = GC.CollectionCount(2);
                    for (int waited = 0; GC.CollectionCount(2) == before && waited < 120000; waited += 10)
                        Thread.Sleep(10);
                }
                else
                {
                    Thread.Sleep(int.Parse(args[0]));
                }
                holder = null;
                chain = null;
            }
            GC.KeepAlive(holder);
            GC.KeepAlive(chain);
            GC.KeepAlive(fillers);
            return 0;
        }
    }
}
