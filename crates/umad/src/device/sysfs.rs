//! Low-level sysfs readers: the Rust counterpart of libibumad's `sysfs.c`.
//!
//! Every file is read the way libibumad reads it — one `open`, **one** `read` of at most a fixed
//! number of bytes, `close` — through [`crate::sys`], so an interposer (ibsim's umad2sim) sees
//! every access. The parsing rules are libibumad's, byte for byte:
//!
//! * strings ([`parse_string`]): at most `max - 1` bytes count, the text ends at the first NUL,
//!   and the **last** `'\n'` (not only a trailing one) ends it too;
//! * numbers ([`parse_uint`]): C `strtoul(text, NULL, 0)`: leading white space, an optional
//!   sign, `0x` hex / leading-`0` octal / decimal, stop at the first non-digit, no digits → 0.
//!   So `"4: ACTIVE"` is 4, `"0x1a"` is 26 and `"2.5 Gb/sec (1X)"` is 2. Unlike C (which stores
//!   the `unsigned long` into an `unsigned int`), a value that does not fit `u32` is an error
//!   rather than silently truncated;
//! * GUIDs and GIDs ([`parse_guid`], [`parse_gid`]): 4 (8) tokens split `strsep`-style on any
//!   of `": \t\n"` (empty tokens count), each `strtoul(token, NULL, 16) & 0xffff`, most
//!   significant group first; fewer tokens is an error, extra tokens are ignored.
//!
//! Errors always carry the full path of the file: [`Error::Sysfs`] for I/O, [`Error::Parse`]
//! for content.

use std::ffi::OsString;
use std::path::Path;

use ibmad::cnum;

use crate::error::{Error, Result};
use crate::sys;

/// Read size for numbers, as libibumad's `sys_read_uint` (so at most 31 characters count).
pub(crate) const UINT_MAX_READ: usize = 32;
/// Read size for GUIDs, as libibumad's `sys_read_guid`.
pub(crate) const GUID_MAX_READ: usize = 32;
/// Read size for GIDs, as libibumad's `sys_read_gid`.
pub(crate) const GID_MAX_READ: usize = 64;
/// Read size for free-form strings. libibumad reads 20 or 40 bytes into its fixed-size struct
/// fields; the Rust API has no fixed limits, so it reads up to a page (the most a sysfs
/// attribute can hold) and leaves truncation to the C layer.
pub(crate) const STRING_MAX_READ: usize = 4096;

/// The separators of `sys_read_guid`/`sys_read_gid`.
const GUID_SEPARATORS: &[u8] = b": \t\n";

/// Reads the raw bytes of a sysfs file with one `read` of at most `max` bytes.
pub(crate) fn read_raw(path: &Path, max: usize) -> Result<Vec<u8>> {
    sys::read_small_file(path, max).map_err(|source| Error::Sysfs {
        path: path.to_path_buf(),
        source,
    })
}

/// Lists a sysfs directory in readdir order, without `.` and `..`.
pub(crate) fn list_dir(path: &Path) -> Result<Vec<OsString>> {
    sys::read_dir(path).map_err(|source| Error::Sysfs {
        path: path.to_path_buf(),
        source,
    })
}

/// `sys_read_string`: the text of a file as libibumad sees it with a `max`-byte buffer
/// (see [`parse_string`]). Non-UTF-8 bytes are replaced (kernel attributes are ASCII).
pub(crate) fn read_string(path: &Path, max: usize) -> Result<String> {
    let raw = read_raw(path, max)?;
    Ok(String::from_utf8_lossy(parse_string(&raw, max)).into_owned())
}

/// `sys_read_uint`: a number in C `strtoul(…, 0)` syntax (see [`parse_uint`]).
pub(crate) fn read_uint(path: &Path) -> Result<u32> {
    let raw = read_raw(path, UINT_MAX_READ)?;
    let text = parse_string(&raw, UINT_MAX_READ);
    parse_uint(text).ok_or_else(|| parse_error(path, "an unsigned 32-bit number", text))
}

/// `sys_read_guid`: a 64-bit GUID written as four 16-bit hex groups, returned as a host-order
/// value (`0002:c903:0001:2345` → `0x0002_c903_0001_2345`).
pub(crate) fn read_guid(path: &Path) -> Result<u64> {
    let raw = read_raw(path, GUID_MAX_READ)?;
    let text = parse_string(&raw, GUID_MAX_READ);
    parse_guid(text)
        .ok_or_else(|| parse_error(path, "a GUID (four ':'-separated hex groups)", text))
}

