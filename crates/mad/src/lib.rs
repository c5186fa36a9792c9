#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

#[macro_use]
mod macros;

pub mod attr;
pub mod cnum;
pub mod dump;
pub mod header;
pub mod names;
pub mod perf;
pub mod rmpp;
pub mod sa;
pub mod smp;
pub mod types;
pub mod vendor;

use core::fmt;

pub use attr::{
    rate_gbps, Attribute, LinkSpeed, LinkWidth, NodeDescription, NodeInfo, NodeType, PhysPortState,
    PortCounters, PortInfo, PortState,
};
pub use header::{
    is_rmpp_class, is_vendor_class, qp_for_class, InvalidField, Mad, MadHeader, Method, MgmtClass,
    Status, BASE_VERSION, HEADER_LEN, MAD_SIZE,
};
pub use names::{attribute_str, class_str, common_mad_status_str, method_str, sa_mad_status_str};
pub use smp::{DrPath, Smp, SMP_DATA_LEN};

pub use attr::{
    ClassPortInfo, GuidInfo, LinearForwardingTable, MulticastForwardingTable, Notice, PKeyTable,
    SlToVlTable, SmInfo, SmState, SwitchInfo, TrapNumber, VlArbTable,
};
pub use attr::{PortCountersExt, PortDataSl, PortSamplesControl};
pub use attr::{
    PortFlowCtlCounters, PortOpRcvCounters, PortRcvErrorDetails, PortSamplesResult, PortVlOpData,
    PortVlOpPackets, PortVlXmitFlowCtlUpdateErrors, PortVlXmitWaitCounters, PortXmitDiscardDetails,
};
pub use rmpp::{Rmpp, RmppHeader, RmppStatus, RmppType};
pub use sa::{SaHeader, SaMad, SaRecord, SaStatus};
pub use smp::DrAction;
pub use types::{Gid, Mtu, Rate, Selector};
pub use vendor::{VendorHeader, VendorMad};

/// Why a buffer or a piece of text could not be turned into a MAD structure.
///
/// Small and `Copy` on purpose: tools print the reason, the C layer maps it
/// to an errno, and nothing allocates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Error {
    /// The buffer is shorter than the structure needs.
    Truncated {
        /// Bytes the structure needs.
        needed: usize,
        /// Bytes the buffer has.
        got: usize,
    },
    /// The MAD base version is not 1 (the only InfiniBand base version).
    BadBaseVersion(u8),
    /// A directed-route SMP header carries a hop count above
    /// [`DrPath::MAX_HOPS`].
    BadHopCount(u8),
    /// Directed-route path text is malformed (not a comma-separated list of
    /// decimal numbers); `offset` is the byte offset of the offending element
    /// or character.
    DrPathSyntax {
        /// Byte offset into the text.
        offset: usize,
    },
    /// A port number in directed-route path text is above 255; `offset` is
    /// the byte offset of that element.
    DrPortOutOfRange {
        /// Byte offset into the text.
        offset: usize,
    },
    /// A directed-route path has more than [`DrPath::MAX_HOPS`] hops.
    DrPathTooLong {
        /// Number of hops that was asked for.
        hops: usize,
    },
    /// Directed-route path text does not start with `0` (the local port).
    DrPathNotLocal,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Error::Truncated { needed, got } => {
                write!(f, "buffer truncated: need {needed} bytes, got {got}")
            }
            Error::BadBaseVersion(v) => write!(f, "bad MAD base version {v} (expected 1)"),
            Error::BadHopCount(n) => write!(
                f,
                "bad directed-route hop count {n} (at most {})",
                DrPath::MAX_HOPS
            ),
            Error::DrPathSyntax { offset } => write!(
                f,
                "invalid directed-route path at byte {offset}: expected comma-separated port numbers"
            ),
            Error::DrPortOutOfRange { offset } => write!(
                f,
                "invalid directed-route path at byte {offset}: port number above 255"
            ),
            Error::DrPathTooLong { hops } => write!(
                f,
                "directed-route path has {hops} hops (at most {})",
                DrPath::MAX_HOPS
            ),
            Error::DrPathNotLocal => {
                f.write_str("directed-route path must start with 0 (the local port)")
            }
        }
    }
}

impl std::error::Error for Error {}

