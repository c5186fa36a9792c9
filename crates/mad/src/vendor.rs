//! Vendor-specific MADs of the second vendor range (classes 0x30–0x4f, IBA
//! Vol 1, chapter 13): the common header, an RMPP header, a reserved byte
//! and the vendor's IEEE OUI, then 216 data bytes.
//!
//! ```text
//!  0..24   common MAD header
//! 24..36   RMPP header (see [`crate::rmpp`])
//! 36       reserved
//! 37..40   OUI (24 bits)
//! 40..256  vendor data
//! ```
//!
//! Layout as rdma-core's `struct umad_vendor_packet` and libibmad's
//! `IB_VEND2_OUI_F`/`IB_VEND2_DATA_F`. The first vendor range (0x09–0x0f)
//! has neither RMPP header nor OUI: its data starts at byte 24 like any
//! other MAD. [`VendorMad`] is the view, [`VendorHeader`] the parsed 40
//! bytes; see the crate docs for the panic rules.

use core::fmt;

use crate::bytes;
use crate::header::{is_vendor_range2, Mad, MadHeader, Method, MgmtClass, MAD_SIZE};
use crate::rmpp::{Rmpp, RmppHeader};
use crate::Result;

mod field {
    use crate::bytes::{Field, Rest};

    pub(super) const RESERVED: usize = 36;
    pub(super) const OUI: Field = 37..40;
    pub(super) const DATA: Rest = 40..;
}

/// Length of the vendor (range 2) header: common + RMPP + reserved + OUI.
pub const VENDOR_HEADER_LEN: usize = field::OUI.end;

/// Byte offset of the vendor data.
pub const VENDOR_DATA_OFFSET: usize = field::OUI.end;

/// Vendor data bytes in one MAD (256 − 40 = 216).
pub const VENDOR_DATA_LEN: usize = MAD_SIZE - VENDOR_DATA_OFFSET;

/// The OpenIB OUI (0x001405), used by OpenSM's and ibsim's vendor classes.
pub const OPENIB_OUI: u32 = 0x00_1405;

/// A view of a buffer holding a vendor range-2 MAD, from the common header
/// on.
///
/// The buffer may be longer than [`MAD_SIZE`] (a reassembled RMPP
/// transfer); [`VendorMad::check_len`] only requires the 40-byte header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VendorMad<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> VendorMad<T> {
    /// Wraps a buffer without checking its length.
    pub const fn new_unchecked(buffer: T) -> VendorMad<T> {
        VendorMad { buffer }
    }

    /// Wraps a buffer and checks that it holds the vendor header.
    pub fn new_checked(buffer: T) -> Result<VendorMad<T>> {
        let mad = Self::new_unchecked(buffer);
        mad.check_len()?;
        Ok(mad)
    }

    /// Checks that the buffer holds at least [`VENDOR_HEADER_LEN`] bytes.
    /// After `Ok(())` no accessor or setter panics.
    pub fn check_len(&self) -> Result<()> {
        bytes::check_len(self.buffer.as_ref(), VENDOR_HEADER_LEN)
    }

    /// Returns the wrapped buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The common MAD header as a view.
    pub fn header(&self) -> Mad<&[u8]> {
        Mad::new_unchecked(self.buffer.as_ref())
    }

    /// The RMPP header as a view.
    pub fn rmpp(&self) -> Rmpp<&[u8]> {
        Rmpp::new_unchecked(self.buffer.as_ref())
    }

    /// The management class byte (0x30–0x4f for a real vendor range-2 MAD).
    pub fn mgmt_class(&self) -> u8 {
        u8::from(self.header().mgmt_class())
    }

    /// Whether the class is in the second vendor range (0x30–0x4f), the
    /// only one with this layout.
    pub fn is_vendor_range2(&self) -> bool {
        is_vendor_range2(self.mgmt_class())
    }

    /// The reserved byte 36.
    pub fn reserved(&self) -> u8 {
        self.buffer.as_ref()[field::RESERVED]
    }

    /// The vendor's IEEE OUI (bytes 37–39, 24 bits).
    pub fn oui(&self) -> u32 {
        bytes::get_u24(&self.buffer.as_ref()[field::OUI])
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> VendorMad<&'a T> {
    /// The vendor data (byte 40 on), borrowed from the buffer.
    pub fn data(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::DATA]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> VendorMad<T> {
    /// The common MAD header as a mutable view.
    pub fn header_mut(&mut self) -> Mad<&mut [u8]> {
        Mad::new_unchecked(self.buffer.as_mut())
    }

    /// The RMPP header as a mutable view.
    pub fn rmpp_mut(&mut self) -> Rmpp<&mut [u8]> {
        Rmpp::new_unchecked(self.buffer.as_mut())
    }

    /// Sets the reserved byte 36 (normally 0).
    pub fn set_reserved(&mut self, value: u8) {
        self.buffer.as_mut()[field::RESERVED] = value;
    }

    /// Sets the OUI (low 24 bits of `value`).
    pub fn set_oui(&mut self, value: u32) {
        bytes::set_u24(&mut self.buffer.as_mut()[field::OUI], value);
    }

    /// The vendor data, mutably.
    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::DATA]
    }
}

