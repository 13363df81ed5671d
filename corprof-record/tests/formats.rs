//! Each output format written from a small known profile and parsed back: folded re-read,
//! speedscope checked against its schema's required fields and totals, pprof gunzipped and
//! decoded with prost through messages declared here from profile.proto (not the writer's own),
//! svg/html well-formed and naming every frame, text rendered exactly; and pprof read by `go tool
//! pprof` itself when Go is installed (Debian's golang-go, which scripts/setup installs).

use std::collections::BTreeMap;

use corprof_record::formats::{self, Format, Options, pprof::Period};
use corprof_record::profile::{Profile, Unit};

/// Says a check is skipped for want of a tool, or fails when the test command demands every
/// tool (`CORPROF_REQUIRE_TOOLS=1`, set by scripts/test after its set-up installed them): there a
/// skip would be a test that cannot fail.
fn skip(why: &str) {
    assert!(std::env::var_os("CORPROF_REQUIRE_TOOLS").is_none(), "{why}, and CORPROF_REQUIRE_TOOLS is set");
    eprintln!("\n\n!!!!!!!! SKIPPED: {why} !!!!!!!!\n\n");
}

fn frames(s: &str) -> Vec<String> {
    s.split(';').map(str::to_string).collect()
}

/// Two threads, a recursion, a generic name with characters XML and folded stacks must escape.
fn cpu_profile() -> Profile {
    let mut p = Profile::new(Unit::Samples);
    p.add(&frames("[thread Main];App::Main;App::Work"), 60, 0);
    p.add(&frames("[thread Main];App::Main;App::Work;App::Work"), 10, 0);
    p.add(&frames("[thread Main];App::Main"), 5, 0);
    p.add(&frames("[thread Worker];App::Spin;System.Collections.Generic.Dictionary<string, int>::Add"), 25, 0);
    p
}

fn output(profile: &Profile, format: Format, title: &str) -> Vec<u8> {
    let mut out = Vec::new();
    formats::write(profile, format, title, &mut out).unwrap();
    out
}

fn text(profile: &Profile, format: Format, title: &str) -> String {
    String::from_utf8(output(profile, format, title)).unwrap()
}

#[test]
fn names_and_extensions() {
    for format in Format::ALL {
        assert_eq!(Format::parse(format.name()), Ok(format));
    }
    assert_eq!(Format::parse("svg").unwrap().extension(), "svg");
    assert_eq!(Format::parse("pprof").unwrap().extension(), "pb.gz");
    let e = Format::parse("png").unwrap_err().to_string();
    assert_eq!(e, "unknown format \"png\" (one of svg, html, speedscope, pprof, folded, text, json)");
}

/// Calls mode: µs per call path and the calls that ended there.
fn calls_profile() -> Profile {
    let mut p = Profile::new(Unit::Microseconds);
    p.add(&frames("App::Main;App::A"), 300, 3);
    p.add(&frames("App::Main"), 0, 1);
    p.add(&frames("App::Main;App::B"), 100, 10);
    p
}

#[test]
fn folded_reads_back_as_the_profile() {
    let mut p = cpu_profile();
    p.add(&frames("[thread Main];Odd;Name"), 0, 0);
    p.add(&["[thread Main]".to_string(), "A;B".to_string()], 2, 0);
    p.add(&frames("[thread Worker];Tiny"), 1, 0);
    let out = text(&p, Format::Folded, "t");
    let mut back: BTreeMap<Vec<String>, u64> = BTreeMap::new();
    for line in out.lines() {
        let (stack, value) = line.rsplit_once(' ').unwrap();
        *back.entry(frames(stack)).or_default() += value.parse::<u64>().unwrap();
    }
    let mut expected: BTreeMap<Vec<String>, u64> =
        cpu_profile().stacks.into_iter().map(|(frames, e)| (frames, e.value)).collect();
    // `;` cannot be carried in a folded frame: it becomes `,`; zero-valued stacks draw nothing.
    expected.insert(frames("[thread Main];A,B"), 2);
    expected.insert(frames("[thread Worker];Tiny"), 1);
    assert_eq!(back, expected);
}

