#!/usr/bin/env python3
"""Turns the raw results of scripts/bench into BENCHMARKS.md (printed on stdout).

    python3 bench/report.py RESULTS_DIR > BENCHMARKS.md

RESULTS_DIR (target/bench/results) holds what scripts/bench measured: callgrind outputs and
timings of the dispatch driver, hyperfine JSON exports, build timings, sizes, the memcheck log,
params.json (what was run, how often) and commands-<section>.txt (the exact commands)."""

import collections
import json
import os
import re
import statistics
import subprocess
import sys

RES = sys.argv[1] if len(sys.argv) > 1 else "target/bench/results"


def path(*parts):
    return os.path.join(RES, *parts)


def read(*parts):
    with open(path(*parts)) as f:
        return f.read()


def load_json(*parts):
    with open(path(*parts)) as f:
        return json.load(f)


PARAMS = load_json("params.json")

# ------------------------------------------------------------------------------------------
# callgrind


def callgrind_total(file):
    """The file's total Ir (only what --toggle-collect counted)."""
    with open(file) as f:
        for line in f:
            if line.startswith("totals:") or line.startswith("summary:"):
                return int(line.split()[1])
    raise SystemExit(f"report: no totals in {file}")


def callgrind_self_costs(file, object_suffix, function_part):
    """{address: Ir} of the instructions of the function whose name contains `function_part`
    in the object whose path ends with `object_suffix` (self cost: callees not included)."""
    objects, functions = {}, {}
    cur_ob = cur_fn = None
    skip_next = False
    last = 0
    costs = {}
    name_def = re.compile(r"^\((\d+)\)(?:\s+(.*))?$")

    def define(table, text):
        m = name_def.match(text.strip())
        if not m:
            return text.strip()
        ident, name = m.group(1), m.group(2)
        if name is not None:
            table[ident] = name
        return table.get(ident, ident)

    with open(file) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            key, _, value = line.partition("=")
            if key in ("ob", "cob") and _ == "=":
                name = define(objects, value)
                if key == "ob":
                    cur_ob = name
                continue
            if key in ("fn", "cfn") and _ == "=":
                name = define(functions, value)
                if key == "fn":
                    cur_fn = name
                continue
            if key == "calls" and _ == "=":
                skip_next = True  # the next cost line is the call's inclusive cost
                continue
            if line[0] not in "0123456789+-*":
                continue
            fields = line.split()
            pos = fields[0]
            if pos.startswith("0x"):
                last = int(pos, 16)
            elif pos[0] in "+-":
                last += int(pos, 10)
            elif pos != "*":
                last = int(pos)
            if skip_next:
                skip_next = False
                continue
            if cur_ob and cur_ob.endswith(object_suffix) and cur_fn and function_part in cur_fn:
                costs[last] = costs.get(last, 0) + int(fields[-1])
    return costs


