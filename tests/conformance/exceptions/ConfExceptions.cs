// Conformance scenario "exceptions" (tests/conformance/exceptions): one exception each for a
// catch two frames up, a finally on the way out, a rethrow, and a filter that declines then
// one that accepts. Exits 100 when every case came out as written.
using System;
using System.Runtime.CompilerServices;

namespace ConfExceptions
{
    class AppException : Exception
    {
        public int Code;
        public AppException(int code) { Code = code; }
    }

    static class Program
    {
        static int finallyRan;

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Thrower(int code) { throw new AppException(code); }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Middle(int code) { Thrower(code); }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int CatchTwoUp()
        {
            try { Middle(1); }
            catch (AppException e) { return e.Code; }
            return 0;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void WithFinally()
        {
            try { Thrower(2); }
            finally { finallyRan++; }
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int CatchFinally()
        {
            try { WithFinally(); }
            catch (AppException e) { return e.Code; }
            return 0;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Rethrower()
        {
            try { Thrower(3); }
            catch (AppException) { throw; }
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int CatchRethrown()
        {
            try { Rethrower(); }
            catch (AppException e) { return e.Code; }
            return 0;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static bool Accept(AppException e, int code) { return e.Code == code; }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Filtered()
        {
            try
            {
                try { Thrower(4); }
                catch (AppException e) when (Accept(e, 5)) { return -1; }
            }
            catch (AppException e) when (Accept(e, 4)) { return e.Code; }
            return 0;
        }

        static int Main()
        {
            int sum = CatchTwoUp() + CatchFinally() + CatchRethrown() + Filtered();
            Console.WriteLine("exceptions scenario done " + sum + " finally " + finallyRan);
            return sum == 10 && finallyRan == 1 ? 100 : 1;
        }
    }
}
