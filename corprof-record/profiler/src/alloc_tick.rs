//! The runtime's AllocationTick event, read from an in-process EventPipe session (.NET 5+): the
//! cheap source of the alloc mode's samples.
//!
//! The GC raises `GCAllocationTick` (provider `Microsoft-Windows-DotNETRuntime`, keyword GC,
//! level verbose, event 10) each time about 100 KB more have been allocated on a heap, from the
//! allocation that crossed the threshold, with the bytes allocated since the previous tick. Taken
//! as one sample of that many bytes on that allocation's stack and type, the ticks' totals are the
//! bytes allocated, and each stack's share is its share of the threshold crossings — about its
//! share of the bytes. Unlike `ObjectAllocated`, which sends every allocation down the runtime's
//! slow path, the ticks cost nothing between two of them.
//!
//! This file takes an event's payload and gives the tick's fields ([`AllocationTick::parse`]).

/// The runtime's provider.
pub const RUNTIME_PROVIDER: &str = "Microsoft-Windows-DotNETRuntime";
/// The provider's GC keyword, which AllocationTick belongs to.
pub const GC_KEYWORD: u64 = 0x1;
/// AllocationTick's event ID.
pub const ALLOCATION_TICK: u32 = 10;

/// The fields of one AllocationTick (versions 2 to 4 start alike; later fields are not needed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllocationTick {
    /// Bytes allocated on the heap since the previous tick (`AllocationAmount64`).
    pub amount: u64,
    /// 0 small object heap, 1 large, 2 pinned.
    pub kind: u32,
    /// The type of the allocation that crossed the threshold (`TypeID`: the runtime writes the
    /// type's handle, which is what it hands profilers as the type's ClassID).
    pub type_id: usize,
    /// Its name as the runtime writes it (`TypeName`).
    pub type_name: String,
}

impl AllocationTick {
    /// Reads a payload laid out as the runtime's manifest says: `AllocationAmount` u32,
    /// `AllocationKind` u32, `ClrInstanceID` u16, `AllocationAmount64` u64, `TypeID` pointer,
    /// `TypeName` NUL-terminated UTF-16, then fields not read. `None` when the bytes are too
    /// short for that (a version 0/1 tick, or not an AllocationTick).
    pub fn parse(data: &[u8]) -> Option<AllocationTick> {
        let u32_at = |at: usize| Some(u32::from_le_bytes(data.get(at..at + 4)?.try_into().ok()?));
        let u64_at = |at: usize| Some(u64::from_le_bytes(data.get(at..at + 8)?.try_into().ok()?));
        let kind = u32_at(4)?;
        let amount = u64_at(10)?;
        let type_id = u64_at(18)? as usize;
        let units: Vec<u16> = data.get(26..)?.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
        let end = units.iter().position(|&u| u == 0)?;
        Some(AllocationTick { amount, kind, type_id, type_name: String::from_utf16_lossy(&units[..end]) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A version-4 payload as the runtime writes it.
    fn payload(amount: u64, kind: u32, class: u64, name: &str) -> Vec<u8> {
        let mut data = Vec::new();
        data.extend((amount as u32).to_le_bytes());
        data.extend(kind.to_le_bytes());
        data.extend(7u16.to_le_bytes());
        data.extend(amount.to_le_bytes());
        data.extend(class.to_le_bytes());
        data.extend(name.encode_utf16().chain([0]).flat_map(u16::to_le_bytes));
        data.extend(0u32.to_le_bytes()); // HeapIndex
        data.extend(0x1234u64.to_le_bytes()); // Address
        data.extend(1024u64.to_le_bytes()); // ObjectSize
        data
    }

    #[test]
    fn a_tick_is_read_field_by_field() {
        let tick = AllocationTick::parse(&payload(5_000_000_000, 1, 0x7f00_dead_beef, "System.Byte[]")).unwrap();
        assert_eq!(
            tick,
            AllocationTick {
                amount: 5_000_000_000,
                kind: 1,
                type_id: 0x7f00_dead_beef,
                type_name: "System.Byte[]".to_string()
            }
        );
    }

    #[test]
    fn short_or_unterminated_payloads_are_refused() {
        let full = payload(100_000, 0, 1, "A");
        let name_end = 26 + 2 * 2; // "A" and its NUL
        for len in 0..name_end {
            assert_eq!(AllocationTick::parse(&full[..len]), None, "{len} bytes");
        }
        assert!(AllocationTick::parse(&full[..name_end]).is_some());
        // An odd byte after the name's first unit, no NUL: refused, not read past the end.
        assert_eq!(AllocationTick::parse(&full[..27 + 2]), None);
    }
}
