// Conformance scenario "eventpipe" (tests/conformance/eventpipe): an app whose EventSource
// "Conf-Events" writes a few self-describing events with known values, and "Conf-Manifest" a
// manifest-based one, read back by the profiler's in-process EventPipe session; calling Marker lets the profiler write its own
// provider's event (from JITCompilationStarted) into the same session. Exits 100.
using System;
using System.Diagnostics.Tracing;
using System.Runtime.CompilerServices;

namespace ConfEventPipe
{
    [EventData]
    public class Dimensions
    {
        public int Width { get; set; }
        public string Unit { get; set; }
    }

    [EventSource(Name = "Conf-Events")]
    public sealed class ConfEvents : EventSource
    {
        public static readonly ConfEvents Log = new ConfEvents();

        // Self-describing (TraceLogging) metadata, as the runtime's own EventPipe tests use.
        ConfEvents() : base(EventSourceSettings.EtwSelfDescribingEventFormat) { }

        [Event(1, Level = EventLevel.Informational)]
        public void Order(int id, string name, double price) { WriteEvent(1, id, name, price); }

        [Event(2, Level = EventLevel.Verbose)]
        public void Total(long cents, string currency, bool paid) { WriteEvent(2, cents, currency, paid); }

        [Event(3, Level = EventLevel.Informational)]
        public void Batch(char tag, int[] values, string note) { WriteEvent(3, tag, values, note); }

        [Event(4, Level = EventLevel.Informational)]
        public void Shape(Dimensions size) { WriteEvent(4, size); }
    }

    // Manifest-based (the default format): the same metadata format, but a bool takes four bytes.
    [EventSource(Name = "Conf-Manifest")]
    public sealed class ManifestEvents : EventSource
    {
        public static readonly ManifestEvents Log = new ManifestEvents();

        [Event(1, Level = EventLevel.Informational)]
        public void Flag(int id, bool on, ulong mask) { WriteEvent(1, id, on, mask); }
    }

    static class Program
    {
        [MethodImpl(MethodImplOptions.NoInlining)]
        static int Marker(int x) { return x + 1; }

        static int Main()
        {
            ConfEvents.Log.Order(42, "widget", 9.5);
            ConfEvents.Log.Total(-1234567890123L, "EUR", true);
            ConfEvents.Log.Batch('q', new int[] { 3, -1, 2147483647 }, "three");
            ConfEvents.Log.Shape(new Dimensions { Width = 640, Unit = "px" });
            ManifestEvents.Log.Flag(5, true, 0xFEDCBA9876543210UL);
            int m = Marker(1);
            Console.WriteLine("eventpipe scenario done " + m);
            return m == 2 ? 100 : 1;
        }
    }
}