/// `Result` with this crate's [`Error`].
pub type Result<T> = core::result::Result<T, Error>;

/// Byte-range and big-endian helpers shared by the views and reprs.
pub(crate) mod bytes {
    use crate::{Error, Result};

    /// A field's byte range within its structure.
    pub(crate) type Field = core::ops::Range<usize>;
    /// The rest of a structure from a byte offset on.
    pub(crate) type Rest = core::ops::RangeFrom<usize>;

    /// `Ok(())` if `buf` holds at least `needed` bytes, else
    /// [`Error::Truncated`]: the `check_len` of every view.
    pub(crate) fn check_len(buf: &[u8], needed: usize) -> Result<()> {
        if buf.len() < needed {
            Err(Error::Truncated {
                needed,
                got: buf.len(),
            })
        } else {
            Ok(())
        }
    }

    /// The first `N` bytes of `buf` as an array, or [`Error::Truncated`].
    pub(crate) fn array<const N: usize>(buf: &[u8]) -> Result<&[u8; N]> {
        buf.get(..N)
            .and_then(|s| <&[u8; N]>::try_from(s).ok())
            .ok_or(Error::Truncated {
                needed: N,
                got: buf.len(),
            })
    }

    /// The first `N` bytes of `buf` as a mutable array.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than `N` bytes (the documented `emit` contract).
    pub(crate) fn array_mut<const N: usize>(buf: &mut [u8]) -> &mut [u8; N] {
        let got = buf.len();
        match buf
            .get_mut(..N)
            .and_then(|s| <&mut [u8; N]>::try_from(s).ok())
        {
            Some(a) => a,
            None => panic!("emit: buffer too short: need {N} bytes, got {got}"),
        }
    }

    /// Reads a big-endian `u16` from a 2-byte slice.
    pub(crate) fn get_u16(s: &[u8]) -> u16 {
        let mut a = [0u8; 2];
        a.copy_from_slice(s);
        u16::from_be_bytes(a)
    }

    /// Reads a big-endian 24-bit value from a 3-byte slice.
    pub(crate) fn get_u24(s: &[u8]) -> u32 {
        let mut a = [0u8; 4];
        a[1..].copy_from_slice(s);
        u32::from_be_bytes(a)
    }

    /// Reads a big-endian `u32` from a 4-byte slice.
    pub(crate) fn get_u32(s: &[u8]) -> u32 {
        let mut a = [0u8; 4];
        a.copy_from_slice(s);
        u32::from_be_bytes(a)
    }

    /// Reads a big-endian `u64` from an 8-byte slice.
    pub(crate) fn get_u64(s: &[u8]) -> u64 {
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        u64::from_be_bytes(a)
    }

    /// Writes a big-endian `u16` into a 2-byte slice.
    pub(crate) fn set_u16(s: &mut [u8], v: u16) {
        s.copy_from_slice(&v.to_be_bytes());
    }

    /// Writes the low 24 bits of `v`, big-endian, into a 3-byte slice.
    pub(crate) fn set_u24(s: &mut [u8], v: u32) {
        let b = v.to_be_bytes();
        s.copy_from_slice(&b[1..]);
    }

    /// Writes a big-endian `u32` into a 4-byte slice.
    pub(crate) fn set_u32(s: &mut [u8], v: u32) {
        s.copy_from_slice(&v.to_be_bytes());
    }

    /// Writes a big-endian `u64` into an 8-byte slice.
    pub(crate) fn set_u64(s: &mut [u8], v: u64) {
        s.copy_from_slice(&v.to_be_bytes());
    }

    /// Reads `N` consecutive big-endian values of `size_of::<T>()` bytes
    /// each (a table of P_Keys, GUIDs, counters, …) from the start of `s`
    /// with `get` (one of the `get_*` above).
    ///
    /// # Panics
    ///
    /// If `s` is shorter than `N` values (callers pass a field of an array
    /// they already checked).
    pub(crate) fn get_array<T: Copy + Default, const N: usize>(
        s: &[u8],
        get: fn(&[u8]) -> T,
    ) -> [T; N] {
        let size = core::mem::size_of::<T>();
        assert!(s.len() >= N * size, "get_array: field too short");
        let mut out = [T::default(); N];
        for (v, chunk) in out.iter_mut().zip(s.chunks_exact(size)) {
            *v = get(chunk);
        }
        out
    }

