//! Flame graphs drawn by inferno (the Rust port of flamegraph.pl): an interactive SVG (click to
//! zoom, search, a tooltip per frame), and the same SVG inline in a small HTML page.

use std::io::{self, Write};

use inferno::flamegraph::{self, Options};

use super::{folded, unit_label};
use crate::profile::Profile;

/// The interactive SVG.
pub(super) fn write_svg(profile: &Profile, title: &str, out: &mut dyn Write) -> io::Result<()> {
    let lines = folded::lines(profile);
    if lines.is_empty() {
        // inferno refuses an empty input; an empty recording is still a valid (empty) picture.
        return write!(out, "{}", empty_svg(title));
    }
    let mut options = Options::default();
    options.title = title.to_string();
    options.count_name = unit_label(profile.unit).to_string();
    // Colours from a hash of the name: the same method has the same colour in every picture.
    options.hash = true;
    options.deterministic = true;
    flamegraph::from_lines(&mut options, lines.iter().map(String::as_str), out).map_err(io::Error::other)
}

/// The SVG inline in an HTML page. inferno's script finds its elements by id in the document and
/// starts from the `<svg onload>`, which fires for inline SVG too, so zoom and search keep working.
pub(super) fn write_html(profile: &Profile, title: &str, out: &mut dyn Write) -> io::Result<()> {
    let mut svg = Vec::new();
    write_svg(profile, title, &mut svg)?;
    let svg = String::from_utf8(svg).map_err(io::Error::other)?;
    // The XML prolog and DOCTYPE are for a standalone file; inside HTML they are noise.
    let svg = svg.find("<svg").map_or(svg.as_str(), |at| &svg[at..]);
    write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>{}</title>\n\
         <style>body {{ margin: 0; background: #fff; }} body > svg {{ display: block; width: 100%; }}</style>\n</head>\n<body>\n{svg}</body>\n</html>\n",
        escape(title)
    )
}

fn empty_svg(title: &str) -> String {
    format!(
        "<?xml version=\"1.0\" standalone=\"no\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"1200\" \
         height=\"60\" viewBox=\"0 0 1200 60\"><text x=\"600\" y=\"24\" text-anchor=\"middle\" \
         font-family=\"Verdana\" font-size=\"17\">{}</text><text x=\"600\" y=\"48\" text-anchor=\"middle\" \
         font-family=\"Verdana\" font-size=\"12\">no samples were recorded</text></svg>\n",
        escape(title)
    )
}

/// Escapes text for XML and HTML.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}