/// speedscope's required fields (file-format-schema.json: File needs `$schema`, `shared.frames`,
/// `profiles`; a Frame a `name`; a SampledProfile `type`, `name`, `unit`, `startValue`,
/// `endValue`, `samples`, `weights`), checked, and the stacks rebuilt per profile.
fn speedscope_stacks(json: &str) -> (serde_json::Value, BTreeMap<(String, Vec<String>), u64>) {
    let doc: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(doc["$schema"], "https://www.speedscope.app/file-format-schema.json");
    let names: Vec<&str> =
        doc["shared"]["frames"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
    let mut stacks = BTreeMap::new();
    for profile in doc["profiles"].as_array().unwrap() {
        assert_eq!(profile["type"], "sampled");
        let name = profile["name"].as_str().unwrap().to_string();
        assert!(
            ["none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes"]
                .contains(&profile["unit"].as_str().unwrap())
        );
        let samples = profile["samples"].as_array().unwrap();
        let weights = profile["weights"].as_array().unwrap();
        assert_eq!(samples.len(), weights.len());
        let mut total = 0;
        for (sample, weight) in samples.iter().zip(weights) {
            let stack: Vec<String> =
                sample.as_array().unwrap().iter().map(|i| names[i.as_u64().unwrap() as usize].to_string()).collect();
            let weight = weight.as_u64().unwrap();
            total += weight;
            *stacks.entry((name.clone(), stack)).or_default() += weight;
        }
        assert_eq!(profile["startValue"].as_u64(), Some(0));
        assert_eq!(profile["endValue"].as_u64(), Some(total), "{name}: endValue is the sum of the weights");
    }
    (doc, stacks)
}

#[test]
fn speedscope_has_one_profile_per_thread_and_its_totals() {
    let (doc, stacks) = speedscope_stacks(&text(&cpu_profile(), Format::Speedscope, "cpu run"));
    assert_eq!(doc["name"], "cpu run");
    assert_eq!(doc["profiles"].as_array().unwrap().len(), 2);
    assert_eq!(doc["profiles"][0]["unit"], "none");
    let expected: BTreeMap<(String, Vec<String>), u64> = cpu_profile()
        .stacks
        .into_iter()
        .map(|(frames, e)| ((frames[0].clone(), frames[1..].to_vec()), e.value))
        .collect();
    assert_eq!(stacks, expected);
}

#[test]
fn speedscope_without_threads_is_one_profile_in_the_unit() {
    let mut p = Profile::new(Unit::Bytes);
    p.add(&frames("App::Main;App::Alloc"), 4096, 0);
    p.add(&frames("App::Main"), 24, 0);
    let (doc, stacks) = speedscope_stacks(&text(&p, Format::Speedscope, "alloc"));
    assert_eq!(doc["profiles"].as_array().unwrap().len(), 1);
    assert_eq!(doc["profiles"][0]["unit"], "bytes");
    assert_eq!(doc["profiles"][0]["endValue"], 4120);
    let expected: BTreeMap<_, _> = p.stacks.into_iter().map(|(f, e)| (("alloc".to_string(), f), e.value)).collect();
    assert_eq!(stacks, expected);
    let (doc, _) = speedscope_stacks(&text(&calls_profile(), Format::Speedscope, "calls"));
    assert_eq!(doc["profiles"][0]["unit"], "microseconds");
    // Empty: still a file speedscope opens, with one empty profile.
    let (doc, stacks) = speedscope_stacks(&text(&Profile::new(Unit::Samples), Format::Speedscope, "none"));
    assert_eq!((doc["profiles"].as_array().unwrap().len(), stacks.len()), (1, 0));
}

/// profile.proto's messages as a reader declares them (field numbers from the schema),
/// independent of the writer's.
mod pb {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Profile {
        #[prost(message, repeated, tag = "1")]
        pub sample_type: Vec<ValueType>,
        #[prost(message, repeated, tag = "2")]
        pub sample: Vec<Sample>,
        #[prost(message, repeated, tag = "4")]
        pub location: Vec<Location>,
        #[prost(message, repeated, tag = "5")]
        pub function: Vec<Function>,
        #[prost(string, repeated, tag = "6")]
        pub string_table: Vec<String>,
        #[prost(message, optional, tag = "11")]
        pub period_type: Option<ValueType>,
        #[prost(int64, tag = "12")]
        pub period: i64,
        #[prost(int64, tag = "14")]
        pub default_sample_type: i64,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ValueType {
        #[prost(int64, tag = "1")]
        pub r#type: i64,
        #[prost(int64, tag = "2")]
        pub unit: i64,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sample {
        #[prost(uint64, repeated, tag = "1")]
        pub location_id: Vec<u64>,
        #[prost(int64, repeated, tag = "2")]
        pub value: Vec<i64>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Location {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(uint64, tag = "2")]
        pub mapping_id: u64,
        #[prost(uint64, tag = "3")]
        pub address: u64,
        #[prost(message, repeated, tag = "4")]
        pub line: Vec<Line>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Line {
        #[prost(uint64, tag = "1")]
        pub function_id: u64,
        #[prost(int64, tag = "2")]
        pub line: i64,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Function {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(int64, tag = "2")]
        pub name: i64,
    }
}

/// Gunzips and decodes a pprof output; gives its sample types as `type/unit` and its stacks
/// (root first, rebuilt from the leaf-first locations) with their values.
fn pprof_read(gz: &[u8]) -> (pb::Profile, Vec<String>, BTreeMap<Vec<String>, Vec<i64>>) {
    use prost::Message;
    use std::io::Read;
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(gz).read_to_end(&mut raw).unwrap();
    let p = pb::Profile::decode(raw.as_slice()).unwrap();
    let s = |i: i64| p.string_table[i as usize].clone();
    assert_eq!(p.string_table[0], "", "string_table[0] must be \"\"");
    let types = p.sample_type.iter().map(|t| format!("{}/{}", s(t.r#type), s(t.unit))).collect();
    let functions: BTreeMap<u64, String> = p.function.iter().map(|f| (f.id, s(f.name))).collect();
    let locations: BTreeMap<u64, String> = p
        .location
        .iter()
        .map(|l| {
            assert_ne!(l.id, 0, "location ids start at 1");
            assert_eq!(l.line.len(), 1);
            (l.id, functions[&l.line[0].function_id].clone())
        })
        .collect();
    assert_eq!(locations.len(), p.location.len(), "location ids are unique");
    let mut stacks = BTreeMap::new();
    for sample in &p.sample {
        assert_eq!(sample.value.len(), p.sample_type.len());
        let stack: Vec<String> = sample.location_id.iter().rev().map(|id| locations[id].clone()).collect();
        assert!(stacks.insert(stack, sample.value.clone()).is_none());
    }
    (p, types, stacks)
}

#[test]
fn pprof_decodes_to_the_profile() {
    // cpu with its period: samples/count and cpu/nanoseconds = samples × period.
    let mut out = Vec::new();
    let options =
        Options { sample_period: Some(Period { clock: "cpu", nanoseconds: 10_000_000 }), ..Options::new("cpu") };
    formats::write_with(&cpu_profile(), Format::Pprof, &options, &mut out).unwrap();
    let (p, types, stacks) = pprof_read(&out);
    assert_eq!(types, ["samples/count", "cpu/nanoseconds"]);
    assert_eq!(p.period, 10_000_000);
    assert_eq!(p.string_table[p.period_type.unwrap().r#type as usize], "cpu");
    let expected: BTreeMap<Vec<String>, Vec<i64>> =
        cpu_profile().stacks.into_iter().map(|(f, e)| (f, vec![e.value as i64, e.value as i64 * 10_000_000])).collect();
    assert_eq!(stacks, expected);
    // Every frame name is one function, each string once in the table.
    assert_eq!(p.function.len(), 6);
    let mut table = p.string_table.clone();
    table.sort();
    table.dedup();
    assert_eq!(table.len(), p.string_table.len());

    // cpu without a period: samples only.
    let (_, types, stacks) = pprof_read(&output(&cpu_profile(), Format::Pprof, "cpu"));
    assert_eq!(types, ["samples/count"]);
    assert_eq!(stacks.values().map(|v| v[0]).sum::<i64>(), 100);

    // alloc: bytes.
    let mut alloc = Profile::new(Unit::Bytes);
    alloc.add(&frames("App::Main;App::Alloc"), 4096, 0);
    let (_, types, stacks) = pprof_read(&output(&alloc, Format::Pprof, "alloc"));
    assert_eq!(types, ["alloc_space/bytes"]);
    assert_eq!(stacks[&frames("App::Main;App::Alloc")], [4096]);

    // calls: the call counts and the time, time shown by default; a path with calls but no
    // measurable time is kept (its calls count).
    let (p, types, stacks) = pprof_read(&output(&calls_profile(), Format::Pprof, "calls"));
    assert_eq!(types, ["calls/count", "wall/microseconds"]);
    assert_eq!(p.string_table[p.default_sample_type as usize], "wall");
    let expected: BTreeMap<Vec<String>, Vec<i64>> =
        calls_profile().stacks.into_iter().map(|(f, e)| (f, vec![e.count as i64, e.value as i64])).collect();
    assert_eq!(stacks, expected);
}

/// `--native` frames keep their offset in their library in the raw formats (speedscope's frame
/// names, pprof's Location addresses under one Function per name) and show the name alone,
/// merged, in the others.
#[test]
fn native_offsets_are_kept_by_the_raw_formats_and_merged_by_the_others() {
    let mut p = Profile::new(Unit::Samples);
    p.add(&frames("[thread Main];App::Main;libcoreclr.so (+0x10)"), 2, 0);
    p.add(&frames("[thread Main];App::Main;libcoreclr.so (+0x20)"), 3, 0);
    p.add(&frames("[thread Main];App::Main;libc.so.6!memset (+0x99)"), 1, 0);
    assert_eq!(
        text(&p, Format::Folded, "cpu"),
        "[thread Main];App::Main;libc.so.6!memset 1\n[thread Main];App::Main;libcoreclr.so 5\n"
    );
    for format in [Format::Text, Format::Svg, Format::Html] {
        let out = text(&p, format, "cpu");
        assert!(out.contains("libcoreclr.so") && !out.contains("(+0x"), "{format:?}: {out}");
    }
    let (_, stacks) = speedscope_stacks(&text(&p, Format::Speedscope, "cpu"));
    let leaves: Vec<&str> = stacks.keys().map(|(_, stack)| stack.last().unwrap().as_str()).collect();
    assert_eq!(leaves, ["libc.so.6!memset (+0x99)", "libcoreclr.so (+0x10)", "libcoreclr.so (+0x20)"]);
    // Decoded here: two samples name the same functions (pprof_read's stacks are by name).
    let pb = {
        use prost::Message;
        use std::io::Read;
        let mut raw = Vec::new();
        flate2::read::GzDecoder::new(output(&p, Format::Pprof, "cpu").as_slice()).read_to_end(&mut raw).unwrap();
        pb::Profile::decode(raw.as_slice()).unwrap()
    };
    assert_eq!(pb.sample.len(), 3);
    let name = |id: u64| {
        let f = pb.function.iter().find(|f| f.id == id).unwrap();
        pb.string_table[f.name as usize].clone()
    };
    let mut located: Vec<(String, u64)> =
        pb.location.iter().map(|l| (name(l.line[0].function_id), l.address)).collect();
    located.sort();
    let expected = [
        ("App::Main", 0),
        ("[thread Main]", 0),
        ("libc.so.6!memset", 0x99),
        ("libcoreclr.so", 0x10),
        ("libcoreclr.so", 0x20),
    ];
    assert_eq!(located, expected.map(|(n, a)| (n.to_string(), a)));
    assert_eq!(pb.function.len(), 4, "one Function per name");
}

/// The `<title>`s of an inferno flame graph (one per frame: `name (N unit, P%)`).
fn frame_titles(doc: &roxmltree::Document) -> Vec<String> {
    doc.descendants()
        .filter(|n| n.has_tag_name("title") && n.ancestors().any(|a| a.attribute("id") == Some("frames")))
        .map(|n| n.text().unwrap_or("").to_string())
        .collect()
}

/// Parses XML (inferno's SVG carries a DOCTYPE), panicking with the parser's message.
fn parse_xml(text: &str) -> roxmltree::Document<'_> {
    let options = roxmltree::ParsingOptions { allow_dtd: true, ..Default::default() };
    roxmltree::Document::parse_with_options(text, options).unwrap()
}

#[test]
fn svg_is_well_formed_with_every_frame_and_its_value() {
    let svg = text(&cpu_profile(), Format::Svg, "CPU <run>");
    let doc = parse_xml(&svg);
    assert!(doc.root_element().has_tag_name("svg"));
    let title = doc.descendants().find(|n| n.attribute("id") == Some("title")).unwrap();
    assert_eq!(title.text(), Some("CPU <run>"));
    let titles = frame_titles(&doc);
    for expected in [
        "all (100 samples, 100%)",
        "[thread Main] (75 samples, 75.00%)",
        "App::Main (75 samples, 75.00%)",
        "App::Work (70 samples, 70.00%)",
        "App::Work (10 samples, 10.00%)",
        "[thread Worker] (25 samples, 25.00%)",
        "App::Spin (25 samples, 25.00%)",
        "System.Collections.Generic.Dictionary<string, int>::Add (25 samples, 25.00%)",
    ] {
        assert!(titles.iter().any(|t| t == expected), "{expected:?} not among {titles:?}");
    }
    assert_eq!(titles.len(), 8);
    // The count name follows the unit.
    let svg = text(&calls_profile(), Format::Svg, "calls");
    assert!(svg.contains("App::A (300 µs, 75.00%)"), "{svg}");
    // Empty: still a picture.
    let svg = text(&Profile::new(Unit::Bytes), Format::Svg, "nothing");
    let doc = parse_xml(&svg);
    assert!(doc.descendants().any(|n| n.text() == Some("no samples were recorded")));
}

#[test]
fn html_is_a_page_holding_the_flame_graph() {
    let html = text(&cpu_profile(), Format::Html, "CPU <run>");
    assert!(html.starts_with("<!DOCTYPE html>\n"));
    // Written as polyglot markup: it parses as XML too.
    let doc = parse_xml(&html);
    let root = doc.root_element();
    assert!(root.has_tag_name("html"));
    let head_title = root.descendants().find(|n| n.has_tag_name("title")).unwrap();
    assert_eq!(head_title.text(), Some("CPU <run>"));
    let svg = root.descendants().find(|n| n.has_tag_name("svg")).unwrap();
    assert_eq!(svg.parent_element().map(|p| p.tag_name().name()), Some("body"));
    let titles = frame_titles(&doc);
    assert_eq!(titles.len(), 8);
    assert!(titles.iter().any(|t| t == "App::Spin (25 samples, 25.00%)"));
    assert!(!html.contains("<?xml"), "no XML prolog inside the page");
}

#[test]
fn text_is_a_top_table() {
    assert_eq!(
        text(&calls_profile(), Format::Text, "calls run"),
        "calls run\n\
         total 400 µs; top 3 of 3 frames by self µs\n\
         self  self%  total  total%  calls  frame\n\
         \x20300  75.0%    300   75.0%      3  App::A\n\
         \x20100  25.0%    100   25.0%     10  App::B\n\
         \x20\x20\x200   0.0%    400  100.0%      1  App::Main\n"
    );
    let mut out = Vec::new();
    formats::write_with(&cpu_profile(), Format::Text, &Options { top: 3, ..Options::new("cpu") }, &mut out).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "cpu\n\
         total 100 samples; top 3 of 6 frames by self samples\n\
         self  self%  total  total%  frame\n\
         \x20\x2070  70.0%     70   70.0%  App::Work\n\
         \x20\x2025  25.0%     25   25.0%  System.Collections.Generic.Dictionary<string, int>::Add\n\
         \x20\x20\x205   5.0%     75   75.0%  App::Main\n"
    );
}

/// `go tool pprof -traces` on a pprof output: the `Type:` it shows and each sample's stack (root
/// first) with its value as printed (digits, the unit's letters stripped). `None` without Go.
fn go_pprof_traces(gz: &[u8], args: &[&str]) -> Option<(String, BTreeMap<Vec<String>, u64>)> {
    let go = std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join("go")).find(|p| p.is_file())?;
    // One file per call: tests run in parallel, with the same arguments.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let file = std::env::temp_dir().join(format!("corprof-record-pprof-{}-{call}.pb.gz", std::process::id()));
    std::fs::write(&file, gz).unwrap();
    let out = std::process::Command::new(go).args(["tool", "pprof", "-traces"]).args(args).arg(&file).output().unwrap();
    let _ = std::fs::remove_file(&file);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "go tool pprof failed: {}", String::from_utf8_lossy(&out.stderr));
    let kind = text.lines().find_map(|l| l.strip_prefix("Type: ")).unwrap().to_string();
    let mut traces = BTreeMap::new();
    for block in text.split("-----------+-------------------------------------------------------\n").skip(1) {
        let mut lines = block.lines();
        // The last separator closes the last trace.
        let Some(first) = lines.next() else { continue };
        let first = first.trim_start();
        let (value, leaf) = first.split_once(' ').unwrap();
        let value = value.trim_end_matches(char::is_alphabetic).parse().unwrap();
        let mut stack: Vec<String> = std::iter::once(leaf).chain(lines).map(|l| l.trim().to_string()).collect();
        stack.reverse();
        traces.insert(stack, value);
    }
    Some((kind, traces))
}

#[test]
fn pprof_is_read_by_go_tool_pprof() {
    let mut cpu = Vec::new();
    let options =
        Options { sample_period: Some(Period { clock: "wall", nanoseconds: 10_000_000 }), ..Options::new("cpu") };
    formats::write_with(&cpu_profile(), Format::Pprof, &options, &mut cpu).unwrap();
    let Some((kind, samples)) = go_pprof_traces(&cpu, &["-sample_index=samples"]) else {
        skip("`go tool pprof` is not installed (Debian's golang-go)");
        return;
    };
    assert_eq!(kind, "samples");
    let expected: BTreeMap<Vec<String>, u64> = cpu_profile().stacks.into_iter().map(|(f, e)| (f, e.value)).collect();
    assert_eq!(samples, expected);
    let (kind, wall) = go_pprof_traces(&cpu, &["-unit=ns"]).unwrap();
    assert_eq!(kind, "wall");
    assert_eq!(wall, expected.iter().map(|(f, v)| (f.clone(), v * 10_000_000)).collect());

    let calls = output(&calls_profile(), Format::Pprof, "calls");
    let (kind, counts) = go_pprof_traces(&calls, &["-sample_index=calls"]).unwrap();
    assert_eq!(kind, "calls");
    assert_eq!(counts, calls_profile().stacks.into_iter().map(|(f, e)| (f, e.count)).collect());
    // The time is what pprof shows first (default_sample_type; also the last type, go's fallback).
    let (kind, time) = go_pprof_traces(&calls, &["-unit=us"]).unwrap();
    assert_eq!(kind, "wall");
    assert_eq!(time, calls_profile().stacks.into_iter().map(|(f, e)| (f, e.value)).collect());

    let mut alloc = Profile::new(Unit::Bytes);
    alloc.add(&frames("App::Main;App::Alloc"), 4096, 0);
    let (kind, bytes) = go_pprof_traces(&output(&alloc, Format::Pprof, "alloc"), &["-unit=B"]).unwrap();
    assert_eq!(kind, "alloc_space");
    assert_eq!(bytes, alloc.stacks.into_iter().map(|(f, e)| (f, e.value)).collect());
}

/// Generic instantiations stay apart in `go tool pprof` with its default options (it strips what
/// it takes for C++ template arguments from names it may demangle).
#[test]
fn pprof_keeps_generic_instantiations_apart() {
    let mut p = Profile::new(Unit::Samples);
    p.add(&frames("App::Main;System.Collections.Generic.List<int>::Add"), 30, 0);
    p.add(&frames("App::Main;System.Collections.Generic.List<double>::Add"), 20, 0);
    p.add(&frames("App::Main;App.Box`1<string>::Get(int)"), 5, 0);
    let Some((_, samples)) = go_pprof_traces(&output(&p, Format::Pprof, "cpu"), &["-sample_index=samples"]) else {
        skip("`go tool pprof` is not installed (Debian's golang-go)");
        return;
    };
    assert_eq!(samples, p.stacks.into_iter().map(|(f, e)| (f, e.value)).collect());
}
