// Conformance scenario "rejitinlining" (tests/conformance/rejitinlining), after the runtime's
// src/tests/profiler/rejit/rejit.cs: InlineeTarget is inlined into TriggerDirectInlining and,
// through InlineeChain1, into TriggerInliningChain, and called through a delegate (its own
// compiled code). The profiler asks for a ReJIT of InlineeTarget with its inliners when
// TriggerReJIT is compiled, and for its revert when TriggerRevert is. Each round calls the three
// paths and prints what InlineeTarget logged. Exits 100 when the middle round sees only the
// ReJIT's text and the first and last only the original.
using System;
using System.Runtime.CompilerServices;
using System.Text;

namespace ConfRejitInlining
{
    static class Program
    {
        static StringBuilder output = new StringBuilder();

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Log(string line) { output.Append(line).Append('\n'); }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void TriggerReJIT() { Console.WriteLine("ReJIT requested"); }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void TriggerRevert() { Console.WriteLine("revert requested"); }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void TriggerDirectInlining() { InlineeTarget("direct"); }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void CallMethodWithoutInlining()
        {
            Action<string> call = InlineeTarget;
            call("delegate");
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void TriggerInliningChain() { InlineeChain1(); }

        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        static void InlineeChain1() { InlineeTarget("chain"); }

        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        static void InlineeTarget(string from) { Log("original target (" + from + ")"); }

        static string Round()
        {
            output.Clear();
            TriggerDirectInlining();
            CallMethodWithoutInlining();
            TriggerInliningChain();
            Console.Write(output.ToString());
            return output.ToString();
        }

        static int Main()
        {
            string before = Round();
            TriggerReJIT();
            string rejitted = Round();
            TriggerRevert();
            string reverted = Round();
            string original = "original target (direct)\noriginal target (delegate)\noriginal target (chain)\n";
            string replaced = "rejitted target (direct)\nrejitted target (delegate)\nrejitted target (chain)\n";
            return before == original && rejitted == replaced && reverted == original ? 100 : 1;
        }
    }
}
