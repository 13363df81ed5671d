// The jit-tracer's test app: one namespace, a nested type, a generic type and a custom
// exception, each reached exactly once so the profiler's lines can be asserted exactly.
using System;
using System.Runtime.CompilerServices;

namespace TracerApp
{
    public class OrderException : Exception
    {
        public OrderException(string message) : base(message) { }
    }

    public static class Outer
    {
        public static class Inner
        {
            [MethodImpl(MethodImplOptions.NoInlining)]
            public static int Work(int x) { return x * 2; }
        }
    }

    public class Box<T>
    {
        private readonly T value;
        [MethodImpl(MethodImplOptions.NoInlining)]
        public Box(T value) { this.value = value; }
        [MethodImpl(MethodImplOptions.NoInlining)]
        public T Get() { return value; }
    }

    public static class Orders
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static void Submit(int id)
        {
            if (id < 0) throw new OrderException("negative order id");
        }
    }

    public static class Program
    {
        public static int Main(string[] args)
        {
            int total = Outer.Inner.Work(21);
            var box = new Box<string>("boxed");
            total += box.Get().Length;
            try
            {
                Orders.Submit(-1);
            }
            catch (OrderException)
            {
                total += 1;
            }
            Console.WriteLine("Tracer done " + total);
            return 0;
        }
    }
}
