//! Exception clauses and the other data sections after the code.

use super::*;
use body::{Bytes, MethodBody, align4};
use layout::Layout;

/// Section header flags (II.25.4.5).
const SECT_EH: u8 = 0x1;
const SECT_FAT: u8 = 0x40;
const SECT_MORE: u8 = 0x80;
/// Clause flags (II.25.4.6).
const CLAUSE_FILTER: u32 = 0x1;
const CLAUSE_FINALLY: u32 = 0x2;
const CLAUSE_FAULT: u32 = 0x4;
const CLAUSE_KINDS: u32 = 0x7;

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Section {
    /// An exception-handling section holding `count` of the body's clauses, in order; `extra`
    /// is data after the clauses within the section's size, `pad` the alignment after it.
    Eh { fat: bool, kind: u8, reserved: u16, count: usize, extra: Vec<u8>, pad: Vec<u8> },
    /// Any other section, its bytes (header included, alignment after it included) as read.
    Raw(Vec<u8>),
}

/// What an exception clause does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClauseKind {
    /// Catches exceptions of the type (a `TypeDef`, `TypeRef` or `TypeSpec` token).
    Catch(Token),
    /// Runs the filter starting at the label; the filter ends where the handler starts.
    Filter(Label),
    /// A `finally` handler.
    Finally,
    /// A `fault` handler.
    Fault,
}

/// An exception clause (II.25.4.6): ranges are half-open, `[start, end)`, so code inserted
/// right before an end label falls inside the range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clause {
    /// What the clause does.
    pub kind: ClauseKind,
    /// The first instruction of the protected block.
    pub try_start: Label,
    /// The first instruction after the protected block.
    pub try_end: Label,
    /// The first instruction of the handler.
    pub handler_start: Label,
    /// The first instruction after the handler.
    pub handler_end: Label,
    /// Flag bits beyond the kind, and a finally or fault clause's unused token field, as read.
    extra: (u32, u32),
}

impl Clause {
    /// A clause with no flags beyond its kind.
    pub fn new(kind: ClauseKind, try_start: Label, try_end: Label, handler_start: Label, handler_end: Label) -> Clause {
        Clause { kind, try_start, try_end, handler_start, handler_end, extra: (0, 0) }
    }

    pub(super) fn labels_mut(&mut self) -> impl Iterator<Item = &mut Label> {
        let filter = match &mut self.kind {
            ClauseKind::Filter(l) => Some(l),
            _ => None,
        };
        [&mut self.try_start, &mut self.try_end, &mut self.handler_start, &mut self.handler_end]
            .into_iter()
            .chain(filter)
    }
}

/// A clause from its six fields (flags, try offset and length, handler offset and length,
/// class token or filter offset).
pub(super) fn clause_from(
    c: [u32; 6],
    at: usize,
    label: &impl Fn(i64, usize) -> Result<Label, IlError>,
) -> Result<Clause, IlError> {
    let [flags, try_offset, try_len, handler_offset, handler_len, token] = c;
    let (try_offset, handler_offset) = (i64::from(try_offset), i64::from(handler_offset));
    let (kind, extra_token) = match flags & CLAUSE_KINDS {
        0 => (ClauseKind::Catch(Token(token)), 0),
        CLAUSE_FILTER => (ClauseKind::Filter(label(i64::from(token), at)?), 0),
        CLAUSE_FINALLY => (ClauseKind::Finally, token),
        CLAUSE_FAULT => (ClauseKind::Fault, token),
        _ => return err(at, IlErrorKind::BadClause),
    };
    Ok(Clause {
        kind,
        try_start: label(try_offset, at)?,
        try_end: label(try_offset + i64::from(try_len), at)?,
        handler_start: label(handler_offset, at)?,
        handler_end: label(handler_offset + i64::from(handler_len), at)?,
        extra: (flags & !CLAUSE_KINDS, extra_token),
    })
}

impl MethodBody {
    /// Reads the data sections after the code, which ends at `end` (a body offset).
    pub(super) fn parse_sections(
        &mut self,
        r: &mut Bytes<'_>,
        end: usize,
        label: &impl Fn(i64, usize) -> Result<Label, IlError>,
    ) -> Result<(), IlError> {
        self.padding = r.take(align4(end) - end)?.to_vec();
        loop {
            let start = r.pos;
            let kind = r.u8()?;
            let fat = kind & SECT_FAT != 0;
            let (size, reserved) = if fat {
                let b = r.array::<3>()?;
                (u32::from_le_bytes([b[0], b[1], b[2], 0]) as usize, 0)
            } else {
                (usize::from(r.u8()?), r.u16()?)
            };
            if size < 4 {
                return err(start, IlErrorKind::BadSection);
            }
            let more = kind & SECT_MORE != 0;
            if kind & SECT_EH != 0 {
                let clause_size = if fat { 24 } else { 12 };
                let count = (size - 4) / clause_size;
                self.clauses.reserve(count.min(r.bytes_left() / clause_size));
                for _ in 0..count {
                    let at = r.pos;
                    let c = if fat {
                        [r.u32()?, r.u32()?, r.u32()?, r.u32()?, r.u32()?, r.u32()?]
                    } else {
                        let flags = u32::from(r.u16()?);
                        let try_offset = u32::from(r.u16()?);
                        let try_len = u32::from(r.u8()?);
                        let handler_offset = u32::from(r.u16()?);
                        let handler_len = u32::from(r.u8()?);
                        [flags, try_offset, try_len, handler_offset, handler_len, r.u32()?]
                    };
                    self.clauses.push(clause_from(c, at, label)?);
                }
                let extra = r.take(size - 4 - count * clause_size)?.to_vec();
                let pad = if more { r.take(align4(r.pos) - r.pos)?.to_vec() } else { Vec::new() };
                self.sections.push(Section::Eh { fat, kind, reserved, count, extra, pad });
            } else {
                let len = if more { align4(start + size) - start } else { size };
                r.pos = start;
                self.sections.push(Section::Raw(r.take(len)?.to_vec()));
            }
            if !more {
                break;
            }
        }
        Ok(())
    }