impl VendorMad<[u8; MAD_SIZE]> {
    /// Builds a vendor range-2 request: base version 1, class `mgmt_class`,
    /// `class_version`, status 0, RMPP inactive (all zero), reserved byte
    /// 0, `oui` (24 bits), data zero.
    ///
    /// `mgmt_class` is written as given; it should be in 0x30–0x4f (see
    /// [`crate::is_vendor_class`]). Vendor MADs go to QP1.
    pub fn request(
        mgmt_class: u8,
        class_version: u8,
        method: Method,
        attr_id: u16,
        attr_mod: u32,
        tid: u64,
        oui: u32,
    ) -> [u8; MAD_SIZE] {
        let mut buf = [0u8; MAD_SIZE];
        let header = VendorHeader {
            header: MadHeader::request(
                MgmtClass::from(mgmt_class),
                class_version,
                method,
                attr_id,
                attr_mod,
                tid,
            ),
            rmpp: RmppHeader::INACTIVE,
            reserved: 0,
            oui,
        };
        header.emit(&mut VendorMad::new_unchecked(&mut buf[..]));
        buf
    }
}

/// The 40-byte vendor range-2 header, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VendorHeader {
    /// The common MAD header.
    pub header: MadHeader,
    /// The RMPP header.
    pub rmpp: RmppHeader,
    /// The reserved byte 36, kept so `emit` reproduces the input.
    pub reserved: u8,
    /// The vendor's IEEE OUI (24 bits).
    pub oui: u32,
}

impl VendorHeader {
    /// Parses the header: the buffer must hold [`VENDOR_HEADER_LEN`] bytes
    /// and the base version must be 1. The class is not checked (see
    /// [`VendorMad::is_vendor_range2`]).
    pub fn parse<T: AsRef<[u8]> + ?Sized>(mad: &VendorMad<&T>) -> Result<VendorHeader> {
        mad.check_len()?;
        let buf: &[u8] = mad.buffer.as_ref();
        Ok(VendorHeader {
            header: MadHeader::parse(&Mad::new_unchecked(buf))?,
            rmpp: RmppHeader::parse(&Rmpp::new_unchecked(buf))?,
            reserved: mad.reserved(),
            oui: mad.oui(),
        })
    }

    /// Bytes [`VendorHeader::emit`] writes: [`VENDOR_HEADER_LEN`].
    pub const fn buffer_len(&self) -> usize {
        VENDOR_HEADER_LEN
    }

