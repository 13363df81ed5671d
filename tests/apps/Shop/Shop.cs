// The jit-tracer's signature test app: a namespace, a generic type, a nested type, arrays,
// byref and out parameters and a generic method, each member called from Main without loops
// so that every one is JIT-compiled on its own (the tracer's lines are asserted exactly).
using System;
using System.Runtime.CompilerServices;

namespace Shop
{
    public class Order
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public int Submit(string s) { return s.Length; }
    }

    public class Box<T>
    {
        private readonly T value;
        [MethodImpl(MethodImplOptions.NoInlining)]
        public Box(T v) { value = v; }
        [MethodImpl(MethodImplOptions.NoInlining)]
        public T Get() { return value; }
    }

    public static class Outer
    {
        public static class Inner
        {
            [MethodImpl(MethodImplOptions.NoInlining)]
            public static int[] Fill(int[] xs, string[,] grid)
            {
                xs[0] = grid.Length;
                return xs;
            }
        }
    }

    public static class Catalog
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void Count(ref int n, out string label)
        {
            n += 1;
            label = "counted";
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static T Pick<T>(T[] items) { return items[0]; }
    }

    public static class Program
    {
        public static int Main(string[] args)
        {
            int total = new Order().Submit("four");
            total += new Box<int>(3).Get();
            total += new Box<string>("five5").Get().Length;
            total += Outer.Inner.Fill(new int[1], new string[2, 3])[0];
            string label;
            Catalog.Count(ref total, out label);
            total += Catalog.Pick(new[] { 7 });
            total += Catalog.Pick(new[] { label }).Length;
            Console.WriteLine("Shop done " + total);
            return 0;
        }
    }
}
