// Conformance scenario "reversestartup" (tests/conformance/reversestartup): started paused on a
// diagnostic port, with a profiler named through the port and two environment variables changed
// through it before startup goes on. Prints how managed code sees those variables; exits 100.
// With an argument, a file path, it first writes <path>.ready (once Main runs, so the runtime is
// started) and waits (at most 60 s) for that file, so that a test can talk to its diagnostics
// socket while it runs.
using System;
using System.IO;
using System.Threading;

namespace ConfReverseStartup
{
    static class Program
    {
        static string Show(string name)
        {
            string value = Environment.GetEnvironmentVariable(name);
            return value == null ? "(unset)" : value;
        }

        static int Main(string[] args)
        {
            if (args.Length == 1)
            {
                File.WriteAllText(args[0] + ".ready", "");
                for (int waited = 0; !File.Exists(args[0]); waited += 10)
                {
                    if (waited > 60000)
                    {
                        Console.Error.WriteLine("no " + args[0] + " after 60 s");
                        return 3;
                    }
                    Thread.Sleep(10);
                }
            }
            Console.WriteLine("ReverseServerTest_OverwriteMe=" + Show("ReverseServerTest_OverwriteMe"));
            Console.WriteLine("ReverseServerTest_ClearMe=" + Show("ReverseServerTest_ClearMe"));
            return 100;
        }
    }
}
