// Conformance scenario "eltslowpath" (tests/conformance/eltslowpath), after the runtime's
// src/tests/profiler/elt/slowpatheltenter.cs and slowpatheltleave.cs (their methods are in
// slowpathcommon.cs): methods taking and returning primitives, a string, and structs that the
// System V ABI passes in integer registers, in floating-point registers, split across both, or
// on the stack. Main checks every result, so a hook that disturbed an argument or a return value
// shows as a wrong one. Exits 100 when all are right.
using System;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;

namespace ConfEltSlowPath
{
    [StructLayout(LayoutKind.Sequential)]
    public struct IntegerStruct { public int x, y; public override string ToString() { return x + " " + y; } }

    [StructLayout(LayoutKind.Sequential)]
    public struct Fp32x2Struct { public float x, y; public override string ToString() { return x + " " + y; } }

    [StructLayout(LayoutKind.Sequential)]
    public struct Fp32x3Struct { public float x, y, z; public override string ToString() { return x + " " + y + " " + z; } }

    [StructLayout(LayoutKind.Sequential)]
    public struct Fp32x4Struct { public float x, y, z, w; public override string ToString() { return x + " " + y + " " + z + " " + w; } }

    [StructLayout(LayoutKind.Sequential)]
    public struct Fp64x2Struct { public double x, y; public override string ToString() { return x + " " + y; } }

    [StructLayout(LayoutKind.Sequential)]
    public struct Fp64x3Struct { public double x, y, z; public override string ToString() { return x + " " + y + " " + z; } }

    [StructLayout(LayoutKind.Sequential)]
    public struct Fp64x4Struct { public double x, y, z, w; public override string ToString() { return x + " " + y + " " + z + " " + w; } }

    // An int and a double: one eightbyte in an integer register, one in a floating-point one.
    [StructLayout(LayoutKind.Sequential)]
    public struct MixedStruct { public int x; public double d; public override string ToString() { return x + " " + d; } }

    // Larger than two eightbytes: passed on the stack.
    [StructLayout(LayoutKind.Sequential)]
    public struct LargeStruct
    {
        public int x0; public double d0; public int x1; public double d1;
        public int x2; public double d2; public int x3; public double d3;
        public override string ToString() { return x0 + " " + d0 + " " + x1 + " " + d1 + " " + x2 + " " + d2 + " " + x3 + " " + d3; }
    }

