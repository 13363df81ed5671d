// The app of tests/runtime/record_alloc.rs's totals: allocates a known number of bytes, so that
// the alloc mode's total can be checked against it and anything else it reports is seen, and
// allocates inside an event source of its own, so that allocations under
// System.Diagnostics.Tracing frames the app itself called are seen to be kept.
//
//   RecordAllocTotal <objects> plain|eventsource
//
// plain: <objects> byte[1000] (1024 bytes each on x64, header included) from Program::Allocate.
// eventsource: <objects> calls of AppEvents::Chunk, which allocates one byte[1000] and writes an
// event that the app's own listener receives (the event source allocates the event's arguments
// for it). Prints `RecordAllocTotal done <objects>`.
using System;
using System.Diagnostics.Tracing;
using System.Runtime.CompilerServices;

namespace RecordAllocTotalApp
{
    [EventSource(Name = "RecordAllocTotal-App")]
    sealed class AppEvents : EventSource
    {
        public static readonly AppEvents Log = new AppEvents();
        public static object Sink;

        [Event(1, Level = EventLevel.Informational)]
        [MethodImpl(MethodImplOptions.NoInlining)]
        public void Chunk(int i)
        {
            Sink = new byte[1000];
            WriteEvent(1, i);
        }
    }

    sealed class Listener : EventListener
    {
        public int Events;

        protected override void OnEventSourceCreated(EventSource source)
        {
            if (source.Name == "RecordAllocTotal-App") EnableEvents(source, EventLevel.Verbose);
        }

        protected override void OnEventWritten(EventWrittenEventArgs e)
        {
            Events++;
        }
    }

    static class Program
    {
        public static object Sink;

        [MethodImpl(MethodImplOptions.NoInlining)]
        static void Allocate(int n)
        {
            for (int i = 0; i < n; i++) Sink = new byte[1000];
        }

        static int Main(string[] args)
        {
            int n = int.Parse(args[0]);
            if (args[1] == "plain")
            {
                Allocate(n);
            }
            else
            {
                var listener = new Listener();
                for (int i = 0; i < n; i++) AppEvents.Log.Chunk(i);
                if (listener.Events != n) throw new Exception("the listener got " + listener.Events + " events of " + n);
                listener.Dispose();
            }
            Console.WriteLine("RecordAllocTotal done " + n);
            return 0;
        }
    }
}