/// `sys_read_gid`: a 128-bit GID written as eight 16-bit hex groups, returned as its 16 bytes
/// in network (wire) order.
pub(crate) fn read_gid(path: &Path) -> Result<[u8; 16]> {
    let raw = read_raw(path, GID_MAX_READ)?;
    let text = parse_string(&raw, GID_MAX_READ);
    parse_gid(text).ok_or_else(|| parse_error(path, "a GID (eight ':'-separated hex groups)", text))
}

/// Builds an [`Error::Parse`] for `path` with the (lossily decoded, trimmed) text it held.
pub(crate) fn parse_error(path: &Path, what: &'static str, text: &[u8]) -> Error {
    Error::Parse {
        path: path.to_path_buf(),
        what,
        text: String::from_utf8_lossy(text).trim().to_owned(),
    }
}

/// The text libibumad's `sys_read_string` leaves in a `max`-byte buffer after `read` returned
/// `raw`: the NUL goes at `raw.len()` if that is below `max`, else at `max - 1`; the C string
/// then ends at the first NUL byte; finally the **last** `'\n'` is replaced by NUL
/// (`strrchr`), so `"a\nb\n"` gives `"a\nb"` and `"a\nb"` gives `"a"`.
pub(crate) fn parse_string(raw: &[u8], max: usize) -> &[u8] {
    let len = raw.len().min(max.saturating_sub(1));
    let mut text = &raw[..len];
    if let Some(nul) = text.iter().position(|&b| b == 0) {
        text = &text[..nul];
    }
    if let Some(nl) = text.iter().rposition(|&b| b == b'\n') {
        text = &text[..nl];
    }
    text
}

/// `sys_read_uint`'s parse: `strtoul(text, NULL, 0)`, but `None` where C would silently
/// change the value — the digits overflow, the value does not fit `u32`, or it is negative
/// (`"-0"` is 0). Text without digits is 0, as in C.
pub(crate) fn parse_uint(text: &[u8]) -> Option<u32> {
    let r = cnum::scan(text, 0);
    if r.overflow || (r.negative && r.magnitude != 0) {
        return None;
    }
    u32::try_from(r.magnitude).ok()
}

/// The first `n` `strsep`-style tokens of `text` (separators `": \t\n"`, empty tokens count),
/// each parsed as `strtoul(token, NULL, 16) & 0xffff`; `None` if there are fewer than `n`.
fn hex_groups<const N: usize>(text: &[u8]) -> Option<[u16; N]> {
    let mut groups = [0u16; N];
    let mut rest = Some(text);
    for group in &mut groups {
        let s = rest?;
        let (token, next) = match s.iter().position(|b| GUID_SEPARATORS.contains(b)) {
            Some(sep) => (&s[..sep], Some(&s[sep + 1..])),
            None => (s, None),
        };
        *group = (cnum::scan(token, 16).unsigned() & 0xffff) as u16;
        rest = next;
    }
    Some(groups)
}

/// `sys_read_guid`'s parse: four hex groups, most significant first, as a host-order value.
pub(crate) fn parse_guid(text: &[u8]) -> Option<u64> {
    let groups = hex_groups::<4>(text)?;
    Some(
        groups
            .iter()
            .fold(0u64, |acc, &g| (acc << 16) | u64::from(g)),
    )
}

