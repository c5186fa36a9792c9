//! Shared checks of the unit tests: random parse/emit round trips, the
//! all-ones field-offset check of every Repr, and ComponentMask order.

use crate::{Error, Result};

/// Deterministic xorshift64* generator for round-trip tests.
pub(crate) struct XorShift(pub u64);

impl XorShift {
    pub(crate) fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub(crate) fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let v = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

/// One field of an offset check: its name, a setter that sets it to all
/// ones, the first byte it occupies, and the masks of its bytes.
pub(crate) type Case<'a, R> = (&'a str, fn(&mut R), usize, &'a [u8]);

/// One field of every entry of a table: its name, a setter that sets the
/// field of entry `i` to all ones, the first byte it occupies in entry 0,
/// and the masks of its bytes. Entry `i`'s copy starts `i * stride` bytes
/// later.
pub(crate) type EntryCase<'a, R> = (&'a str, fn(&mut R, usize), usize, &'a [u8]);

/// The repeated part of a table layout: `count` entries, `stride` bytes
/// apart.
pub(crate) struct Table<'a, R> {
    pub(crate) count: usize,
    pub(crate) stride: usize,
    pub(crate) fields: &'a [EntryCase<'a, R>],
}

/// For each case: emitting a default value with only that field set to
/// all ones lights exactly the case's bits, and parse reads them back.
/// Then checks that no two fields overlap and that together they cover
/// every bit of the `len`-byte structure.
pub(crate) fn check_offsets<R: Default + Clone>(
    len: usize,
    parse: fn(&[u8]) -> Result<R>,
    emit: fn(&R, &mut [u8]),
    cases: &[Case<'_, R>],
) {
    check_layout(&R::default(), len, parse, emit, cases, None);
}

/// [`check_offsets`] for a table: the fixed `cases`, then every field of
/// every entry of `table`.
pub(crate) fn check_table_offsets<R: Default + Clone>(
    len: usize,
    parse: fn(&[u8]) -> Result<R>,
    emit: fn(&R, &mut [u8]),
    cases: &[Case<'_, R>],
    table: Table<'_, R>,
) {
    check_layout(&R::default(), len, parse, emit, cases, Some(table));
}

/// The offset check starting from `base` instead of the default value;
/// `base` must emit all zeros.
pub(crate) fn check_layout<R: Clone>(
    base: &R,
    len: usize,
    parse: fn(&[u8]) -> Result<R>,
    emit: fn(&R, &mut [u8]),
    cases: &[Case<'_, R>],
    table: Option<Table<'_, R>>,
) {
    let mut zero = vec![0u8; len];
    emit(base, &mut zero);
    assert_eq!(zero, vec![0u8; len], "the base value must emit zeros");

    type Setter<'s, R> = Box<dyn Fn(&mut R) + 's>;
    let mut all: Vec<(String, Setter<'_, R>, usize, &[u8])> = cases
        .iter()
        .map(|&(name, set, start, masks)| {
            (
                name.to_string(),
                Box::new(set) as Setter<'_, R>,
                start,
                masks,
            )
        })
        .collect();
    if let Some(t) = &table {
        for i in 0..t.count {
            for &(name, set, start, masks) in t.fields {
                let set: Setter<'_, R> = Box::new(move |r| set(r, i));
                all.push((format!("{name}[{i}]"), set, start + i * t.stride, masks));
            }
        }
    }

    let mut covered = vec![0u8; len];
    for (name, set, start, masks) in &all {
        let mut value = base.clone();
        set(&mut value);
        let mut out = vec![0u8; len];
        emit(&value, &mut out);
        let mut expected = vec![0u8; len];
        expected[*start..*start + masks.len()].copy_from_slice(masks);
        assert_eq!(out, expected, "field {name}");
        for (c, e) in covered.iter_mut().zip(&expected) {
            assert_eq!(*c & e, 0, "field {name} overlaps another field");
            *c |= e;
        }
        let back = parse(&expected).unwrap();
        let mut again = vec![0u8; len];
        emit(&back, &mut again);
        assert_eq!(again, expected, "field {name} parse");
    }
    assert_eq!(covered, vec![0xff; len], "fields must cover every bit");
}

/// Random `len`-byte inputs survive parse then emit byte for byte (and
/// parse reads the output back to the same value); `emit` leaves bytes
/// past `len` alone; every shorter buffer is [`Error::Truncated`].
pub(crate) fn check_round_trip<R: PartialEq + core::fmt::Debug>(
    len: usize,
    parse: fn(&[u8]) -> Result<R>,
    emit: fn(&R, &mut [u8]),
    seed: u64,
) {
    let mut rng = XorShift(seed);
    for _ in 0..1000 {
        let mut input = vec![0u8; len + 8];
        rng.fill(&mut input);
        let value = parse(&input).unwrap();
        let mut out = vec![0xa5u8; len + 8];
        emit(&value, &mut out);
        assert_eq!(out[..len], input[..len]);
        assert!(out[len..].iter().all(|&b| b == 0xa5));
        assert_eq!(parse(&out).unwrap(), value);
    }
    let input = vec![0u8; len];
    for short in 0..len {
        assert_eq!(
            parse(&input[..short]).err(),
            Some(Error::Truncated {
                needed: len,
                got: short
            }),
            "length {short}"
        );
    }
    assert!(parse(&input).is_ok());
}

/// Checks a `comp` module: `bits[n]` must be `1 << n`, in IBA order.
pub(crate) fn check_comp_mask(bits: &[(&str, u64)]) {
    for (n, (name, bit)) in bits.iter().enumerate() {
        assert_eq!(*bit, 1u64 << n, "component {n} ({name})");
    }
}
