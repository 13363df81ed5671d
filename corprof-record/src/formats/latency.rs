//! The methods mode's outputs: one line per method (text), the figures and histograms as JSON,
//! and a latency histogram per method as a picture (SVG, or SVG in an HTML page).

use crate::latency::{MethodLatency, MethodsReport, bucket_range};
use std::io::{self, Write};

/// The most methods the picture draws (the slowest in total first); the text and JSON have all.
pub const MAX_PANELS: usize = 100;

/// A duration in microseconds, three decimals (nanoseconds).
fn micros(ns: f64) -> String {
    format!("{:.3}", ns / 1000.0)
}

fn quantile_us(m: &MethodLatency, q: f64) -> String {
    m.quantile_ns(q).map_or_else(|| "-".to_string(), micros)
}

/// `Namespace.Type::Method calls=<n> exceptions=<n> p50_us=<x> p99_us=<x> max_us=<x>`, one line
/// per method in name order; a method never called has `-` for its durations.
pub fn text_line(m: &MethodLatency) -> String {
    let max = if m.calls == 0 { "-".to_string() } else { micros(m.max_ns as f64) };
    format!(
        "{} calls={} exceptions={} p50_us={} p99_us={} max_us={max}",
        m.name.replace(['\n', '\r'], " "),
        m.calls,
        m.exceptions,
        quantile_us(m, 0.5),
        quantile_us(m, 0.99)
    )
}

/// The text table: [`text_line`] for every method.
pub fn write_text(report: &MethodsReport, out: &mut dyn Write) -> io::Result<()> {
    for m in &report.methods {
        writeln!(out, "{}", text_line(m))?;
    }
    Ok(())
}

/// Every figure as JSON: per method its counts, quantiles and mean in microseconds (`null`
/// without calls) and its histogram's buckets (`low_ns`, `high_ns`, `count`); the patterns that
/// named nothing; the methods refused and why.
pub fn write_json(report: &MethodsReport, title: &str, out: &mut dyn Write) -> io::Result<()> {
    use serde_json::{Value, json};
    let us = |ns: Option<f64>| ns.map_or(Value::Null, |ns| json!((ns / 1000.0 * 1000.0).round() / 1000.0));
    let methods: Vec<Value> = report
        .methods
        .iter()
        .map(|m| {
            let buckets: Vec<Value> = m
                .buckets
                .iter()
                .map(|(&b, &n)| {
                    let (low, high) = bucket_range(b);
                    json!({ "low_ns": low, "high_ns": high, "count": n })
                })
                .collect();
            json!({
                "method": m.name,
                "calls": m.calls,
                "exceptions": m.exceptions,
                "p50_us": us(m.quantile_ns(0.5)),
                "p90_us": us(m.quantile_ns(0.9)),
                "p99_us": us(m.quantile_ns(0.99)),
                "max_us": us((m.calls > 0).then_some(m.max_ns as f64)),
                "mean_us": us(m.mean_ns()),
                "histogram": buckets,
            })
        })
        .collect();
    let refused: Vec<Value> =
        report.refused.iter().map(|(method, reason)| json!({ "method": method, "reason": reason })).collect();
    let doc = json!({
        "title": title,
        "unit": "microseconds",
        "methods": methods,
        "unmatched": report.unmatched,
        "refused": refused,
    });
    serde_json::to_writer_pretty(&mut *out, &doc).map_err(io::Error::other)?;
    writeln!(out)
}

fn escape(text: &str) -> String {
    let mut s = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => s.push_str("&lt;"),
            '>' => s.push_str("&gt;"),
            '&' => s.push_str("&amp;"),
            '"' => s.push_str("&quot;"),
            '\'' => s.push_str("&#39;"),
            c if c.is_control() => s.push(' '),
            c => s.push(c),
        }
    }
    s
}

/// A duration as people read it: `850 ns`, `12.5 µs`, `3.2 ms`, `1.5 s`.
pub fn human(ns: f64) -> String {
    let (value, unit) = if ns < 1e3 {
        (ns, "ns")
    } else if ns < 1e6 {
        (ns / 1e3, "µs")
    } else if ns < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    if value >= 100.0 || unit == "ns" { format!("{value:.0} {unit}") } else { format!("{value:.3} {unit}") }
        .replace(".000 ", " ")
}

const WIDTH: f64 = 960.0;
const PANEL: f64 = 170.0;
const LEFT: f64 = 60.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 60.0;

