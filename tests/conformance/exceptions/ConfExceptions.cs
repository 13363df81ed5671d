// Conformance scenario "exceptions" (tests/conformance/exceptions): one exception each for a
// catch two frames up, a finally on the way out, a rethrow, a filter that declines then one that
// accepts, and a throw from inside a finally. Exits 100 when every case came out as written.
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

        // The runtime's exception/ExceptionTest.cs shape (its Foo and Bar): a throw from a finally nested in a finally, with no
        // exception in flight.
        [MethodImpl(MethodImplOptions.NoInlining)]
        static void ThrowInFinally()
        {
            try { }
            finally
            {
                try { }
                finally { throw new AppException(6); }
            }
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static int CatchFromFinally()
        {
            try { ThrowInFinally(); }
            catch (AppException e) { return e.Code; }
            return 0;
        }

        static int Main()
        {
            int sum = CatchTwoUp() + CatchFinally() + CatchRethrown() + Filtered() + CatchFromFinally();
            Console.WriteLine("exceptions scenario done " + sum + " finally " + finallyRan);
            return sum == 16 && finallyRan == 1 ? 100 : 1;
        }
    }
}
