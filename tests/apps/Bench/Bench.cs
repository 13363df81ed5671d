// Bench: a callback-heavy C# program for corprof's benchmarks (scripts/bench) and reliability
// tests (tests/runtime/reliability.rs). Built by scripts/setup with mono's `mcs`, like Workload, and run
// on CoreCLR 3.1 and 8 through Bench.runtimeconfig.json.
//
// Usage: Bench [scale]    (1 <= scale <= 100000, default 1)
//
// Four phases, each one kind of profiler callback traffic; what the app does is fixed by S:
//   jit:        512 generic instantiations Combo<A,B,C>.Run over 8 structs, each compiled
//               once (a JITCompilationStarted/Finished and a few ClassLoads each);
//   alloc:      20000 * S small objects on the main thread (ObjectAllocated, when enabled);
//   exceptions: 200 * S BenchExceptions thrown 3 frames deep and caught on the main thread;
//   threads:    4 * S threads, started and joined 4 at a time, each throwing and catching 5
//               BenchExceptions and allocating 1000 objects while the others do the same.
// In total 200 * S + 20 * S exceptions are thrown, nothing else throws. Prints "Bench done" and
// exits 0; exits 3 if the phases' own checks fail, 2 on bad usage.
using System;
using System.Reflection;
using System.Runtime.CompilerServices;
using System.Threading;

namespace Bench
{
    public sealed class BenchException : Exception
    {
        public readonly int Index;

        public BenchException(int index) : base("bench exception " + index)
        {
            Index = index;
        }
    }

    public struct V0 { public byte A; }
    public struct V1 { public short A; }
    public struct V2 { public int A; }
    public struct V3 { public long A; }
    public struct V4 { public int A; public int B; }
    public struct V5 { public long A; public byte B; }
    public struct V6 { public double A; }
    public struct V7 { public long A; public long B; public long C; }

    // Every Combo<A,B,C> over value types gets its own compiled code.
    public static class Combo<A, B, C>
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static long Run(long seed)
        {
            A[] a = new A[1];
            B[] b = new B[2];
            C[] c = new C[3];
            return seed * 7 + a.Length + b.Length + c.Length;
        }
    }

    public sealed class Node
    {
        public Node Next;
        public long Value;
    }

    public static class Program
    {
        public const int Structs = 8;
        public const int AllocsPerScale = 20000;
        public const int ExceptionsPerScale = 200;
        public const int ThreadsPerScale = 4;
        public const int ThreadsAtOnce = 4;
        public const int ExceptionsPerThread = 5;
        public const int AllocsPerThread = 1000;

        static readonly Type[] structs = new Type[]
        {
            typeof(V0), typeof(V1), typeof(V2), typeof(V3),
            typeof(V4), typeof(V5), typeof(V6), typeof(V7),
        };

        static long CompileGenerics()
        {
            long acc = 0;
            var args = new object[1];
            for (int a = 0; a < Structs; a++)
                for (int b = 0; b < Structs; b++)
                    for (int c = 0; c < Structs; c++)
                    {
                        Type t = typeof(Combo<,,>).MakeGenericType(structs[a], structs[b], structs[c]);
                        args[0] = acc;
                        acc = (long)t.GetMethod("Run").Invoke(null, args);
                    }
            return acc;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static long Allocate(int count)
        {
            Node head = null;
            long sum = 0;
            for (int i = 0; i < count; i++)
            {
                head = new Node { Next = (i & 63) == 0 ? null : head, Value = i };
                sum += head.Value;
            }
            return sum;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Throw3(int index) { Throw2(index); }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Throw2(int index) { Throw1(index); }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Throw1(int index) { throw new BenchException(index); }

        static int ThrowAndCatch(int count)
        {
            int caught = 0;
            for (int i = 0; i < count; i++)
            {
                try
                {
                    Throw3(i);
                }
                catch (BenchException e)
                {
                    if (e.Index == i)
                        caught++;
                }
            }
            return caught;
        }

        static int threadsCaught;

        static void ThreadBody()
        {
            int caught = ThrowAndCatch(ExceptionsPerThread);
            Allocate(AllocsPerThread);
            Interlocked.Add(ref threadsCaught, caught);
        }

        static void RunThreads(int count)
        {
            for (int started = 0; started < count; started += ThreadsAtOnce)
            {
                int batch = Math.Min(ThreadsAtOnce, count - started);
                var threads = new Thread[batch];
                for (int i = 0; i < batch; i++)
                {
                    threads[i] = new Thread(ThreadBody);
                    threads[i].Start();
                }
                for (int i = 0; i < batch; i++)
                    threads[i].Join();
            }
        }

        public static int Main(string[] args)
        {
            int scale = 1;
            if (args.Length > 0 && (!int.TryParse(args[0], out scale) || scale < 1 || scale > 100000))
            {
                Console.Error.WriteLine("usage: Bench [scale]   (1 <= scale <= 100000)");
                return 2;
            }

            long check = CompileGenerics();
            check += Allocate(AllocsPerScale * scale);
            int caught = ThrowAndCatch(ExceptionsPerScale * scale);
            int threads = ThreadsPerScale * scale;
            RunThreads(threads);

            int expectedThreadCatches = threads * ExceptionsPerThread;
            if (caught != ExceptionsPerScale * scale || threadsCaught != expectedThreadCatches)
            {
                Console.Error.WriteLine(
                    "Bench: exception counts off: caught " + caught + " of " + ExceptionsPerScale * scale
                    + ", in threads " + threadsCaught + " of " + expectedThreadCatches);
                return 3;
            }
            if (Environment.GetEnvironmentVariable("BENCH_VERBOSE") != null)
                Console.Error.WriteLine("Bench: scale=" + scale + " check=" + check + " runtime=" + Environment.Version);
            Console.WriteLine("Bench done");
            return 0;
        }
    }
}
