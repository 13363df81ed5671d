// Conformance scenario "eventpipe" (tests/conformance/eventpipe): an app whose EventSource
// "Conf-Events" writes a few self-describing events with known values, and "Conf-Manifest" a
// manifest-based one, read back by the profiler's in-process EventPipe session; calling Marker lets the profiler write its own
// provider's event (from JITCompilationStarted) into the same session. On .NET 5+ the app reads
// that provider's events back itself, through an EventPipe session of its own, and decodes their
// payloads by the EventPipe format (not with corprof's code): exits 100 only when it read exactly
// the two Probe events the profiler writes (count 7, then count 8), with their values.
using System;
using System.Collections.Generic;
using System.Diagnostics.Tracing;
using System.Reflection;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using System.Text;
using System.Threading;

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

    // An EventPipe session of the app's own on the profiler's provider "Conf-Profiler", read the
    // way the runtime's EventListener dispatcher reads its session: CoreLib's internal
    // EventPipeInternal (reached by reflection: an EventListener sees only managed EventSources,
    // and the profiler's provider is native).
    static class ProfilerEvents
    {
        const BindingFlags Internal = BindingFlags.Static | BindingFlags.NonPublic | BindingFlags.Public;
        static readonly Assembly CoreLib = typeof(EventSource).Assembly;
        static readonly Type Pipe = CoreLib.GetType("System.Diagnostics.Tracing.EventPipeInternal", true);

        public static ulong Start()
        {
            Type config = CoreLib.GetType("System.Diagnostics.Tracing.EventPipeProviderConfiguration", true);
            Type format = CoreLib.GetType("System.Diagnostics.Tracing.EventPipeSerializationFormat", true);
            object provider = Activator.CreateInstance(config, BindingFlags.Instance | BindingFlags.NonPublic | BindingFlags.Public,
                null, new object[] { "Conf-Profiler", ulong.MaxValue, 5u, null }, null);
            Array providers = Array.CreateInstance(config, 1);
            providers.SetValue(provider, 0);
            foreach (MethodInfo m in Pipe.GetMethods(Internal))
            {
                ParameterInfo[] p = m.GetParameters();
                if (m.Name == "Enable" && p.Length == 4 && p[3].ParameterType == config.MakeArrayType())
                {
                    // No output file: a session read in process; NetTrace; 16 MB of buffers.
                    return (ulong)m.Invoke(null, new object[] { null, Enum.ToObject(format, 1), 16u, providers });
                }
            }
            throw new MissingMethodException("EventPipeInternal.Enable");
        }

        public static void Stop(ulong session)
        {
            Pipe.GetMethod("Disable", Internal).Invoke(null, new object[] { session });
        }

        // The payloads of the session's events with this ID, in order, for up to five seconds
        // until `wanted` came.
        public static List<byte[]> Read(ulong session, uint eventId, int wanted)
        {
            MethodInfo next = Pipe.GetMethod("GetNextEvent", Internal);
            // EventPipeEventInstanceData: ProviderID (8), EventID (4), ThreadID (4), TimeStamp (8),
            // ActivityId (16), ChildActivityId (16), Payload (8), PayloadLength (4), padding.
            IntPtr data = Marshal.AllocHGlobal(128);
            var payloads = new List<byte[]>();
            try
            {
                DateTime until = DateTime.UtcNow.AddSeconds(5);
                while (payloads.Count < wanted && DateTime.UtcNow < until)
                {
                    if (!(bool)next.Invoke(null, new object[] { session, data }))
                    {
                        Thread.Sleep(10);
                        continue;
                    }
                    if ((uint)Marshal.ReadInt32(data, 8) != eventId)
                    {
                        continue;
                    }
                    var payload = new byte[Marshal.ReadInt32(data, 64)];
                    Marshal.Copy(Marshal.ReadIntPtr(data, 56), payload, 0, payload.Length);
                    payloads.Add(payload);
                }
            }
            finally
            {
                Marshal.FreeHGlobal(data);
            }
            return payloads;
        }

        // Probe's payload by the EventPipe format: count (int32), label (UTF-16, NUL-terminated),
        // items (uint16 count, int32 each), ok (a four-byte BOOL), tags (uint16 count, strings).
        public static string Decode(byte[] b)
        {
            int at = 0;
            int count = BitConverter.ToInt32(b, at);
            at += 4;
            string label = Text(b, ref at);
            var items = new List<string>();
            for (int n = BitConverter.ToUInt16(b, (at += 2) - 2); n > 0; n--, at += 4)
            {
                items.Add(BitConverter.ToInt32(b, at).ToString());
            }
            int ok = BitConverter.ToInt32(b, at);
            at += 4;
            var tags = new List<string>();
            for (int n = BitConverter.ToUInt16(b, (at += 2) - 2); n > 0; n--)
            {
                tags.Add("\"" + Text(b, ref at) + "\"");
            }
            return "count=" + count + ", label=\"" + label + "\", items=[" + string.Join(", ", items.ToArray()) + "], ok=" + ok
                + ", tags=[" + string.Join(", ", tags.ToArray()) + "]" + (at == b.Length ? "" : ", " + (b.Length - at) + " bytes left over");
        }

        static string Text(byte[] b, ref int at)
        {
            int start = at;
            while (BitConverter.ToUInt16(b, at) != 0)
            {
                at += 2;
            }
            string text = Encoding.Unicode.GetString(b, start, at - start);
            at += 2;
            return text;
        }
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
            bool readBack = Environment.Version.Major >= 5;
            ulong session = readBack ? ProfilerEvents.Start() : 0;
            int m = Marker(1);
            Console.WriteLine("eventpipe scenario done " + m);
            if (!readBack)
            {
                return m == 2 ? 100 : 1;
            }
            // The profiler writes Probe (event 7) with count 7, then, once its own session is
            // stopped, with count 8; this session still listens.
            var read = new List<string>();
            foreach (byte[] payload in ProfilerEvents.Read(session, 7, 2))
            {
                read.Add(ProfilerEvents.Decode(payload));
            }
            ProfilerEvents.Stop(session);
            string tail = ", label=\"from the profiler\", items=[1, -2, 2147483647], ok=1, tags=[\"a\", \"\", \"\u00e9\u20ac\"]";
            string[] expected = { "count=7" + tail, "count=8" + tail };
            foreach (string r in read)
            {
                Console.WriteLine("the app read Probe(" + r + ")");
            }
            bool same = read.Count == expected.Length && read[0] == expected[0] && read[1] == expected[1];
            return m == 2 && same ? 100 : 1;
        }
    }
}