    /// Writes all 40 header bytes into `mad`; `oui` is truncated to 24
    /// bits.
    ///
    /// # Panics
    ///
    /// If the buffer is shorter than [`VENDOR_HEADER_LEN`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, mad: &mut VendorMad<&mut T>) {
        // Check first so a short buffer panics before anything is written.
        let _ = bytes::array_mut::<VENDOR_HEADER_LEN>(mad.buffer.as_mut());
        self.header
            .emit(&mut Mad::new_unchecked(mad.buffer.as_mut()));
        self.rmpp
            .emit(&mut Rmpp::new_unchecked(mad.buffer.as_mut()));
        mad.set_reserved(self.reserved);
        mad.set_oui(self.oui);
    }
}

impl fmt::Display for VendorHeader {
    /// The MAD header line followed by ` oui 0x......`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} oui 0x{:06x}", self.header, self.oui)
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::rmpp::{RmppFlags, RmppStatus, RmppType};
    use crate::test_util::{check_layout, check_round_trip, Case, XorShift};
    use crate::Error;

    /// A vendor class 0x30 Get with the OpenIB OUI, attribute 0x0010,
    /// modifier 1, TID 0x42, first data byte 0x99 (first 44 bytes).
    static VENDOR_BYTES: [u8; 44] = [
        0x01, 0x30, 0x01, 0x01, // base 1, class 0x30, version 1, Get
        0x00, 0x00, 0x00, 0x00, // status, class specific
        0, 0, 0, 0, 0, 0, 0, 0x42, // tid
        0x00, 0x10, 0x00, 0x00, // attr, reserved
        0x00, 0x00, 0x00, 0x01, // attr mod
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,    // RMPP inactive
        0x00, // reserved
        0x00, 0x14, 0x05, // OUI
        0x99, 0, 0, 0, // data
    ];

    #[test]
    fn test_deconstruct() {
        let v = VendorMad::new_checked(&VENDOR_BYTES[..]).unwrap();
        assert_eq!(v.mgmt_class(), 0x30);
        assert!(v.is_vendor_range2());
        assert_eq!(v.header().method(), Method::Get);
        assert_eq!(v.header().tid(), 0x42);
        assert_eq!(v.header().attr_id(), 0x10);
        assert_eq!(v.header().attr_mod(), 1);
        assert!(!v.rmpp().is_active());
        assert_eq!(v.reserved(), 0);
        assert_eq!(v.oui(), OPENIB_OUI);
        assert_eq!(v.data(), &[0x99, 0, 0, 0]);
        let h = VendorHeader::parse(&v).unwrap();
        assert_eq!(h.oui, OPENIB_OUI);
        assert_eq!(h.rmpp, RmppHeader::INACTIVE);
        assert_eq!(h.header.mgmt_class, MgmtClass::Unknown(0x30));
        assert!(h.to_string().ends_with("oui 0x001405"));
    }

    #[test]
    fn test_construct() {
        let req = VendorMad::request(0x30, 1, Method::Get, 0x10, 1, 0x42, OPENIB_OUI);
        assert_eq!(req[..40], VENDOR_BYTES[..40]);
        assert!(req[40..].iter().all(|&b| b == 0));

        let mut bytes = [0xa5u8; 44];
        let mut v = VendorMad::new_unchecked(&mut bytes[..]);
        MadHeader::request(MgmtClass::Unknown(0x30), 1, Method::Get, 0x10, 1, 0x42)
            .emit(&mut v.header_mut());
        RmppHeader::INACTIVE.emit(&mut v.rmpp_mut());
        v.set_reserved(0);
        v.set_oui(0xff00_1405);
        v.data_mut().copy_from_slice(&[0x99, 0, 0, 0]);
        assert_eq!(bytes, VENDOR_BYTES);
    }

    #[test]
    fn test_impossible_len() {
        for len in 0..VENDOR_HEADER_LEN {
            let buf = vec![1u8; len];
            assert_eq!(
                VendorMad::new_checked(&buf[..]).err(),
                Some(Error::Truncated {
                    needed: 40,
                    got: len
                })
            );
            assert!(VendorHeader::parse(&VendorMad::new_unchecked(&buf[..])).is_err());
        }
        let mut bad = VENDOR_BYTES;
        bad[0] = 2;
        assert_eq!(
            VendorHeader::parse(&VendorMad::new_unchecked(&bad[..])),
            Err(Error::BadBaseVersion(2))
        );
    }

