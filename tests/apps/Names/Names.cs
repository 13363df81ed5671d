// The Names test app (tests/runtime/names.rs, tests/names-profiler): known generic frames and named
// threads for corprof's names and threads modules.
//
// Probe.Fire(tag) throws and catches a ProbeException; the profiler walks the stack in its
// ExceptionThrown callback and names every frame. Fire is reached from: List<int>'s constructor
// (a collection whose CopyTo fires), Dictionary<string, int>.Add (a comparer whose GetHashCode
// fires: shared code, the exact class only the frame knows), a method of a nested generic type
// Outer<int>.Inner<string>, and a generic method Util.Make<T> with a value and a reference type.
// Two threads, named before and after they start, fire with their own names and print their OS
// thread ids (gettid) for the profiler's table to match.
using System;
using System.Collections;
using System.Collections.Generic;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Threading;

namespace NamesApp
{
    class ProbeException : Exception
    {
        public ProbeException(string tag) : base(tag) { }
    }

    static class Probe
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void Fire(string tag)
        {
            try { throw new ProbeException(tag); }
            catch (ProbeException) { }
        }
    }

    // A collection whose CopyTo (called by List<T>'s constructor) fires.
    class Firing : ICollection<int>
    {
        public int Count { get { return 1; } }
        public bool IsReadOnly { get { return true; } }
        [MethodImpl(MethodImplOptions.NoInlining)]
        public void CopyTo(int[] array, int index) { Probe.Fire("list"); array[index] = 7; }
        public void Add(int item) { }
        public void Clear() { }
        public bool Contains(int item) { return false; }
        public bool Remove(int item) { return false; }
        public IEnumerator<int> GetEnumerator() { yield return 7; }
        IEnumerator IEnumerable.GetEnumerator() { return GetEnumerator(); }
    }

    class FiringComparer : IEqualityComparer<string>
    {
        public bool Equals(string a, string b) { return a == b; }
        [MethodImpl(MethodImplOptions.NoInlining)]
        public int GetHashCode(string s) { Probe.Fire("dictionary"); return s.Length; }
    }

    class Outer<T>
    {
        public class Inner<U>
        {
            [MethodImpl(MethodImplOptions.NoInlining)]
            public int Run(T t, U u) { Probe.Fire("nested"); return 1; }
        }
    }

    static class Util
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static T Make<T>(T value) { Probe.Fire("generic-method"); return value; }
    }

    static class Program
    {
        [DllImport("libc", EntryPoint = "syscall")]
        static extern long Syscall(long number);

        const long SYS_gettid = 186; // x86-64 Linux

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Worker()
        {
            Console.WriteLine("tid " + Thread.CurrentThread.Name + " " + Syscall(SYS_gettid));
            Probe.Fire("thread");
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void RenamedWorker()
        {
            Thread.CurrentThread.Name = "worker-B";
            Worker();
        }

        static int Main()
        {
            var list = new List<int>(new Firing());
            var dict = new Dictionary<string, int>(new FiringComparer());
            dict.Add("one", 1);
            int n = new Outer<int>.Inner<string>().Run(1, "x");
            int m = Util.Make<int>(2) + Util.Make<string>("s").Length;

            var a = new Thread(Worker);
            a.Name = "worker-A";
            a.Start();
            a.Join();
            var b = new Thread(RenamedWorker);
            b.Start();
            b.Join();
            Console.WriteLine("Names done " + (list.Count + dict.Count + n + m));
            return 0;
        }
    }
}
