//! `GUID`: the 16-byte COM identifier, with `const` parsing so CLSIDs can be written as text.

use std::fmt;

/// A COM GUID (IID, CLSID), laid out as in C.
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct GUID {
    /// The first 8 hex digits of the text form.
    pub data1: u32,
    /// The next 4.
    pub data2: u16,
    /// The next 4.
    pub data3: u16,
    /// The last 16, as bytes in text order.
    pub data4: [u8; 8],
}

impl GUID {
    /// From the 128-bit number whose hex digits read like the text form.
    pub const fn from_u128(v: u128) -> GUID {
        GUID {
            data1: (v >> 96) as u32,
            data2: (v >> 80) as u16,
            data3: (v >> 64) as u16,
            data4: ((v as u64).to_be_bytes()),
        }
    }

    /// The 128-bit number whose hex digits read like the text form (the inverse of
    /// [`GUID::from_u128`]).
    pub const fn to_u128(&self) -> u128 {
        ((self.data1 as u128) << 96)
            | ((self.data2 as u128) << 80)
            | ((self.data3 as u128) << 64)
            | (u64::from_be_bytes(self.data4) as u128)
    }

    /// Parses `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, with or without braces.
    pub const fn try_parse(text: &str) -> Option<GUID> {
        let b = text.as_bytes();
        let (start, end) = if b.len() == 38 && b[0] == b'{' && b[37] == b'}' { (1, 37) } else { (0, b.len()) };
        if end - start != 36 {
            return None;
        }
        let mut v: u128 = 0;
        let mut i = start;
        while i < end {
            let at = i - start;
            let c = b[i];
            if at == 8 || at == 13 || at == 18 || at == 23 {
                if c != b'-' {
                    return None;
                }
            } else {
                let d = match c {
                    b'0'..=b'9' => c - b'0',
                    b'a'..=b'f' => c - b'a' + 10,
                    b'A'..=b'F' => c - b'A' + 10,
                    _ => return None,
                };
                v = (v << 4) | d as u128;
            }
            i += 1;
        }
        Some(GUID::from_u128(v))
    }

    /// Like [`GUID::try_parse`]; in a `const` a malformed text is a compile error.
    pub const fn parse(text: &str) -> GUID {
        match GUID::try_parse(text) {
            Some(g) => g,
            None => panic!("malformed GUID: expected xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"),
        }
    }
}

impl fmt::Display for GUID {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = &self.data4;
        write!(
            f,
            "{:08X}-{:04X}-{:04X}-{:02X}{:02X}-{:02X}{:02X}{:02X}{:02X}{:02X}{:02X}",
            self.data1, self.data2, self.data3, d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]
        )
    }
}

impl fmt::Debug for GUID {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{{{self}}}")
    }
}

impl std::str::FromStr for GUID {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        GUID::try_parse(s).ok_or_else(|| format!("malformed GUID `{s}`"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips_and_matches_c_layout() {
        let g = GUID::parse("{176FBED1-A55C-4796-98CA-A9DA0EF883E7}");
        assert_eq!(g.data1, 0x176FBED1);
        assert_eq!(g.data2, 0xA55C);
        assert_eq!(g.data3, 0x4796);
        assert_eq!(g.data4, [0x98, 0xCA, 0xA9, 0xDA, 0x0E, 0xF8, 0x83, 0xE7]);
        assert_eq!(g.to_string(), "176FBED1-A55C-4796-98CA-A9DA0EF883E7");
        assert_eq!(GUID::from_u128(g.to_u128()), g);
        assert_eq!(std::mem::size_of::<GUID>(), 16);
    }

    #[test]
    fn malformed_text_is_rejected() {
        assert!(GUID::try_parse("176FBED1-A55C-4796-98CA-A9DA0EF883E").is_none());
        assert!(GUID::try_parse("176FBED1xA55C-4796-98CA-A9DA0EF883E7").is_none());
        assert!(GUID::try_parse("176FBED1-A55C-4796-98CA-A9DA0EF883EZ").is_none());
        assert!("nope".parse::<GUID>().is_err());
    }
}
