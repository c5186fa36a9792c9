//! Shared checks of the fuzz targets (one target per parser in `fuzz_targets/`).
//!
//! Run one: `RUSTC_BOOTSTRAP=1 cargo fuzz run <target> -- -max_total_time=60` from the
//! repository root (cargo-fuzz passes nightly flags; the bootstrap variable lets the stable
//! toolchain accept them). `cargo xtask fuzz` runs every target; `.ci/run` runs them briefly.

use core::fmt::Debug;

/// A parser must never panic; when it accepts the input:
///
/// * the value needs at most the bytes it was given, and every one of them: the same input cut
///   one byte short is rejected;
/// * emitting the value writes exactly `len` bytes (bytes after them stay untouched) and
///   reproduces the bytes it was parsed from (every field and reserved bit is kept), whatever
///   the buffer held before;
/// * parsing the emitted bytes gives the same value.
pub fn round_trip<T: PartialEq + Debug, E>(
    data: &[u8],
    parse: impl Fn(&[u8]) -> Result<T, E>,
    len: impl Fn(&T) -> usize,
    emit: impl Fn(&T, &mut [u8]),
) {
    let Ok(value) = parse(data) else { return };
    let n = len(&value);
    assert!(
        n <= data.len(),
        "parse accepted {} bytes but the value needs {n}",
        data.len()
    );
    if n > 0 {
        assert!(
            parse(&data[..n - 1]).is_err(),
            "parse accepted {} bytes, one less than the value needs",
            n - 1
        );
    }
    // Every byte starts as the complement of the input, so a byte `emit` skips shows up.
    let mut out: Vec<u8> = data[..n].iter().map(|b| !b).collect();
    out.extend_from_slice(&[0xa5; 8]);
    emit(&value, &mut out);
    assert_eq!(&out[..n], &data[..n], "emit(parse(x)) differs from x");
    assert_eq!(&out[n..], &[0xa5; 8], "emit wrote past its buffer_len");
    match parse(&out[..n]) {
        Ok(again) => assert_eq!(again, value, "parse(emit(v)) differs from v"),
        Err(_) => panic!("parse rejected what emit wrote"),
    }
}

/// [`round_trip`] for the Reprs with the usual `parse(&[u8])`, `buffer_len(&self)` and
/// `emit(&self, &mut [u8])`, plus a block of extra checks on the parsed value (helpers that
/// take it, or more input, must not panic either).
#[macro_export]
macro_rules! repr_target {
    ($ty:ty) => {
        $crate::repr_target!($ty, |_value: &$ty, _data: &[u8]| {});
    };
    ($ty:ty, $extra:expr) => {
        libfuzzer_sys::fuzz_target!(|data: &[u8]| {
            $crate::round_trip(data, <$ty>::parse, <$ty>::buffer_len, <$ty>::emit);
            if let Ok(value) = <$ty>::parse(data) {
                let extra: fn(&$ty, &[u8]) = $extra;
                extra(&value, data);
                let _ = format!("{value:?}");
            }
        });
    };
}

/// The `i`-th byte of `data`, or 0 past its end: arguments for the helpers, taken from the
/// fuzz input after the structure.
pub fn byte(data: &[u8], i: usize) -> u8 {
    data.get(i).copied().unwrap_or(0)
}

/// A big-endian `u16` at byte `i` of `data` (zero-padded past its end).
pub fn be16(data: &[u8], i: usize) -> u16 {
    u16::from_be_bytes([byte(data, i), byte(data, i + 1)])
}

/// A big-endian `u32` at byte `i` of `data` (zero-padded past its end).
pub fn be32(data: &[u8], i: usize) -> u32 {
    u32::from_be_bytes([
        byte(data, i),
        byte(data, i + 1),
        byte(data, i + 2),
        byte(data, i + 3),
    ])
}
