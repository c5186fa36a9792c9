//! Numbers in text as C's `strtoul`/`strtoull`/`strtol`/`atoi` read them (glibc, LP64): the
//! one scanner that `umad`'s sysfs reader, `ibnetfile`'s netfile parser, `ibfabric`'s
//! node-name-map parser and the `umad` tools' option parsing share.
//!
//! [`scan`] does the reading and reports its parts ([`Scan`]); the other functions are the C
//! results computed from them.

/// C's `isspace` in the C locale.
pub fn c_isspace(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// What C's `strto*l(text, &end, base)` read, split into its parts so that callers can decide
/// what to do with the cases C handles silently (a sign on an unsigned number, overflow).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scan {
    /// The magnitude of the digits read (meaningless when `overflow` is set).
    pub magnitude: u64,
    /// A `-` sign preceded the digits.
    pub negative: bool,
    /// The digits do not fit 64 bits.
    pub overflow: bool,
    /// The bytes consumed: where C's `end` points; 0 when there were no digits (C then sets
    /// `end` to the start of the text).
    pub end: usize,
}

impl Scan {
    /// The `unsigned long` C's `strtoul` returns: `ULONG_MAX` on overflow, the two's-complement
    /// negation for a `-` sign, else the magnitude.
    pub fn unsigned(self) -> u64 {
        if self.overflow {
            u64::MAX
        } else if self.negative {
            self.magnitude.wrapping_neg()
        } else {
            self.magnitude
        }
    }

    /// The `long` C's `strtol` returns: `LONG_MAX`, or `LONG_MIN` for a `-` sign, when the
    /// value does not fit; else the signed value.
    pub fn signed(self) -> i64 {
        let limit = if self.negative {
            i64::MIN.unsigned_abs()
        } else {
            i64::MAX.unsigned_abs()
        };
        if self.overflow || self.magnitude > limit {
            return if self.negative { i64::MIN } else { i64::MAX };
        }
        let value = self.magnitude as i64; // fits, or is 2^63 with a `-` sign: LONG_MIN
        if self.negative {
            value.wrapping_neg()
        } else {
            value
        }
    }

    /// The digits ended the text (C's `*end == '\0'` check); an empty text passes, as in C.
    pub fn whole(self, text: &[u8]) -> bool {
        self.end == text.len()
    }
}

/// C `strto*l(text, &end, base)` for `base` 0 (auto-detect: `0x` hex, leading `0` octal, else
/// decimal), 8, 10 or 16 (base 16 takes an optional `0x`; other bases are read as 10, none is
/// used here): leading white space, an optional sign, as many digits of the base as follow.
/// The text ends at its end or at the first byte that is not a digit of the base.
pub fn scan(text: &[u8], base: u32) -> Scan {
    let mut i = 0;
    while text.get(i).is_some_and(|&b| c_isspace(b)) {
        i += 1;
    }
    let mut negative = false;
    if let Some(&sign @ (b'-' | b'+')) = text.get(i) {
        negative = sign == b'-';
        i += 1;
    }
    let has_hex_prefix = text.get(i) == Some(&b'0')
        && matches!(text.get(i + 1), Some(b'x' | b'X'))
        && text.get(i + 2).is_some_and(u8::is_ascii_hexdigit);
    let radix = match base {
        0 if has_hex_prefix => 16,
        0 if text.get(i) == Some(&b'0') => 8,
        8 | 16 => base,
        _ => 10,
    };
    if radix == 16 && has_hex_prefix {
        i += 2;
    }
    let start = i;
    let mut magnitude: u64 = 0;
    let mut overflow = false;
    while let Some(d) = text.get(i).and_then(|&b| char::from(b).to_digit(radix)) {
        match magnitude
            .checked_mul(u64::from(radix))
            .and_then(|m| m.checked_add(u64::from(d)))
        {
            Some(m) => magnitude = m,
            None => overflow = true,
        }
        i += 1;
    }
    Scan {
        magnitude,
        negative,
        overflow,
        end: if i == start { 0 } else { i },
    }
}

/// `strtoull(s, &end, 0)`: the value and the number of bytes consumed (0 = no number).
pub fn strtoull(s: &[u8]) -> (u64, usize) {
    let r = scan(s, 0);
    (r.unsigned(), r.end)
}

