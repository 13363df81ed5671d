//! The conformance scenario "eventpipe" (tests/conformance/eventpipe): an in-process EventPipe
//! session reads the app's EventSource events and the profiler's own provider's event, decoded
//! with `corprof::eventpipe`, and a provider with a callback (EventPipeCreateProvider2) hears the
//! session enable and disable it. .NET 5 brought the EventPipe profiler API: 3.1.23 declines.

use crate::common::conformance::*;
use crate::common::*;

const EVENTPIPE: Scenario = Scenario { name: "eventpipe", app: "ConfEventPipe" };

/// Every line is a decoded event (metadata: ID, version, level, fields; then the payload) or
/// the result of a call; the profiler's Probe is delivered inside its `write` (synchronously),
/// and not at all once the session is stopped. The app exits 100 only when its own session read
/// exactly the Probes written with count 7 and 8, decoded by its own reader (see ConfEventPipe.cs).
#[test]
fn eventpipe_on_coreclr_8() {
    let _runtime = runtime_lock();
    check(
        &EVENTPIPE,
        "8",
        &[
            "session started",
            "Conf-Manifest added to the session",
            // EventPipeCreateProvider2 exists in 8.0.4 (the released .NET 8's Info14): the
            // session named the provider first, so it is enabled inside the create call, with
            // the session's keywords, level (Warning) and filter data.
            "Conf-Callback added to the session",
            "Conf-Callback heard: enabled true, level 3, keywords any 0xf0 all 0x0, filter [(\"key\", \"value\")]",
            "provider Conf-Callback created with a callback",
            "provider Conf-Profiler created, event Probe defined",
            // Self-describing events: TraceLogging numbers them itself, version 0.
            "Conf-Events/Order is event 6 v0 level 4: (id: I32, name: String, price: F64)",
            "Conf-Events/Order(id=42, name=\"widget\", price=9.5)",
            "Conf-Events/Total is event 7 v0 level 5: (cents: I64, currency: String, paid: Bool)",
            "Conf-Events/Total(cents=-1234567890123, currency=\"EUR\", paid=true)",
            "Conf-Events/Batch is event 8 v0 level 4: (tag: Char, values: I32[], note: String)",
            "Conf-Events/Batch(tag='q', values=[3, -1, 2147483647], note=\"three\")",
            // An [EventData] class passed whole: one unnamed object field.
            "Conf-Events/Shape is event 9 v0 level 4: (: {Width: I32, Unit: String})",
            "Conf-Events/Shape(={Width=640, Unit=\"px\"})",
            // Manifest-based: the [Event] ID, a four-byte bool.
            "Conf-Manifest/Flag is event 1 v0 level 4: (id: I32, on: Bool, mask: U64)",
            "Conf-Manifest/Flag(id=5, on=true, mask=18364758544493064720)",
            "Conf-Profiler/Probe is event 7 v1 level 0, from the profiler's provider: \
             (count: I32, label: String, items: I32[], ok: Bool, tags: String[])",
            "Conf-Profiler/Probe(count=7, label=\"from the profiler\", items=[1, -2, 2147483647], ok=true, \
             tags=[\"a\", \"\", \"é€\"])",
            "write Probe(count=9) inside its delivery: Err(\"CORPROF_E_UNSUPPORTED_CALL_SEQUENCE\")",
            "write Probe(count=7): Ok(())",
            "write with wrong values: Err(\"E_INVALIDARG\")",
            // Stopping the only session that enables it disables it, inside the stop call.
            "Conf-Callback heard: enabled false, level 3, keywords any 0xf0 all 0x0, filter [(\"key\", \"value\")]",
            "stop session: Ok(())",
            "write Probe(count=8): Ok(())",
            "shutdown",
        ],
    );
}

/// 3.1.23 has ICorProfilerInfo11 at most: starting a session and creating a provider (with a
/// callback too: EventPipeCreateProvider2 is Info14's) answer E_NOINTERFACE, and no event is
/// delivered.
#[test]
fn eventpipe_on_coreclr_3() {
    let _runtime = runtime_lock();
    let _row = ConformanceRow::new(EVENTPIPE.name, "3", "").not_applicable(
        "no ICorProfilerInfo12: event_pipe_start_session and event_pipe_create_provider answer E_NOINTERFACE",
    );
    run_scenario(
        &EVENTPIPE,
        "3",
        &[
            "start session: E_NOINTERFACE",
            "create provider: E_NOINTERFACE",
            "create provider with a callback: E_NOINTERFACE",
            "shutdown",
        ],
        &[],
    );
}