/// The picture: one histogram per method (calls per power-of-two span of durations, log scale
/// across), with its median and 99th percentile marked.
pub fn write_svg(report: &MethodsReport, title: &str, out: &mut dyn Write) -> io::Result<()> {
    let mut shown: Vec<&MethodLatency> = report.methods.iter().filter(|m| m.calls > 0).collect();
    shown.sort_by(|a, b| b.sum_ns.cmp(&a.sum_ns).then_with(|| a.name.cmp(&b.name)));
    let left_out = shown.len().saturating_sub(MAX_PANELS);
    shown.truncate(MAX_PANELS);
    let idle = report.methods.iter().filter(|m| m.calls == 0).count();
    let height = TOP + PANEL * shown.len() as f64 + 40.0;
    writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="Verdana, sans-serif" font-size="12">"#
    )?;
    writeln!(out, r##"<rect width="100%" height="100%" fill="#fdfdfb"/>"##)?;
    writeln!(out, r#"<text x="{}" y="24" font-size="17" text-anchor="middle">{}</text>"#, WIDTH / 2.0, escape(title))?;
    let mut note = format!("{} methods called", shown.len() + left_out);
    if left_out > 0 {
        note.push_str(&format!(", the {MAX_PANELS} slowest in total shown (all in --format text or json)"));
    }
    if idle > 0 {
        note.push_str(&format!("; {idle} wrapped and never called"));
    }
    writeln!(out, r##"<text x="{}" y="44" fill="#555" text-anchor="middle">{}</text>"##, WIDTH / 2.0, escape(&note))?;
    for (i, m) in shown.iter().enumerate() {
        panel(m, TOP + PANEL * i as f64, out)?;
    }
    if shown.is_empty() {
        writeln!(
            out,
            r#"<text x="{}" y="{}" text-anchor="middle">No wrapped method was called.</text>"#,
            WIDTH / 2.0,
            TOP + 10.0
        )?;
    }
    writeln!(out, "</svg>")
}

/// Bars per decade of durations.
const BARS_PER_DECADE: f64 = 8.0;

/// One method's histogram at `y`: durations across on a log scale in whole decades (at least
/// two), calls per eighth of a decade up.
fn panel(m: &MethodLatency, y: f64, out: &mut dyn Write) -> io::Result<()> {
    let log = |ns: u64| (ns.max(1) as f64).log10();
    let (min_ns, max_ns) = match (m.buckets.keys().next(), m.buckets.keys().next_back()) {
        (Some(&lo), Some(&hi)) => (bucket_range(lo).0, bucket_range(hi).0.max(m.max_ns)),
        _ => (1, 1),
    };
    let first = log(min_ns).floor();
    let last = (log(max_ns).floor() + 1.0).max(first + 2.0);
    let bars = ((last - first) * BARS_PER_DECADE) as usize;
    let mut counts = vec![0u64; bars];
    for (&b, &n) in &m.buckets {
        // A bucket goes where its lower bound is: buckets are far narrower than a bar.
        let at = ((log(bucket_range(b).0) - first) * BARS_PER_DECADE) as usize;
        counts[at.min(bars - 1)] += n;
    }
    let (plot_w, plot_h) = (WIDTH - LEFT - RIGHT, PANEL - 70.0);
    let x_of = |log10: f64| LEFT + plot_w * ((log10 - first) / (last - first)).clamp(0.0, 1.0);
    let base = y + 30.0 + plot_h;
    let tallest = counts.iter().copied().max().unwrap_or(1).max(1);
    let summary = format!(
        "{}   calls {}   exceptions {}   p50 {}   p99 {}   max {}",
        m.name,
        m.calls,
        m.exceptions,
        m.quantile_ns(0.5).map_or_else(|| "-".into(), human),
        m.quantile_ns(0.99).map_or_else(|| "-".into(), human),
        human(m.max_ns as f64)
    );
    writeln!(out, r#"<g><text x="{LEFT}" y="{}" font-weight="bold">{}</text>"#, y + 18.0, escape(&summary))?;
    writeln!(out, r##"<line x1="{LEFT}" y1="{base}" x2="{}" y2="{base}" stroke="#888"/>"##, LEFT + plot_w)?;
    for (i, &n) in counts.iter().enumerate().filter(|(_, n)| **n > 0) {
        let (from, to) = (first + i as f64 / BARS_PER_DECADE, first + (i + 1) as f64 / BARS_PER_DECADE);
        let (x0, x1) = (x_of(from), x_of(to));
        let h = (n as f64 / tallest as f64 * plot_h).max(1.0);
        writeln!(
            out,
            r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{h:.1}" fill="#e8743b"><title>{} to {}: {n} calls</title></rect>"##,
            x0 + 0.5,
            base - h,
            (x1 - x0 - 1.0).max(1.0),
            escape(&human(10f64.powf(from))),
            escape(&human(10f64.powf(to)))
        )?;
    }
    // A tick and a label at each decade.
    let mut decade = first;
    while decade <= last {
        let x = x_of(decade);
        writeln!(
            out,
            r##"<line x1="{x:.1}" y1="{base}" x2="{x:.1}" y2="{}" stroke="#888"/><text x="{x:.1}" y="{}" fill="#555" font-size="10" text-anchor="middle">{}</text>"##,
            base + 4.0,
            base + 16.0,
            escape(&human(10f64.powf(decade)))
        )?;
        decade += 1.0;
    }
    writeln!(
        out,
        r##"<text x="{}" y="{}" fill="#555" font-size="10" text-anchor="end">{tallest}</text>"##,
        LEFT - 6.0,
        base - plot_h + 10.0
    )?;
    // The median and the 99th percentile, each label on its own row so that they never overlap.
    for (row, (q, colour, label)) in [(0.5, "#1f5fa8", "p50"), (0.99, "#b3261e", "p99")].into_iter().enumerate() {
        let Some(ns) = m.quantile_ns(q) else { continue };
        let x = x_of(ns.max(1.0).log10());
        writeln!(
            out,
            r##"<line x1="{x:.1}" y1="{}" x2="{x:.1}" y2="{base}" stroke="{colour}" stroke-dasharray="4 3"/><text x="{:.1}" y="{}" fill="{colour}" font-size="10">{label}</text>"##,
            base - plot_h,
            x + 3.0,
            base - plot_h + 10.0 + 12.0 * row as f64
        )?;
    }
    writeln!(out, "</g>")
}

/// The picture in an HTML page.
pub fn write_html(report: &MethodsReport, title: &str, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{}</title></head><body style=\"margin:0\">",
        escape(title)
    )?;
    write_svg(report, title, out)?;
    writeln!(out, "</body></html>")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report() -> MethodsReport {
        let mut a = MethodLatency::new("Shop.Cart::Checkout");
        for ns in [900u64, 1_000, 1_100, 50_000] {
            a.add(ns, ns > 10_000);
        }
        let idle = MethodLatency::new("Shop.Cart::Idle<T>");
        MethodsReport::new([a, idle], vec!["No::Such".into()], vec![])
    }

    #[test]
    fn text_has_one_line_per_method_in_the_promised_shape() {
        let mut out = Vec::new();
        write_text(&report(), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(
            lines[0].starts_with("Shop.Cart::Checkout calls=4 exceptions=1 p50_us=1.0")
                && lines[0].ends_with(" max_us=50.000"),
            "{}",
            lines[0]
        );
        assert_eq!(lines[1], "Shop.Cart::Idle<T> calls=0 exceptions=0 p50_us=- p99_us=- max_us=-");
    }

    #[test]
    fn the_picture_is_xml_with_a_bar_per_span_and_escaped_names() {
        let mut out = Vec::new();
        write_svg(&report(), "a <title> & more", &mut out).unwrap();
        let svg = String::from_utf8(out).unwrap();
        let doc = roxmltree::Document::parse(&svg).expect("well-formed SVG");
        let bars =
            doc.descendants().filter(|n| n.has_tag_name("rect") && n.attribute("fill") == Some("#e8743b")).count();
        // Eighths of a decade: 900 ns in 10^2.875.., 1000 and 1100 ns in 10^3..10^3.125, 50 µs
        // in 10^4.625...
        assert_eq!(bars, 3);
        assert!(svg.contains("a &lt;title&gt; &amp; more") && svg.contains("1 wrapped and never called"));
    }

    #[test]
    fn json_has_nulls_for_a_method_never_called() {
        let mut out = Vec::new();
        write_json(&report(), "t", &mut out).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["methods"][1]["p50_us"], serde_json::Value::Null);
        assert_eq!(v["methods"][0]["calls"], 4);
        assert_eq!(v["methods"][0]["max_us"], 50.0);
        assert_eq!(v["unmatched"][0], "No::Such");
        let counted: u64 =
            v["methods"][0]["histogram"].as_array().unwrap().iter().map(|b| b["count"].as_u64().unwrap()).sum();
        assert_eq!(counted, 4);
    }
}
