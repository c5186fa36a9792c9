//! Shared checks of the fuzz targets (one target per parser in `fuzz_targets/`).
//!
//! Run one: `RUSTC_BOOTSTRAP=1 cargo fuzz run <target> -- -max_total_time=60` from the
//! repository root (cargo-fuzz passes nightly flags; the bootstrap variable lets the stable
//! toolchain accept them). `.ci/run` runs every target briefly.

/// A parser must never panic; when it accepts the input, emitting the value must reproduce
/// exactly the bytes it was parsed from (every field and reserved bit is kept).
pub fn round_trip<T, E>(
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
    let mut out = vec![0u8; n];
    emit(&value, &mut out);
    assert_eq!(&out[..], &data[..n], "emit(parse(x)) differs from x");
}