    #[test]
    #[should_panic(expected = "need 40 bytes, got 39")]
    fn emit_short_buffer_panics() {
        let h = VendorHeader::parse(&VendorMad::new_unchecked(&VENDOR_BYTES[..])).unwrap();
        let mut buf = [0u8; 39];
        h.emit(&mut VendorMad::new_unchecked(&mut buf[..]));
    }

    #[test]
    fn test_round_trip_random() {
        let mut rng = XorShift(0x0a11_ce00_0000_0030);
        for _ in 0..1000 {
            let mut input = [0u8; VENDOR_HEADER_LEN];
            rng.fill(&mut input);
            input[0] = 1;
            let h = VendorHeader::parse(&VendorMad::new_unchecked(&input[..])).unwrap();
            let mut out = [0u8; VENDOR_HEADER_LEN];
            h.emit(&mut VendorMad::new_unchecked(&mut out[..]));
            assert_eq!(out, input);
        }
    }

    /// [`VendorHeader::parse`] of bytes 24..40 (RMPP header, reserved
    /// byte, OUI) behind a fixed common header, for the shared layout
    /// checks.
    fn parse_tail(b: &[u8]) -> Result<VendorHeader> {
        let mut mad = [0u8; VENDOR_HEADER_LEN];
        mad[0] = crate::BASE_VERSION;
        mad[24..].copy_from_slice(bytes::array::<16>(b)?);
        VendorHeader::parse(&VendorMad::new_unchecked(&mad[..]))
    }

    /// [`VendorHeader::emit`], keeping bytes 24..40.
    fn emit_tail(h: &VendorHeader, b: &mut [u8]) {
        let mut mad = [0u8; VENDOR_HEADER_LEN];
        h.emit(&mut VendorMad::new_unchecked(&mut mad[..]));
        b[..16].copy_from_slice(&mad[24..]);
    }

    #[test]
    fn test_field_offsets() {
        let base = VendorHeader::parse(&VendorMad::new_unchecked(&[0u8; 40][..]));
        // Base version 0 is rejected; start from a zero header with version 1.
        assert_eq!(base, Err(Error::BadBaseVersion(0)));
        let base = parse_tail(&[0u8; 16]).unwrap();
        // Offsets from MAD byte 24 on.
        #[rustfmt::skip]
        let cases: &[Case<'_, VendorHeader>] = &[
            ("RMPPVersion", |h| h.rmpp.version = 0xff, 0, &[0xff]),
            ("RMPPType", |h| h.rmpp.rmpp_type = RmppType::Unknown(0xff), 1, &[0xff]),
            ("RRespTime", |h| h.rmpp.resp_time = 0xff, 2, &[0xf8]),
            ("RMPPFlags", |h| h.rmpp.flags = RmppFlags(0x07), 2, &[0x07]),
            ("RMPPStatus", |h| h.rmpp.status = RmppStatus::Unknown(0xff), 3, &[0xff]),
            ("Data1", |h| h.rmpp.data1 = u32::MAX, 4, &[0xff; 4]),
            ("Data2", |h| h.rmpp.data2 = u32::MAX, 8, &[0xff; 4]),
            ("reserved", |h| h.reserved = 0xff, 12, &[0xff]),
            ("OUI", |h| h.oui = u32::MAX, 13, &[0xff; 3]),
        ];
        check_layout(&base, 16, parse_tail, emit_tail, cases, None);
        check_round_trip(16, parse_tail, emit_tail, 0x0a11_ce00_0000_0031);
        assert_eq!(VENDOR_DATA_LEN, 216);
        assert_eq!(VENDOR_DATA_OFFSET, 40);
    }
}