/// `strtol(s, &end, 0)`: the value (saturated as C's) and the number of bytes consumed
/// (0 = no number).
pub fn strtol(s: &[u8]) -> (i64, usize) {
    let r = scan(s, 0);
    (r.signed(), r.end)
}

/// C's `atoi` as glibc computes it, `strtol(s, NULL, 10)`, kept `long` (callers narrow it).
pub fn atoi(s: &[u8]) -> i64 {
    scan(s, 10).signed()
}

/// A well-formed unsigned number in `strtoul(s, &end, 0)` syntax: digits that end the text,
/// no `-` sign, no overflow; `None` otherwise (`"08"`, `"0x"`, `"1k"`, `""`, `"-1"`).
pub fn parse_unsigned(s: &[u8]) -> Option<u64> {
    let r = scan(s, 0);
    (r.end > 0 && r.whole(s) && !r.negative && !r.overflow).then_some(r.magnitude)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strtoull_values() {
        assert_eq!(strtoull(b"12x"), (12, 2));
        assert_eq!(strtoull(b"  0x1f "), (31, 6));
        assert_eq!(strtoull(b"0x"), (0, 1));
        assert_eq!(strtoull(b"010"), (8, 3));
        assert_eq!(strtoull(b"08"), (0, 1));
        assert_eq!(strtoull(b"x"), (0, 0));
        assert_eq!(strtoull(b""), (0, 0));
        assert_eq!(strtoull(b"-"), (0, 0));
        assert_eq!(strtoull(b"-1"), (u64::MAX, 2));
        assert_eq!(strtoull(b"18446744073709551615"), (u64::MAX, 20));
        assert_eq!(strtoull(b"99999999999999999999999"), (u64::MAX, 23));
        assert_eq!(strtoull(b"-99999999999999999999999"), (u64::MAX, 24));
    }

    #[test]
    fn scan_bases() {
        assert!(scan(b"18446744073709551616", 10).overflow);
        assert!(!scan(b"18446744073709551615", 10).overflow);
        assert_eq!(scan(b"-2", 10).unsigned(), u64::MAX - 1);
        // Base 16 accepts an optional 0x prefix and no octal rule.
        assert_eq!(scan(b"0x12", 16).unsigned(), 0x12);
        assert_eq!(scan(b"012", 16).unsigned(), 0x12);
        assert_eq!(scan(b"C903", 16).unsigned(), 0xc903);
        assert_eq!(scan(b"", 16).end, 0);
        // Base 10 reads no prefix.
        assert_eq!(scan(b"0x10", 10).unsigned(), 0);
        assert_eq!(scan(b"010", 10).unsigned(), 10);
    }

    #[test]
    fn strtol_saturates() {
        assert_eq!(strtol(b"12"), (12, 2));
        assert_eq!(strtol(b" -3x"), (-3, 3));
        assert_eq!(strtol(b"0x"), (0, 1));
        assert_eq!(strtol(b"9223372036854775807").0, i64::MAX);
        assert_eq!(strtol(b"9223372036854775808").0, i64::MAX);
        assert_eq!(strtol(b"-9223372036854775808").0, i64::MIN);
        assert_eq!(strtol(b"-9223372036854775809").0, i64::MIN);
        assert_eq!(strtol(b"99999999999999999999999").0, i64::MAX);
        assert_eq!(strtol(b"-99999999999999999999999").0, i64::MIN);
    }

    #[test]
    fn atoi_is_decimal() {
        assert_eq!(atoi(b"7,"), 7);
        assert_eq!(atoi(b"0x10"), 0);
        assert_eq!(atoi(b"010"), 10);
        assert_eq!(atoi(b" +4"), 4);
        assert_eq!(atoi(b"-4"), -4);
        assert_eq!(atoi(b""), 0);
    }

    #[test]
    fn parse_unsigned_is_strict() {
        assert_eq!(parse_unsigned(b"12"), Some(12));
        assert_eq!(parse_unsigned(b" +0x1f"), Some(31));
        assert_eq!(parse_unsigned(b"010"), Some(8));
        assert_eq!(parse_unsigned(b"0"), Some(0));
        for bad in [
            "08",
            "1k",
            "",
            "0x",
            "-1",
            "-0",
            "12 ",
            "99999999999999999999999",
        ] {
            assert_eq!(parse_unsigned(bad.as_bytes()), None, "{bad:?}");
        }
    }
}
