// Conformance scenario "transitions" (tests/conformance/transitions): a P/Invoke into a function
// the profiler's own library exports, and one that calls back into managed code through a
// marshalled delegate. The test puts the library's folder on LD_LIBRARY_PATH. Exits 100.
using System;
using System.Runtime.InteropServices;

namespace ConfTransitions
{
    static class Program
    {
        [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
        delegate int Callback(int x);

        [DllImport("libconformance.so")]
        static extern int conf_add(int a, int b);

        [DllImport("libconformance.so")]
        static extern int conf_call_back(Callback callback, int x);

        static int Twice(int x) { return 2 * x; }

        static int Main()
        {
            int sum = conf_add(40, 2);
            Callback callback = Twice;
            int twice = conf_call_back(callback, 21);
            GC.KeepAlive(callback);
            Console.WriteLine("transitions scenario done " + sum + " " + twice);
            return sum == 42 && twice == 42 ? 100 : 1;
        }
    }
}
