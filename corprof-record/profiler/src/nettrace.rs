//! The runtime's nettrace stream (an EventPipe session's output over the diagnostics IPC socket,
//! format V4 as CoreCLR 3.1 writes it), read far enough to take each AllocationTick with the stack
//! the runtime captured for it. Pure parsing: [`read_ticks`] takes any reader.
//!
//! The stream: `Nettrace`, the serializer's name, then objects, each a type header (name and
//! version) and a body, until a null tag. The `Trace` object has a fixed body; every other object
//! is a block: its size, zeros to align the block to 4 bytes from the stream's start, the block.
//! - `MetadataBlock`, `EventBlock`: a 20-byte header (its size, flags: bit 0 compressed, the time
//!   range), then events, each a compressed header (a flags byte saying which fields differ from
//!   the event before in the block, those fields as variable-length integers) and its payload. A
//!   metadata event's payload defines a metadata ID: the provider and event ID of later events.
//! - `StackBlock`: the first stack ID, the count, then per stack its size and its addresses
//!   (innermost first). The IDs start again after a sequence point (`SPBlock`).

use crate::alloc_tick::{self, AllocationTick};
use std::collections::HashMap;
use std::io::{self, Read};

/// The largest block read: the runtime's buffers are far smaller; a bigger size means a stream
/// this reader does not understand, not a block to allocate.
const MAX_BLOCK: u32 = 64 << 20;
/// The deepest stack kept, as the walked stacks (alloc.rs).
const MAX_FRAMES: usize = 256;

/// Reads `stream` to its end (a null tag, or end of file after whole objects), calling `on_tick`
/// with every AllocationTick of the runtime's provider and its stack's addresses, innermost first
/// (empty when the event had none). An error says what could not be read; the ticks before it
/// have been given.
pub(crate) fn read_ticks(stream: impl Read, mut on_tick: impl FnMut(AllocationTick, &[u64])) -> io::Result<()> {
    let mut r = Counting { inner: stream, offset: 0 };
    let mut magic = [0u8; 8];
    r.read_exact(&mut magic)?;
    if &magic != b"Nettrace" {
        return Err(bad(format!("not a nettrace stream: {magic:02X?}")));
    }
    let serializer = r.string()?;
    if serializer != "!FastSerialization.1" {
        return Err(bad(format!("unknown serializer {serializer:?}")));
    }
    let mut state = State::default();
    loop {
        let mut tag = [0u8; 1];
        if r.inner.read(&mut tag)? == 0 {
            return Ok(()); // the stream ended between objects
        }
        r.offset += 1;
        match tag[0] {
            NULL_TAG => return Ok(()),
            BEGIN_OBJECT => {}
            other => return Err(bad(format!("tag {other} where an object begins, at {}", r.offset - 1))),
        }
        r.expect(BEGIN_OBJECT)?;
        r.expect(NULL_TAG)?;
        let _version = r.u32()?;
        let _min_reader = r.u32()?;
        let name = r.string()?;
        r.expect(END_OBJECT)?;
        if name == "Trace" {
            r.skip(TRACE_BODY)?;
        } else {
            let size = r.u32()?;
            if size > MAX_BLOCK {
                return Err(bad(format!("a {name} of {size} bytes")));
            }
            let padding = (4 - r.offset % 4) % 4;
            r.skip(padding as usize)?;
            let mut block = vec![0u8; size as usize];
            r.read_exact(&mut block)?;
            match name.as_str() {
                "MetadataBlock" => state.metadata_block(&block)?,
                "StackBlock" => state.stack_block(&block)?,
                "EventBlock" => state.event_block(&block, &mut on_tick)?,
                "SPBlock" => state.stacks.clear(),
                _ => {} // a block this reader does not need
            }
        }
        r.expect(END_OBJECT)?;
    }
}

const NULL_TAG: u8 = 1;
const BEGIN_OBJECT: u8 = 5;
const END_OBJECT: u8 = 6;
/// The `Trace` object's body: the start time (SYSTEMTIME), the clock at it and its frequency,
/// the pointer size, process ID, processor count and sampling rate.
const TRACE_BODY: usize = 16 + 8 + 8 + 4 * 4;