def disassemble(lib, addresses):
    """{address: 'instruction text'} for the given file offsets of `lib` (objdump)."""
    lo, hi = min(addresses), max(addresses) + 16
    out = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", "-C", f"--start-address={lo:#x}", f"--stop-address={hi:#x}", lib],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    text = {}
    for line in out.splitlines():
        m = re.match(r"^\s*([0-9a-f]+):\s+(.*)$", line)
        if m:
            text[int(m.group(1), 16)] = re.sub(r"\s+", " ", m.group(2)).strip()
    return text


def annotate(file, lib, object_suffix, function_part, calls):
    """(listing, total self Ir, [every instruction executed once per call], {address: text} around it)."""
    costs = callgrind_self_costs(file, object_suffix, function_part)
    if not costs:
        return "(no samples)", 0, [], {}
    text = disassemble(lib, costs.keys())
    lines = []
    hot = []
    for addr in sorted(costs):
        ir = costs[addr]
        insn = text.get(addr, "?")
        lines.append(f"{ir:>9,}  {ir / calls:5.2f}/call  {addr:#8x}:  {insn}")
        if ir == calls:
            hot.append(insn)
    total = sum(costs.values())
    return "\n".join(lines), total, hot, text


# ------------------------------------------------------------------------------------------
# 1. dispatch

PROFILERS = PARAMS["profilers"]  # [{key, label, lib, object_suffix, thunk}]
CALLBACKS = PARAMS["dispatch"]["callbacks"]
N_SMALL, N_LARGE = PARAMS["dispatch"]["n_small"], PARAMS["dispatch"]["n_large"]


def dispatch_rows():
    rows = {}
    timings = {}
    for line in read("dispatch-time.txt").splitlines():
        key, cb, rest = line.split(" ", 2)
        fields = dict(kv.split("=") for kv in rest.split())
        timings[(key, cb)] = (float(fields["best_ns"]), float(fields["median_ns"]))
    for cb in CALLBACKS:
        for p in PROFILERS:
            small = callgrind_total(path("callgrind", f"{p['key']}-{cb}-{N_SMALL}.out"))
            large_file = path("callgrind", f"{p['key']}-{cb}-{N_LARGE}.out")
            large = callgrind_total(large_file)
            per_call = (large - small) / (N_LARGE - N_SMALL)
            func = p["thunk"].replace("{callback}", cb)
            listing, thunk_total, hot, text = annotate(large_file, p["lib"], p["object_suffix"], func, N_LARGE)
            rows[(p["key"], cb)] = {
                "per_call": per_call,
                "thunk": thunk_total / N_LARGE,
                "listing": listing,
                "hot": hot,
                "text": text,
                "best": timings[(p["key"], cb)][0],
                "median": timings[(p["key"], cb)][1],
            }
    return rows


def fmt_ir(x):
    return f"{x:.2f}" if abs(x - round(x)) > 0.005 else f"{round(x)}"


def dispatch_section(rows):
    out = []
    ref = PROFILERS[0]["key"]
    out.append(
        "| callback | profiler | Ir per iteration (loop + call + callback) | Ir in the callback | "
        "extra Ir vs C | ns/call (best) | ns/call (median) | ns ratio vs C (best) |"
    )
    out.append("|---|---|---:|---:|---:|---:|---:|---:|")
    for cb in CALLBACKS:
        c = rows[(ref, cb)]
        for p in PROFILERS:
            r = rows[(p["key"], cb)]
            extra = r["per_call"] - c["per_call"]
            out.append(
                f"| {cb} | {p['label']} | {fmt_ir(r['per_call'])} | {fmt_ir(r['thunk'])} | "
                f"{'—' if p['key'] == ref else f'{extra:+.2f}'.rstrip('0').rstrip('.')} | "
                f"{r['best']:.2f} | {r['median']:.2f} | {r['best'] / c['best']:.3f} |"
            )
    return "\n".join(out)


# ------------------------------------------------------------------------------------------
# 2. end to end


def e2e_section(extra_ns):
    out = [
        "| app (scale) | event mask | callbacks per run (C / Rust) | no profiler | C reference | "
        "Rust counter | **Rust / C** | Rust / C per round (min – max) | expected from the dispatch table | "
        "C / none | Rust / none | CPU user+sys (none / C / Rust) |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    verdicts = []
    for app in PARAMS["e2e"]["apps"]:
        samples = {"none": [], "C": [], "Rust": []}
        cpu = {"none": [], "C": [], "Rust": []}
        per_round = []
        for k in range(1, PARAMS["e2e"]["rounds"] + 1):
            data = load_json("e2e", f"{app['name']}-{k}.json")
            for r in data["results"]:
                samples[r["command"]].extend(r["times"])
                cpu[r["command"]].append(r["user"] + r["system"])
            by = {r["command"]: r["median"] for r in data["results"]}
            per_round.append(by["Rust"] / by["C"])
        med = {k: statistics.median(v) for k, v in samples.items()}
        cpu_mean = {k: statistics.mean(v) for k, v in cpu.items()}
        calls = {who: sum(int(l.split()[1]) for l in read("e2e", f"{app['name']}-{who}.counts").splitlines() if l.strip())
                 for who in ("C", "Rust")}
        ratio = med["Rust"] / med["C"]
        expected = 1 + extra_ns * 1e-9 * calls["Rust"] / med["C"]
        verdicts.append((app, ratio))
        out.append(
            f"| {app['name']} ({app['scale']}) | `{app['mask']}` | {calls['C']:,} / {calls['Rust']:,} | "
            f"{med['none']:.3f} s | {med['C']:.3f} s | {med['Rust']:.3f} s | **{ratio:.3f}** | {min(per_round):.3f} – {max(per_round):.3f} | "
            f"{expected:.4f} | {med['C'] / med['none']:.3f} | {med['Rust'] / med['none']:.3f} | "
            f"{cpu_mean['none']:.2f} / {cpu_mean['C']:.2f} / {cpu_mean['Rust']:.2f} s |"
        )
    n = PARAMS["e2e"]["rounds"] * PARAMS["e2e"]["runs"]
    return "\n".join(out), verdicts, n


# ------------------------------------------------------------------------------------------
# 3. generator and build


def generator_section():
    gen = load_json("generator.json")["results"]
    by = {r["command"]: r for r in gen}
    cg, bg = by["corprof-gen"], by["bindgen"]
    cold = float(read("cold-build.txt").split()[0])
    rebuild = load_json("rebuild.json")["results"][0]
    sizes = json.loads(read("sizes.json"))
    out = [
        "| what | result | compared with | ratio |",
        "|---|---:|---|---:|",
        f"| `corprof-gen expand` (parse runtime-main's corprof.h + cor.h, render all {sizes['expand_lines']:,} lines) "
        f"| {cg['median'] * 1000:.0f} ms (median of {len(cg['times'])}) | bindgen alone on the same headers and "
        f"arguments: {bg['median'] * 1000:.0f} ms ({sizes['bindgen_lines']:,} lines) | {cg['median'] / bg['median']:.2f} |",
        f"| cold `cargo build -p corprof` (empty CARGO_TARGET_DIR, debug, all dependencies) | {cold:.1f} s | | |",
        f"| no-change rebuild `cargo build -p corprof` | {rebuild['median'] * 1000:.0f} ms (median of "
        f"{len(rebuild['times'])}) | cold build | {rebuild['median'] / cold:.4f} |",
        f"| release `libcallback_counter.so` | {sizes['rust'] / 1024:.0f} KiB ({sizes['rust_stripped'] / 1024:.0f} KiB "
        f"stripped) | C reference `libreference_profiler.so`: {sizes['c'] / 1024:.0f} KiB "
        f"({sizes['c_stripped'] / 1024:.0f} KiB stripped) | {sizes['rust_stripped'] / sizes['c_stripped']:.1f} (stripped) |",
    ]
    return "\n".join(out)


# ------------------------------------------------------------------------------------------
# 4. memcheck


def stress_section():
    text = read("stress.txt")
    keep = []
    for line in text.splitlines():
        s = re.sub(r"^==\d+==\s?", "", line)
        if (
            line.startswith("stress-valgrind:")
            or s.startswith("test ")
            or "HEAP SUMMARY" in s
            or "in use at exit" in s
            or "total heap usage" in s
            or "LEAK SUMMARY" in s
            or re.search(r"(definitely|indirectly|possibly) lost|still reachable", s)
            or "ERROR SUMMARY" in s
        ):
            keep.append(line)
    return "\n".join(keep)


def commands(section):
    return read(f"commands-{section}.txt").rstrip()


# ------------------------------------------------------------------------------------------


def beyond(hot, base):
    """The mnemonics executed per call in `hot` that `base` does not have (multisets; any `lock`
    instruction counts as one)."""
    def norm(insns):
        return collections.Counter("lock" if t.startswith("lock ") else t.split()[0] for t in insns)
    return sorted((norm(hot) - norm(base)).elements())


def null_check(row):
    """The thunk's `test` and conditional jump executed on every call, and the instructions at the
    jump's target as far as disassembled: (test text, jump text, [target instructions]) or None."""
    test = next((t for t in row["hot"] if t.startswith("test ")), None)
    jump = next((t for t in row["hot"] if re.match(r"j(e|ne|z|nz) ", t)), None)
    if not (test and jump):
        return None
    target = re.match(r"j\w+ ([0-9a-f]+)", jump)
    there = []
    if target:
        addrs = sorted(a for a in row["text"] if a >= int(target.group(1), 16))
        for a in addrs[:2]:
            there.append(row["text"][a])
    return test, jump.split(" <")[0], there


def main():
    rows = dispatch_rows()
    ref, rust = (p["key"] for p in PROFILERS)
    extra = {cb: rows[(rust, cb)]["per_call"] - rows[(ref, cb)]["per_call"] for cb in CALLBACKS}
    extra_thunk = {cb: rows[(rust, cb)]["thunk"] - rows[(ref, cb)]["thunk"] for cb in CALLBACKS}
    extra_mn = {cb: beyond(rows[(rust, cb)]["hot"], rows[(ref, cb)]["hot"]) for cb in CALLBACKS}
    # What the counter's extra instructions cost per call in the timed loops (mean over the callbacks).
    extra_ns = statistics.mean(rows[(rust, cb)]["best"] - rows[(ref, cb)]["best"] for cb in CALLBACKS)
    e2e_table, e2e_verdicts, e2e_n = e2e_section(extra_ns)
    env = read("environment.txt").rstrip()

    def goal(ok):
        return "**met**" if ok else "**not met**"

    def plus(x):
        return f"{x:+.2f}".rstrip("0").rstrip(".")

    dispatch_ok = all(v <= 2 for v in extra.values())
    e2e_ok = all(abs(r - 1) <= 0.02 for _, r in e2e_verdicts)
    first = CALLBACKS[0]
    second = CALLBACKS[1]
    # The panic guard (catch_unwind in glue::dispatch, around every callback body) adds nothing to
    # the hot path if the Rust thunks execute no instruction beyond the C reference's but a null
    # check of an out pointer.
    nulls = {cb: null_check(rows[(rust, cb)]) for cb in CALLBACKS}
    only_null_checks = all(
        not extra_mn[cb] or (extra_mn[cb] in (["je", "test"], ["jne", "test"], ["jz", "test"], ["jnz", "test"])
                             and nulls[cb] is not None)
        for cb in CALLBACKS
    )
    same_as_c = [cb for cb in CALLBACKS if not extra_mn[cb] and abs(extra_thunk[cb]) < 0.005]

    def null_text(cb):
        test, jump, there = nulls[cb]
        where = f" to the out-of-line refusal (`{'; '.join(there)}`)" if there else ""
        return f"`{test}` / `{jump}`{where}"

    print("# Benchmarks")
    print()
    print(
        "Generated by `bash scripts/bench` (not part of the test command); every number below comes from "
        "one run of it, both profilers measured side by side in that run. The C reference "
        "(`bench/reference/reference.c`) is a plain C COM profiler doing exactly the counter's "
        "per-callback work: one relaxed atomic increment of that callback's counter, return `S_OK`."
    )
    print()
    print("```text")
    print(env)
    print("```")
    print()
    print("## Summary")
    print()
    dispatch_line = (
        f"- **Dispatch** (goal: at most 2 extra instructions per call on the hot path; the panic guard must cost "
        f"nothing when nothing panics): {goal(dispatch_ok and only_null_checks)}. `examples/callback-counter` "
        "executes "
        + ", ".join(f"{cb} {plus(extra[cb])}" for cb in CALLBACKS)
        + " instructions per call more than the C reference (callgrind; "
        + ", ".join(f"{cb} {fmt_ir(rows[(rust, cb)]['thunk'])} vs {fmt_ir(rows[(ref, cb)]['thunk'])}" for cb in CALLBACKS)
        + " inside the callback)."
    )
    if only_null_checks:
        checked = [cb for cb in CALLBACKS if extra_mn[cb]]
        if checked:
            dispatch_line += (
                " " + ", ".join(checked) + "'s extra instructions are "
                + "; ".join(null_text(cb) for cb in checked)
                + ": the documented null check of its out pointer, so that a null one from the runtime is "
                "answered `E_POINTER` instead of reaching the profiler's method as an `Out` it could write "
                "through (undefined behaviour)."
            )
        dispatch_line += (
            " The panic guard (`catch_unwind` around every callback body) adds no instruction to either call: "
            "the thunks execute nothing beyond the counter's increment, the return code"
            + (" and that null check." if checked else ".")
        )
    else:
        dispatch_line += (
            " The Rust thunks execute instructions the C reference does not beyond a null check ("
            + "; ".join(f"{cb}: {', '.join(extra_mn[cb]) or 'none'}" for cb in CALLBACKS)
            + "): see the listings below."
        )
    print(dispatch_line)
    print(
        f"- **End to end** (goal: Rust within 2% of C): {goal(e2e_ok)}: Rust / C = "
        + ", ".join(f"{a['name']} {r:.3f}" for a, r in e2e_verdicts)
        + f" (medians of {e2e_n} runs each)."
    )
    print("- **Reference counting under memcheck**: clean (summary lines below).")
    print()

    print("## 1. Dispatch: one callback call through the vtable")
    print()
    print(
        f"`bench/dispatch/dispatch.c` loads a profiler `.so`, goes `DllGetClassObject` → `IClassFactory` → "
        f"`CreateInstance(IID_ICorProfilerCallback11)` as CoreCLR does, then calls one callback N times through "
        f"the vtable (reading the slot every time). Instructions (Ir) are counted by callgrind inside the loop "
        f"function only (`--toggle-collect`), and per call as (Ir(N={N_LARGE:,}) − Ir(N={N_SMALL:,})) / {N_LARGE - N_SMALL:,}, "
        f"so set-up costs cancel. \"Ir in the callback\" is the callee's own count per call. Times: "
        f"{PARAMS['dispatch']['timed_repeats']} passes of {PARAMS['dispatch']['timed_n']:,} calls, ns per call. "
        f"After each run the driver calls Shutdown and checks the profiler counted exactly the calls made."
    )
    print()
    print(dispatch_section(rows))
    print()
    rows_text = (
        "Rows: the C reference; `examples/callback-counter` (release build, as shipped: counts in a "
        "`[AtomicU64; Callback::COUNT]`). The time of every row is dominated by the `lock` increment "
        f"(~{min(r['best'] for r in rows.values()):.0f} ns on this machine)"
    )
    if same_as_c:
        rows_text += (
            ", and identical instruction streams (the C reference and the Rust counter in "
            + " and ".join(same_as_c)
            + ") can differ by a few percent from one pass to the next on this shared machine"
        )
    rows_text += ": the instruction counts are the sharper measure."
    print(rows_text)
    print()
    print("### Where the instructions are (callgrind, per instruction)")
    print()
    print(
        f"Self cost of each callback function in the N={N_LARGE:,} run, joined with `objdump -d` of the "
        f"library (columns: Ir, Ir per call, address, instruction). Only executed instructions appear, so "
        f"cold paths (the refusal of a null pointer, the panic handler) are not listed:"
    )
    print()
    for cb in CALLBACKS:
        for p in PROFILERS:
            r = rows[(p["key"], cb)]
            print(f"**{cb}, {p['label']}** — {fmt_ir(r['thunk'])} instructions per call")
            print()
            print("```text")
            print(r["listing"])
            print("```")
            print()
    print("Reading them:")
    print()
    print(
        "- **C reference**: `lock addq $1, off(%rdi)`, `xor %eax,%eax`, `ret`. The counters live in the object, the\n"
        "  index is a constant. It neither checks nor writes `pfShouldInline`."
    )
    for cb in CALLBACKS:
        if not extra_mn[cb] and abs(extra_thunk[cb]) < 0.005:
            print(
                f"- **{cb}, Rust**: the same {fmt_ir(rows[(rust, cb)]['thunk'])} instructions as C (the increment of a fixed-size array "
                "at a constant offset, `xor`, `ret`). `dispatch()` inlines completely, the `Callback` is a "
                "constant, the index is provably in bounds, and the panic guard (`catch_unwind`) adds no "
                "instruction."
            )
        elif only_null_checks and extra_mn[cb]:
            print(
                f"- **{cb}, Rust**: the same increment, `xor` and `ret`, plus {null_text(cb)}: "
                f"{plus(extra_thunk[cb])} instructions. {cb} has an out parameter (`BOOL *pfShouldInline`); "
                "corprof answers a null one with `E_POINTER` instead of handing the profiler's method an `Out` "
                "that would write through null (undefined behaviour; the README's promise). The refusal is out "
                "of line (`#[cold]` in `src/pointer_params.rs`), so the hot path is a test and a not-taken branch."
            )
        else:
            print(
                f"- **{cb}, Rust**: {fmt_ir(rows[(rust, cb)]['thunk'])} instructions; beyond the C reference's: "
                f"{', '.join(extra_mn[cb]) or 'none'} (see the listing)."
            )
    print()
    if only_null_checks and any(extra_mn.values()):
        print(
            "The null check is a design choice: passing `Out` unchecked and checking in `Out::write`, or only "
            "after the profiler's method returned, would make it free for profilers that never touch the "
            "parameter, but would weaken the \"null is answered `E_POINTER`\" guarantee; at "
            + ", ".join(f"{plus(extra_thunk[cb])}" for cb in CALLBACKS if extra_mn[cb])
            + " instructions next to a `lock` increment it is kept."
        )
        print()
    print("Commands:")
    print()
    print("```sh")
    print(commands("dispatch"))
    print("```")
    print()

    print("## 2. End to end: CoreCLR 8.0.4")
    print()
    print(
        f"Wall time of whole app runs, medians of {e2e_n} runs per configuration ({PARAMS['e2e']['rounds']} hyperfine "
        f"rounds of {PARAMS['e2e']['runs']} runs after 1 warm-up, the order of the three configurations rotated "
        "between rounds so that load from elsewhere on this shared 2-core machine spreads evenly). "
        "Both profilers are release builds; the Rust one is `examples/callback-counter`. "
        "`0x102fe` is the counter's default mask (loads, JIT, exceptions, GC, threads, suspensions); "
        "`0x8103fe` adds `COR_PRF_MONITOR_OBJECT_ALLOCATED | COR_PRF_ENABLE_OBJECT_ALLOCATED`. "
        "Workload at this scale is mostly exceptions (5 per scale unit, each ~10 callbacks); "
        "`tests/apps/Bench` adds 512 generic instantiations to JIT, 20,000 allocations per scale unit, "
        "exceptions and 4 threads per scale unit throwing and allocating concurrently."
    )
    print()
    print(e2e_table)
    print()
    print(
        "\"callbacks per run\" is the sum of all counts the profiler wrote at Shutdown in a separate run of the same "
        "command. \"Per round\" is the ratio of the two medians within each hyperfine round (adjacent runs), "
        "which shows how much of the ratio is noise from the shared machine. "
        f"\"Expected\" is what the dispatch table predicts: {extra_ns:.2f} ns more per callback (Rust minus C, best "
        "ns/call, mean of the two callbacks) times the callbacks of a run, over the C run's median time; the "
        "measured ratios scatter around it by the run-to-run noise of this shared machine. "
        "The CPU column is hyperfine's mean user+system time."
    )
    print()
    print("Commands (each hyperfine line run once per round, the order of the three commands rotated):")
    print()
    print("```sh")
    print(commands("e2e"))
    print("```")
    print()

    print("## 3. Generator and build")
    print()
    print(generator_section())
    print()
    print(
        "bindgen alone (`bench/bindgen-alone`, bindgen 0.72 as the generator uses it, same prelude, "
        "same umbrella `cor.h` + `corprof.h`, same clang arguments, prettyplease formatting) only emits the "
        "C++ view of the header; `corprof-gen expand` also runs bindgen for the plain types, walks every "
        "interface with libclang, reads the annotations, and renders vtables, wrappers, the callback trait "
        "and thunks through Askama, syn and prettyplease."
    )
    print()
    print("Commands:")
    print()
    print("```sh")
    print(commands("generator"))
    print("```")
    print()

    print("## 4. Reference counting under memcheck")
    print()
    print(
        "`scripts/stress-valgrind` runs the stress tests of `tests/runtime/reliability.rs` under "
        "`valgrind --tool=memcheck --error-exitcode=1`: 16 threads doing `QueryInterface`/`AddRef`/`Release` "
        "through the raw vtable of one profiler object (the Rust one, then the C reference), and 150 rounds of "
        "16 threads racing for the last `Release`. The 48 \"possibly lost\" bytes are libtest's own "
        "thread-local channel context, not the profiler's (`--show-leak-kinds=definite` hides them)."
    )
    print()
    print("```text")
    print(stress_section())
    print("```")
    print()
    print("Command:")
    print()
    print("```sh")
    print(commands("stress"))
    print("```")


main()
