// Conformance scenario "threads" (tests/conformance/threads): three named worker threads wait
// while the main thread induces a GC (a runtime suspension), then finish. Exits 100.
using System;
using System.Threading;

namespace ConfThreads
{
    static class Program
    {
        static int Main()
        {
            var started = new CountdownEvent(3);
            var go = new ManualResetEvent(false);
            var workers = new Thread[3];
            for (int i = 0; i < 3; i++)
            {
                workers[i] = new Thread(() => { started.Signal(); go.WaitOne(); });
                workers[i].Name = "conf-worker-" + (i + 1);
                workers[i].Start();
            }
            started.Wait();
            GC.Collect();
            go.Set();
            foreach (var w in workers)
            {
                w.Join();
            }
            Console.WriteLine("threads scenario done");
            return 100;
        }
    }
}