fn bad(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

/// A reader that knows how far it has read (blocks are aligned from the stream's start).
struct Counting<R> {
    inner: R,
    offset: u64,
}

impl<R: Read> Counting<R> {
    fn read_exact(&mut self, buf: &mut [u8]) -> io::Result<()> {
        self.inner.read_exact(buf)?;
        self.offset += buf.len() as u64;
        Ok(())
    }

    fn u32(&mut self) -> io::Result<u32> {
        let mut b = [0u8; 4];
        self.read_exact(&mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    fn expect(&mut self, tag: u8) -> io::Result<()> {
        let mut b = [0u8; 1];
        self.read_exact(&mut b)?;
        if b[0] == tag { Ok(()) } else { Err(bad(format!("tag {} where {tag} belongs, at {}", b[0], self.offset - 1))) }
    }

    /// A length-prefixed (`u32`) UTF-8 name, at most 256 bytes.
    fn string(&mut self) -> io::Result<String> {
        let len = self.u32()?;
        if len > 256 {
            return Err(bad(format!("a name of {len} bytes")));
        }
        let mut b = vec![0u8; len as usize];
        self.read_exact(&mut b)?;
        String::from_utf8(b).map_err(|e| bad(format!("a name that is not UTF-8: {e}")))
    }

    fn skip(&mut self, n: usize) -> io::Result<()> {
        let mut left = n;
        let mut buf = [0u8; 64];
        while left > 0 {
            let take = left.min(buf.len());
            self.read_exact(&mut buf[..take])?;
            left -= take;
        }
        Ok(())
    }
}

/// What later blocks refer to.
#[derive(Default)]
struct State {
    /// Metadata ID → whether it is the runtime provider's AllocationTick.
    ticks: HashMap<u32, bool>,
    /// Stack ID → addresses, innermost first.
    stacks: HashMap<u32, Vec<u64>>,
}

/// An event's header fields that later events may leave out (compressed headers repeat them).
#[derive(Default)]
struct Header {
    metadata_id: u32,
    stack_id: u32,
    data_len: u32,
}

impl State {
    fn metadata_block(&mut self, block: &[u8]) -> io::Result<()> {
        events(block, |_, payload| {
            let mut c = Cursor { bytes: payload, at: 0 };
            let id = c.u32()?;
            let provider = c.utf16z()?;
            let event = c.u32()?;
            self.ticks.insert(id, provider == alloc_tick::RUNTIME_PROVIDER && event == alloc_tick::ALLOCATION_TICK);
            Ok(())
        })
    }

    fn stack_block(&mut self, block: &[u8]) -> io::Result<()> {
        let mut c = Cursor { bytes: block, at: 0 };
        let first = c.u32()?;
        let count = c.u32()?;
        for i in 0..count {
            let size = c.u32()? as usize;
            let bytes = c.take(size)?;
            let frames = bytes.chunks_exact(8).take(MAX_FRAMES).map(|b| u64::from_le_bytes(b.try_into().unwrap()));
            self.stacks.insert(first.wrapping_add(i), frames.collect());
        }
        Ok(())
    }

    fn event_block(&mut self, block: &[u8], on_tick: &mut impl FnMut(AllocationTick, &[u64])) -> io::Result<()> {
        let (ticks, stacks) = (&self.ticks, &self.stacks);
        events(block, |header, payload| {
            if ticks.get(&header.metadata_id) == Some(&true)
                && let Some(tick) = AllocationTick::parse(payload)
            {
                let stack = stacks.get(&header.stack_id).map_or(&[][..], Vec::as_slice);
                on_tick(tick, stack);
            }
            Ok(())
        })
    }
}

/// Calls `each` with every event of a metadata or event block: its header and its payload.
fn events(block: &[u8], mut each: impl FnMut(&Header, &[u8]) -> io::Result<()>) -> io::Result<()> {
    let mut c = Cursor { bytes: block, at: 0 };
    let header_size = usize::from(c.u16()?);
    let flags = c.u16()?;
    if flags & 1 == 0 {
        return Err(bad("a block of uncompressed event headers (not what CoreCLR 3.1 writes)".to_string()));
    }
    if header_size < 4 {
        return Err(bad(format!("a block header of {header_size} bytes")));
    }
    c.take(header_size - 4)?;
    let mut h = Header::default();
    while c.at < block.len() {
        let flags = c.byte()?;
        if flags & 0x01 != 0 {
            h.metadata_id = c.varint()? as u32;
        }
        if flags & 0x02 != 0 {
            c.varint()?; // sequence number's step
            c.varint()?; // capture thread
            c.varint()?; // processor
        }
        if flags & 0x04 != 0 {
            c.varint()?; // thread
        }
        if flags & 0x08 != 0 {
            h.stack_id = c.varint()? as u32;
        }
        c.varint()?; // time stamp's step
        if flags & 0x10 != 0 {
            c.take(16)?; // activity ID
        }
        if flags & 0x20 != 0 {
            c.take(16)?; // related activity ID
        }
        if flags & 0x80 != 0 {
            h.data_len = c.varint()? as u32;
        }
        let payload = c.take(h.data_len as usize)?;
        each(&h, payload)?;
    }
    Ok(())
}

/// A bounds-checked reader of a block.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> io::Result<&'a [u8]> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end =
            end.ok_or_else(|| bad(format!("{n} bytes wanted at {} of a block of {}", self.at, self.bytes.len())))?;
        let taken = &self.bytes[self.at..end];
        self.at = end;
        Ok(taken)
    }

    fn byte(&mut self) -> io::Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> io::Result<u16> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().unwrap()))
    }

    fn u32(&mut self) -> io::Result<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }

    /// An unsigned LEB128 integer of at most 10 bytes.
    fn varint(&mut self) -> io::Result<u64> {
        let mut value = 0u64;
        for i in 0..10 {
            let b = self.byte()?;
            value |= u64::from(b & 0x7F) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(bad("a variable-length integer over 10 bytes".to_string()))
    }

    /// A NUL-terminated UTF-16 string.
    fn utf16z(&mut self) -> io::Result<String> {
        let mut units = Vec::new();
        loop {
            let unit = u16::from_le_bytes(self.take(2)?.try_into().unwrap());
            if unit == 0 {
                return Ok(String::from_utf16_lossy(&units));
            }
            units.push(unit);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(mut v: u64, out: &mut Vec<u8>) {
        loop {
            let b = (v & 0x7F) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return;
            }
            out.push(b | 0x80);
        }
    }

    fn utf16z(s: &str) -> Vec<u8> {
        s.encode_utf16().chain([0]).flat_map(u16::to_le_bytes).collect()
    }

    /// A stream as the runtime writes one: the header, a `Trace`, then `blocks` (name, body).
    fn stream(blocks: &[(&str, Vec<u8>)]) -> Vec<u8> {
        let mut s = b"Nettrace".to_vec();
        s.extend(20u32.to_le_bytes());
        s.extend(b"!FastSerialization.1");
        let mut object = |s: &mut Vec<u8>, name: &str| {
            s.extend([BEGIN_OBJECT, BEGIN_OBJECT, NULL_TAG]);
            s.extend(4u32.to_le_bytes());
            s.extend(4u32.to_le_bytes());
            s.extend((name.len() as u32).to_le_bytes());
            s.extend(name.as_bytes());
            s.push(END_OBJECT);
        };
        object(&mut s, "Trace");
        s.extend([0u8; TRACE_BODY]);
        s.push(END_OBJECT);
        for (name, body) in blocks {
            object(&mut s, name);
            s.extend((body.len() as u32).to_le_bytes());
            while s.len() % 4 != 0 {
                s.push(0);
            }
            s.extend(body);
            s.push(END_OBJECT);
        }
        s.push(NULL_TAG);
        s
    }

    /// A block of compressed events: (metadata ID, stack ID, payload), each header giving every
    /// field.
    fn event_block(events: &[(u32, u32, Vec<u8>)]) -> Vec<u8> {
        let mut b = 20u16.to_le_bytes().to_vec();
        b.extend(1u16.to_le_bytes());
        b.extend([0u8; 16]);
        for (metadata, stack, payload) in events {
            b.push(0x01 | 0x02 | 0x04 | 0x08 | 0x80);
            varint(u64::from(*metadata), &mut b);
            varint(0, &mut b);
            varint(7, &mut b);
            varint(0xFFFF_FFFF, &mut b);
            varint(7, &mut b);
            varint(u64::from(*stack), &mut b);
            varint(12345, &mut b);
            varint(payload.len() as u64, &mut b);
            b.extend(payload);
        }
        b
    }

    fn metadata(id: u32, provider: &str, event: u32) -> Vec<u8> {
        let mut p = id.to_le_bytes().to_vec();
        p.extend(utf16z(provider));
        p.extend(event.to_le_bytes());
        p.extend(utf16z(""));
        p.extend([0u8; 8 + 4 + 4 + 4]);
        p
    }

    fn tick(amount: u64, name: &str) -> Vec<u8> {
        let mut p = (amount as u32).to_le_bytes().to_vec();
        p.extend(0u32.to_le_bytes());
        p.extend(7u16.to_le_bytes());
        p.extend(amount.to_le_bytes());
        p.extend(0x7f00_1234u64.to_le_bytes());
        p.extend(utf16z(name));
        p
    }

    fn stacks(first: u32, stacks: &[&[u64]]) -> Vec<u8> {
        let mut b = first.to_le_bytes().to_vec();
        b.extend((stacks.len() as u32).to_le_bytes());
        for s in stacks {
            b.extend(((s.len() * 8) as u32).to_le_bytes());
            b.extend(s.iter().flat_map(|ip| ip.to_le_bytes()));
        }
        b
    }

    fn read(s: &[u8]) -> (io::Result<()>, Vec<(u64, String, Vec<u64>)>) {
        let mut got = Vec::new();
        let result = read_ticks(s, |t, stack| got.push((t.amount, t.type_name, stack.to_vec())));
        (result, got)
    }

    #[test]
    fn ticks_come_with_their_stacks_and_other_events_are_skipped() {
        let s = stream(&[
            (
                "MetadataBlock",
                event_block(&[
                    (0, 0, metadata(1, alloc_tick::RUNTIME_PROVIDER, 10)),
                    (0, 0, metadata(2, alloc_tick::RUNTIME_PROVIDER, 1)),
                    (0, 0, metadata(3, "Other", 10)),
                ]),
            ),
            ("StackBlock", stacks(1, &[&[0x10, 0x20, 0x30], &[0x40]])),
            (
                "EventBlock",
                event_block(&[
                    (1, 1, tick(100_000, "System.Byte[]")),
                    (2, 2, tick(1, "not a tick")),
                    (3, 2, tick(2, "another provider's")),
                    (1, 2, tick(200_000, "App.Node")),
                    (1, 0, tick(300_000, "no stack")),
                ]),
            ),
            ("SPBlock", vec![0u8; 12]),
            ("StackBlock", stacks(1, &[&[0x50]])),
            ("EventBlock", event_block(&[(1, 1, tick(400_000, "after the sequence point"))])),
        ]);
        let (result, got) = read(&s);
        result.unwrap();
        assert_eq!(
            got,
            vec![
                (100_000, "System.Byte[]".to_string(), vec![0x10, 0x20, 0x30]),
                (200_000, "App.Node".to_string(), vec![0x40]),
                (300_000, "no stack".to_string(), vec![]),
                (400_000, "after the sequence point".to_string(), vec![0x50]),
            ]
        );
    }

    /// Fields a compressed header leaves out keep the event before's values.
    #[test]
    fn compressed_headers_repeat_what_they_leave_out() {
        let meta = ("MetadataBlock", event_block(&[(0, 0, metadata(1, alloc_tick::RUNTIME_PROVIDER, 10))]));
        let mut block = event_block(&[(1, 1, tick(5, "A"))]);
        let second = tick(6, "B");
        assert_eq!(second.len(), tick(5, "A").len());
        block.push(0x00); // nothing differs: the same metadata, stack and length
        varint(99, &mut block);
        block.extend(&second);
        let s = stream(&[meta, ("StackBlock", stacks(1, &[&[0xAA]])), ("EventBlock", block)]);
        let (result, got) = read(&s);
        result.unwrap();
        assert_eq!(got, vec![(5, "A".to_string(), vec![0xAA]), (6, "B".to_string(), vec![0xAA])]);
    }

    /// A cut or corrupt stream is an error, never a panic or a huge allocation; the ticks before
    /// the damage are given.
    #[test]
    fn damaged_streams_are_errors() {
        let good = stream(&[
            ("MetadataBlock", event_block(&[(0, 0, metadata(1, alloc_tick::RUNTIME_PROVIDER, 10))])),
            ("EventBlock", event_block(&[(1, 0, tick(5, "A"))])),
        ]);
        let (result, got) = read(&good);
        assert!(result.is_ok() && got.len() == 1);
        for len in 0..good.len() - 1 {
            let (result, got) = read(&good[..len]);
            assert!(got.len() <= 1, "{len}");
            // Cut between objects it may end cleanly; anywhere else it is an error.
            if result.is_ok() {
                assert!(good[len] == BEGIN_OBJECT || good[len] == NULL_TAG, "{len}");
            }
        }
        let mut huge = good.clone();
        let at = huge.windows(13).position(|w| w == b"MetadataBlock").unwrap() + 14;
        huge[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(read(&huge).0.unwrap_err().to_string().contains("MetadataBlock"));
        assert!(read(b"NotTrace\x14\0\0\0").0.is_err());
    }
}
