// The Stacks test app (tests/runtime/stack.rs, tests/stack-profiler): a known call chain for stack walks.
//
// A thread named by its method, Sleeper, first calls Marker.SleeperReady (whose JIT compilation
// tells the profiler that thread's ID), then blocks until Main is done with the chain. Main then
// runs Main -> A -> B -> C -> Marker.Hit; the profiler walks the stack when Marker.Hit is about to
// be JIT-compiled, so the managed frames it must see are exactly C, B, A, Main. Every method of the
// chain is NoInlining, so each keeps a frame of its own.
using System;
using System.Runtime.CompilerServices;
using System.Threading;

namespace StacksApp
{
    static class Marker
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static int Hit(int x)
        {
            return x * 2;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void SleeperReady()
        {
        }
    }

    static class Program
    {
        static readonly object Gate = new object();
        static bool ready;
        static bool done;

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Sleeper()
        {
            Marker.SleeperReady();
            lock (Gate)
            {
                ready = true;
                Monitor.PulseAll(Gate);
                while (!done)
                {
                    Monitor.Wait(Gate);
                }
            }
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int A(int x)
        {
            return B(x + 1) + 1;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int B(int x)
        {
            return C(x + 1) + 1;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int C(int x)
        {
            return Marker.Hit(x + 1) + 1;
        }

        static int Main(string[] args)
        {
            var sleeper = new Thread(Sleeper);
            sleeper.Start();
            lock (Gate)
            {
                while (!ready)
                {
                    Monitor.Wait(Gate);
                }
            }

            int result = A(1);

            lock (Gate)
            {
                done = true;
                Monitor.PulseAll(Gate);
            }
            sleeper.Join();
            Console.WriteLine("Stacks done " + result);
            return 0;
        }
    }
}
