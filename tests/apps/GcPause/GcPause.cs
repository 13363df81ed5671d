// The app of scripts/bench-gc-mask: what a profiler's GC event mask costs the app's GC pauses.
// Keeps a graph of 200,000 small objects alive, then forces 40 full GCs, timing each
// GC.Collect() with a Stopwatch; prints `gc_ms=<total> gcs=<collections of gen 2>`.
using System;
using System.Diagnostics;

namespace GcPauseApp
{
    class Node
    {
        public Node Next;
        public object Payload;
    }

    static class Program
    {
        static int Main(string[] args)
        {
            int objects = args.Length > 0 ? int.Parse(args[0]) : 200000;
            int collections = args.Length > 1 ? int.Parse(args[1]) : 40;
            Node head = null;
            for (int i = 0; i < objects; i++) head = new Node { Next = head, Payload = new byte[16] };
            GC.Collect();
            int before = GC.CollectionCount(2);
            var watch = new Stopwatch();
            for (int i = 0; i < collections; i++)
            {
                watch.Start();
                GC.Collect();
                watch.Stop();
            }
            int gcs = GC.CollectionCount(2) - before;
            GC.KeepAlive(head);
            Console.WriteLine("gc_ms=" + watch.Elapsed.TotalMilliseconds.ToString("F1") + " gcs=" + gcs);
            return 0;
        }
    }
}