    /// Writes `values` big-endian, `size_of::<T>()` bytes each, from the
    /// start of `s` with `set` (one of the `set_*` above); the inverse of
    /// [`get_array`].
    ///
    /// # Panics
    ///
    /// If `s` is shorter than `values`.
    pub(crate) fn set_array<T: Copy>(s: &mut [u8], values: &[T], set: fn(&mut [u8], T)) {
        let size = core::mem::size_of::<T>();
        assert!(
            s.len() >= core::mem::size_of_val(values),
            "set_array: field too short"
        );
        for (v, chunk) in values.iter().zip(s.chunks_exact_mut(size)) {
            set(chunk, *v);
        }
    }

    /// Extracts `width` bits whose least significant bit is bit `shift` of
    /// `byte` (bit 7 is the most significant bit on the wire).
    pub(crate) const fn bits(byte: u8, shift: u32, width: u32) -> u8 {
        (byte >> shift) & mask(width)
    }

    /// A mask of the low `width` bits (`width` ≤ 8).
    pub(crate) const fn mask(width: u32) -> u8 {
        if width >= 8 {
            0xff
        } else {
            (1u8 << width) - 1
        }
    }

    /// Places the low `width` bits of `value` at bit `shift`.
    pub(crate) const fn place(value: u8, shift: u32, width: u32) -> u8 {
        (value & mask(width)) << shift
    }
}

#[cfg(test)]
pub(crate) mod test_util;

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn error_display() {
        assert_eq!(
            Error::Truncated { needed: 24, got: 3 }.to_string(),
            "buffer truncated: need 24 bytes, got 3"
        );
        assert_eq!(
            Error::BadBaseVersion(2).to_string(),
            "bad MAD base version 2 (expected 1)"
        );
        let e: Box<dyn std::error::Error> = Box::new(Error::DrPathNotLocal);
        assert!(e.to_string().contains("local port"));
    }

    #[test]
    fn bytes_helpers() {
        assert_eq!(
            bytes::array::<4>(&[1, 2, 3]),
            Err(Error::Truncated { needed: 4, got: 3 })
        );
        assert_eq!(bytes::array::<2>(&[1, 2, 3]), Ok(&[1, 2]));
        assert_eq!(bytes::get_u24(&[0x12, 0x34, 0x56]), 0x12_3456);
        let mut b = [0u8; 3];
        bytes::set_u24(&mut b, 0xff12_3456);
        assert_eq!(b, [0x12, 0x34, 0x56]);
        assert_eq!(bytes::bits(0b1010_0110, 5, 3), 0b101);
        assert_eq!(bytes::place(0xff, 5, 3), 0b1110_0000);
    }

    #[test]
    fn check_len_and_arrays() {
        assert_eq!(bytes::check_len(&[0; 3], 3), Ok(()));
        assert_eq!(
            bytes::check_len(&[0; 3], 4),
            Err(Error::Truncated { needed: 4, got: 3 })
        );
        let raw = [0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0xee];
        assert_eq!(
            bytes::get_array::<u16, 4>(&raw, bytes::get_u16),
            [0x0102, 0x0304, 0x0506, 0x0708]
        );
        assert_eq!(
            bytes::get_array::<u32, 2>(&raw, bytes::get_u32),
            [0x0102_0304, 0x0506_0708]
        );
        assert_eq!(
            bytes::get_array::<u64, 1>(&raw, bytes::get_u64),
            [0x0102_0304_0506_0708]
        );
        let mut out = [0xa5u8; 9];
        bytes::set_array(
            &mut out,
            &[0x0102u16, 0x0304, 0x0506, 0x0708],
            bytes::set_u16,
        );
        assert_eq!(out[..8], raw[..8]);
        assert_eq!(out[8], 0xa5, "set_array writes only its values");
    }

    #[test]
    #[should_panic(expected = "get_array: field too short")]
    fn get_array_panics_on_short_field() {
        let _ = bytes::get_array::<u16, 4>(&[0; 7], bytes::get_u16);
    }

    #[test]
    #[should_panic(expected = "need 4 bytes, got 2")]
    fn array_mut_panics_on_short_buffer() {
        let mut b = [0u8; 2];
        let _ = bytes::array_mut::<4>(&mut b);
    }
}