/// `sys_read_gid`'s parse: eight hex groups, each stored big-endian, as the 16 GID bytes.
pub(crate) fn parse_gid(text: &[u8]) -> Option<[u8; 16]> {
    let groups = hex_groups::<8>(text)?;
    let mut gid = [0u8; 16];
    for (bytes, g) in gid.chunks_exact_mut(2).zip(groups) {
        bytes.copy_from_slice(&g.to_be_bytes());
    }
    Some(gid)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uint(s: &str) -> Option<u32> {
        parse_uint(s.as_bytes())
    }

    #[test]
    fn string_cut_at_last_newline() {
        assert_eq!(parse_string(b"InfiniBand\n", 20), b"InfiniBand");
        assert_eq!(parse_string(b"no newline", 20), b"no newline");
        // strrchr: the *last* newline ends the text, earlier ones stay.
        assert_eq!(parse_string(b"a\nb\n", 20), b"a\nb");
        assert_eq!(parse_string(b"a\nb", 20), b"a");
        assert_eq!(parse_string(b"\n", 20), b"");
        assert_eq!(parse_string(b"", 20), b"");
    }

    #[test]
    fn string_truncated_to_max_minus_one_and_at_nul() {
        // read() returned max bytes: the NUL goes at max-1.
        assert_eq!(parse_string(b"0123456789", 10), b"012345678");
        // A newline beyond the cut is not seen.
        assert_eq!(parse_string(b"012345678\n", 10), b"012345678");
        // Fewer bytes than max: all count.
        assert_eq!(parse_string(b"012345678", 10), b"012345678");
        assert_eq!(parse_string(b"ab\0cd\n", 10), b"ab");
        assert_eq!(parse_string(b"abc", 0), b"");
    }

    #[test]
    fn uint_kernel_formats() {
        assert_eq!(uint("4: ACTIVE"), Some(4));
        assert_eq!(uint("5: LinkUp"), Some(5));
        assert_eq!(uint("1: CA"), Some(1));
        assert_eq!(uint("0x1a"), Some(26));
        assert_eq!(uint("0X1A"), Some(26));
        assert_eq!(uint("0x02510868"), Some(0x0251_0868));
        assert_eq!(uint("0xffff"), Some(65535));
        assert_eq!(uint("40 Gb/sec (4X QDR)"), Some(40));
        assert_eq!(uint("2.5 Gb/sec (1X)"), Some(2));
        assert_eq!(uint("400 Gb/sec (4X NDR)"), Some(400));
        assert_eq!(uint("5"), Some(5));
    }

    #[test]
    fn uint_strtoul_corner_cases() {
        assert_eq!(uint(""), Some(0));
        assert_eq!(uint("   "), Some(0));
        assert_eq!(uint("garbage"), Some(0));
        assert_eq!(uint(" \t\n\x0b\x0c\r 12"), Some(12));
        assert_eq!(uint("+7"), Some(7));
        assert_eq!(uint("-0"), Some(0));
        // Leading 0 means octal; 8 and 9 end the number.
        assert_eq!(uint("010"), Some(8));
        assert_eq!(uint("08"), Some(0));
        assert_eq!(uint("0"), Some(0));
        // "0x" without a hex digit is the number 0 followed by garbage.
        assert_eq!(uint("0x"), Some(0));
        assert_eq!(uint("0xg1"), Some(0));
        assert_eq!(uint("12abc"), Some(12));
        assert_eq!(uint("1 2"), Some(1));
        assert_eq!(uint("7\0 99"), Some(7));
    }

    #[test]
    fn uint_refuses_what_c_would_truncate() {
        assert_eq!(uint("4294967295"), Some(u32::MAX));
        assert_eq!(uint("0xffffffff"), Some(u32::MAX));
        assert_eq!(uint("4294967296"), None);
        assert_eq!(uint("0x100000000"), None);
        assert_eq!(uint("99999999999999999999999999"), None);
        assert_eq!(uint("-1"), None);
        assert_eq!(uint("-0x10"), None);
    }

    #[test]
    fn guid_parse() {
        assert_eq!(
            parse_guid(b"0002:c903:0001:2345"),
            Some(0x0002_c903_0001_2345)
        );
        assert_eq!(parse_guid(b"ffff:ffff:ffff:ffff"), Some(u64::MAX));
        // Any of ": \t\n" separates; extra tokens are ignored.
        assert_eq!(parse_guid(b"1 2\t3\n4"), Some(0x0001_0002_0003_0004));
        assert_eq!(parse_guid(b"1:2:3:4:5:6"), Some(0x0001_0002_0003_0004));
        // Empty tokens count (strsep).
        assert_eq!(parse_guid(b"a::b:c"), Some(0x000a_0000_000b_000c));
        assert_eq!(parse_guid(b"1:2:3:"), Some(0x0001_0002_0003_0000));
        // Each group is masked to 16 bits, after strtoul's own rules.
        assert_eq!(parse_guid(b"12345:0:0:0"), Some(0x2345_0000_0000_0000));
        assert_eq!(parse_guid(b"-1:0:0:0"), Some(0xffff_0000_0000_0000));
        assert_eq!(parse_guid(b"0x12:0:0:zz"), Some(0x0012_0000_0000_0000));
        assert_eq!(parse_guid(b"x:y:z:w"), Some(0));
    }

    #[test]
    fn guid_too_few_groups() {
        assert_eq!(parse_guid(b""), None);
        assert_eq!(parse_guid(b"garbage"), None);
        assert_eq!(parse_guid(b"0002:c903:0001"), None);
        assert_eq!(parse_guid(b"1:2:"), None);
    }

    #[test]
    fn gid_parse() {
        let gid = parse_gid(b"fe80:0000:0000:0000:0002:c903:0001:2345").unwrap();
        assert_eq!(
            gid,
            [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xc9, 0x03, 0x00, 0x01, 0x23, 0x45]
        );
        assert_eq!(parse_gid(b"1:2:3:4:5:6:7:8:9").unwrap()[14..], [0, 8]);
        // An abbreviated IPv6 form is not what the kernel writes: too few groups.
        assert_eq!(parse_gid(b"fe80::1"), None);
        assert_eq!(parse_gid(b"fe80:0000:0000:0000:0002:c903:0001"), None);
    }
}