    /// Each clause's six fields at the layout's offsets.
    pub(super) fn clause_offsets(&self, layout: &Layout) -> Result<Vec<[u32; 6]>, IlError> {
        self.clauses
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let off = |l: Label| {
                    layout.offset(l).map(|o| o as u32).ok_or(IlError { offset: i, kind: IlErrorKind::UnknownLabel(l) })
                };
                let (try_start, try_end) = (off(c.try_start)?, off(c.try_end)?);
                let (handler_start, handler_end) = (off(c.handler_start)?, off(c.handler_end)?);
                if try_end < try_start || handler_end < handler_start {
                    return err(i, IlErrorKind::BadClause);
                }
                let (kind, token) = match c.kind {
                    ClauseKind::Catch(t) => (0, t.0),
                    ClauseKind::Filter(l) => (CLAUSE_FILTER, off(l)?),
                    ClauseKind::Finally => (CLAUSE_FINALLY, c.extra.1),
                    ClauseKind::Fault => (CLAUSE_FAULT, c.extra.1),
                };
                Ok([
                    kind | c.extra.0,
                    try_start,
                    try_end - try_start,
                    handler_start,
                    handler_end - handler_start,
                    token,
                ])
            })
            .collect()
    }

    /// The sections to write: the read ones in their formats while the clauses still fit them,
    /// else one EH section (small when every clause fits) where the first one was.
    pub(super) fn plan_sections<'a>(&'a self, clauses: &'a [[u32; 6]]) -> Vec<Planned<'a>> {
        let fits_small = |cs: &[[u32; 6]]| {
            cs.len() <= 20
                && cs.iter().all(|c| c[0] <= 0xffff && c[1] <= 0xffff && c[2] <= 0xff && c[3] <= 0xffff && c[4] <= 0xff)
        };
        let read_count: usize =
            self.sections.iter().map(|s| if let Section::Eh { count, .. } = s { *count } else { 0 }).sum();
        let mut planned = Vec::new();
        if read_count == self.clauses.len() {
            let mut rest = clauses;
            for s in &self.sections {
                match s {
                    Section::Eh { fat, kind, reserved, count, extra, pad } => {
                        let (mine, after) = rest.split_at(*count);
                        rest = after;
                        let fat = *fat || !fits_small(mine);
                        planned.push(Planned::Eh { fat, kind: *kind, reserved: *reserved, clauses: mine, extra, pad });
                    }
                    Section::Raw(bytes) => planned.push(Planned::Raw(bytes)),
                }
            }
            return planned;
        }
        let eh = Planned::Eh { fat: !fits_small(clauses), kind: SECT_EH, reserved: 0, clauses, extra: &[], pad: &[] };
        let mut placed = clauses.is_empty();
        for s in &self.sections {
            match s {
                Section::Eh { .. } if !placed => {
                    planned.push(eh.clone());
                    placed = true;
                }
                Section::Eh { .. } => {}
                Section::Raw(bytes) => planned.push(Planned::Raw(bytes)),
            }
        }
        if !placed {
            planned.insert(0, eh);
        }
        planned
    }
}

#[derive(Clone)]
pub(super) enum Planned<'a> {
    Eh { fat: bool, kind: u8, reserved: u16, clauses: &'a [[u32; 6]], extra: &'a [u8], pad: &'a [u8] },
    Raw(&'a [u8]),
}

pub(super) fn write_section(section: Planned<'_>, more: bool, out: &mut Vec<u8>) -> Result<(), IlError> {
    match section {
        Planned::Raw(bytes) => {
            // The MoreSects bit follows the sections written, the rest as read.
            let start = out.len();
            out.extend_from_slice(bytes);
            out[start] = if more { out[start] | SECT_MORE } else { out[start] & !SECT_MORE };
            if more {
                out.resize(align4(out.len()), 0);
            }
        }
        Planned::Eh { fat, kind, reserved, clauses, extra, pad } => {
            let clause_size = if fat { 24 } else { 12 };
            let size = 4 + clause_size * clauses.len() + extra.len();
            if size > 0x00ff_ffff {
                return err(out.len(), IlErrorKind::TooLarge);
            }
            let mut kind = (kind & !(SECT_FAT | SECT_MORE)) | SECT_EH;
            if fat {
                kind |= SECT_FAT;
            }
            if more {
                kind |= SECT_MORE;
            }
            out.push(kind);
            if fat {
                out.extend_from_slice(&(size as u32).to_le_bytes()[..3]);
            } else {
                out.push(size as u8);
                out.extend_from_slice(&reserved.to_le_bytes());
            }
            for c in clauses {
                if fat {
                    c.iter().for_each(|f| out.extend_from_slice(&f.to_le_bytes()));
                } else {
                    out.extend_from_slice(&(c[0] as u16).to_le_bytes());
                    out.extend_from_slice(&(c[1] as u16).to_le_bytes());
                    out.push(c[2] as u8);
                    out.extend_from_slice(&(c[3] as u16).to_le_bytes());
                    out.push(c[4] as u8);
                    out.extend_from_slice(&c[5].to_le_bytes());
                }
            }
            out.extend_from_slice(extra);
            if more {
                // The alignment as read, when it is still the alignment needed.
                if align4(out.len()) - out.len() == pad.len() {
                    out.extend_from_slice(pad);
                }
                out.resize(align4(out.len()), 0);
            }
        }
    }
    Ok(())
}