    public static class Funcs
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        public static string SimpleArgsFunc(int x, float y, string s) { return s == "Hello, test!" && x == -123 && y == -4.3f ? "Hello from SimpleArgsFunc!" : "wrong arguments"; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static MixedStruct MixedStructFunc(MixedStruct s) { s.x = 4; return s; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static int LargeStructFunc(LargeStruct s) { return s.x3 + (int)s.d2; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static IntegerStruct IntegerStructFunc(IntegerStruct s) { s.x = 21; return s; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static Fp32x2Struct Fp32x2StructFunc(Fp32x2Struct s) { s.y = 2; return s; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static Fp32x3Struct Fp32x2StructFp32x3StructFunc(Fp32x2Struct a, Fp32x3Struct b) { b.x += a.x; return b; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static Fp32x3Struct Fp32x3StructFunc(Fp32x3Struct s) { s.z = 3; return s; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static Fp32x2Struct Fp32x3StructFp32x2StructFunc(Fp32x3Struct a, Fp32x2Struct b) { b.y += a.z; return b; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static Fp32x3Struct Fp32x3StructSingleFp32x3StructSingleFunc(Fp32x3Struct a, float f, Fp32x3Struct b, float g) { b.x = f; b.y = g; return b; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static Fp32x4Struct Fp32x4StructFunc(Fp32x4Struct s) { s.w = 4; return s; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static Fp32x4Struct Fp32x4StructFp32x4StructFunc(Fp32x4Struct a, Fp32x4Struct b) { b.x = a.w; return b; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static Fp64x2Struct Fp64x2StructFunc(Fp64x2Struct s) { s.y = 2; return s; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static Fp64x3Struct Fp64x2StructFp64x3StructFunc(Fp64x2Struct a, Fp64x3Struct b) { b.x += a.x; return b; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static Fp64x3Struct Fp64x3StructFunc(Fp64x3Struct s) { s.z = 3; return s; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static Fp64x2Struct Fp64x3StructFp64x2StructFunc(Fp64x3Struct a, Fp64x2Struct b) { b.y += a.z; return b; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static Fp64x3Struct Fp64x3StructDoubleFp64x3StructDoubleFunc(Fp64x3Struct a, double f, Fp64x3Struct b, double g) { b.x = f; b.y = g; return b; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static Fp64x4Struct Fp64x4StructFunc(Fp64x4Struct s) { s.w = 4; return s; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static Fp64x4Struct Fp64x4StructFp64x4StructFunc(Fp64x4Struct a, Fp64x4Struct b) { b.x = a.w; return b; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        public static double DoubleRetFunc() { return 13.0; }
    }

    static class Program
    {
        static int wrong;

        static void Expect(string what, object got, string expected)
        {
            string text = got.ToString();
            if (text != expected)
            {
                Console.WriteLine(what + " returned " + text + ", expected " + expected);
                wrong++;
            }
        }

        static int Main()
        {
            var mixed = new MixedStruct { x = 1, d = 1.0 };
            var large = new LargeStruct { x0 = 0, d0 = 0.5, x1 = 1, d1 = 1.5, x2 = 2, d2 = 2.5, x3 = 3, d3 = 3.5 };
            var ints = new IntegerStruct { x = 14, y = 256 };
            var f2 = new Fp32x2Struct { x = 1.25f, y = 3.5f };
            var f3 = new Fp32x3Struct { x = 6.5f, y = 10.25f, z = 13.75f };
            var f4 = new Fp32x4Struct { x = 15.5f, y = 19.25f, z = 22.75f, w = 26.125f };
            var d2 = new Fp64x2Struct { x = 1.2, y = 3.5 };
            var d3 = new Fp64x3Struct { x = 6.7, y = 10.11, z = 13.14 };
            var d4 = new Fp64x4Struct { x = 15.17, y = 19.21, z = 22.23, w = 26.29 };

            Expect("SimpleArgsFunc", Funcs.SimpleArgsFunc(-123, -4.3f, "Hello, test!"), "Hello from SimpleArgsFunc!");
            Expect("MixedStructFunc", Funcs.MixedStructFunc(mixed), "4 1");
            Expect("LargeStructFunc", Funcs.LargeStructFunc(large), "5");
            Expect("IntegerStructFunc", Funcs.IntegerStructFunc(ints), "21 256");
            Expect("Fp32x2StructFunc", Funcs.Fp32x2StructFunc(f2), "1.25 2");
            Expect("Fp32x2StructFp32x3StructFunc", Funcs.Fp32x2StructFp32x3StructFunc(f2, f3), "7.75 10.25 13.75");
            Expect("Fp32x3StructFunc", Funcs.Fp32x3StructFunc(f3), "6.5 10.25 3");
            Expect("Fp32x3StructFp32x2StructFunc", Funcs.Fp32x3StructFp32x2StructFunc(f3, f2), "1.25 17.25");
            Expect("Fp32x3StructSingleFp32x3StructSingleFunc", Funcs.Fp32x3StructSingleFp32x3StructSingleFunc(f3, 1.5f, f3, 3.5f), "1.5 3.5 13.75");
            Expect("Fp32x4StructFunc", Funcs.Fp32x4StructFunc(f4), "15.5 19.25 22.75 4");
            Expect("Fp32x4StructFp32x4StructFunc", Funcs.Fp32x4StructFp32x4StructFunc(f4, f4), "26.125 19.25 22.75 26.125");
            Expect("Fp64x2StructFunc", Funcs.Fp64x2StructFunc(d2), "1.2 2");
            Expect("Fp64x2StructFp64x3StructFunc", Funcs.Fp64x2StructFp64x3StructFunc(d2, d3), "7.9 10.11 13.14");
            Expect("Fp64x3StructFunc", Funcs.Fp64x3StructFunc(d3), "6.7 10.11 3");
            Expect("Fp64x3StructFp64x2StructFunc", Funcs.Fp64x3StructFp64x2StructFunc(d3, d2), "1.2 16.64");
            Expect("Fp64x3StructDoubleFp64x3StructDoubleFunc", Funcs.Fp64x3StructDoubleFp64x3StructDoubleFunc(d3, 1.5, d3, 3.5), "1.5 3.5 13.14");
            Expect("Fp64x4StructFunc", Funcs.Fp64x4StructFunc(d4), "15.17 19.21 22.23 4");
            Expect("Fp64x4StructFp64x4StructFunc", Funcs.Fp64x4StructFp64x4StructFunc(d4, d4), "26.29 19.21 22.23 26.29");
            Expect("DoubleRetFunc", Funcs.DoubleRetFunc(), "13");
            Console.WriteLine("eltslowpath scenario done, wrong results: " + wrong);
            return wrong == 0 ? 100 : 1;
        }
    }
}
