//! The RMPP header (IBA Vol 1, 13.6): 12 bytes at MAD offset 24 in
//! classes that use the reliable multi-packet protocol (SA, device
//! management, device administration, BIS, vendor range 2).
//!
//! ```text
//!  byte 24        25          26                         27
//!      +-------------+-----------+---------------------------+-------------+
//!   24 | RMPPVersion | RMPPType  | RRespTime(7:3) Flags(2:0) | RMPPStatus  |
//!   28 |   Data1: SegmentNumber (DATA, ACK)                                |
//!   32 |   Data2: PayloadLength (DATA) / NewWindowLast (ACK)               |
//!   36 | class header / data ...                                           |
//! ```
//!
//! [`Rmpp`] is the in-place view over a whole MAD buffer, [`RmppHeader`]
//! the parsed 12 bytes. Offsets match libibmad's `fields.c`
//! (`IB_SA_RMPP_*_F`) and rdma-core's `struct umad_rmpp_hdr`. See the crate
//! docs for the panic rules.

use core::fmt;
use core::ops::RangeInclusive;

use crate::bytes::{self, bits, place};
use crate::header::Mad;
use crate::Result;

pub use crate::header::is_rmpp_class;

mod field {
    use crate::bytes::{Field, Rest};

    pub(super) const VERSION: usize = 24;
    pub(super) const TYPE: usize = 25;
    /// RRespTime(7:3), RMPPFlags(2:0).
    pub(super) const RESP_TIME_FLAGS: usize = 26;
    pub(super) const STATUS: usize = 27;
    pub(super) const DATA1: Field = 28..32;
    pub(super) const DATA2: Field = 32..36;
    pub(super) const DATA: Rest = 36..;
}

/// Byte offset of the RMPP header within the MAD.
pub const RMPP_HEADER_OFFSET: usize = field::VERSION;

/// Length of the RMPP header in bytes.
pub const RMPP_HEADER_LEN: usize = field::DATA2.end - field::VERSION;

/// Byte offset of the data (class header, then payload) after the RMPP
/// header.
pub const RMPP_DATA_OFFSET: usize = field::DATA2.end;

/// Data bytes per RMPP segment (256 − 36 = 220).
pub const RMPP_SEGMENT_DATA_LEN: usize = crate::header::MAD_SIZE - RMPP_DATA_OFFSET;

/// The only RMPP version.
pub const RMPP_VERSION: u8 = 1;

/// Where the data of an RMPP segment starts for `class`: the class header repeated in every
/// segment (the kernel's `ib_get_mad_data_offset`). SA: 56 (MAD, RMPP and SA headers);
/// device management, device administration and BIS: 64; vendor range 2: 40 (with the
/// OUI); any other class: 24. Each segment carries `256 - data_offset(class)` data bytes.
pub fn data_offset(class: u8) -> usize {
    match class {
        0x03 => crate::sa::SA_DATA_OFFSET,
        0x06 | 0x10 | 0x12 => 64,
        c if crate::header::is_vendor_range2(c) => crate::vendor::VENDOR_DATA_OFFSET,
        _ => crate::header::HEADER_LEN,
    }
}

/// Management classes whose MADs carry an RMPP header, besides the second
/// vendor range ([`RMPP_VENDOR_CLASSES`]): SA (0x03), device management
/// (0x06), device administration (0x10) and BIS (0x12). The list
/// [`is_rmpp_class`] checks.
pub const RMPP_CLASSES: [u8; 4] = [0x03, 0x06, 0x10, 0x12];

/// The vendor classes with an RMPP header (and OUI): 0x30–0x4f.
pub const RMPP_VENDOR_CLASSES: RangeInclusive<u8> = crate::header::VENDOR_RANGE2;

enum_with_unknown! {
    /// RMPPType: what an RMPP packet is. 0 (`Unknown(0)`) when RMPP is not
    /// active.
    pub enum RmppType(u8) {
        /// A data segment.
        Data = 1,
        /// Acknowledges segments and opens the window.
        Ack = 2,
        /// The receiver stops the transfer.
        Stop = 3,
        /// Either side aborts the transfer.
        Abort = 4,
    }
}

impl Default for RmppType {
    /// `Unknown(0)`: RMPP not active.
    fn default() -> Self {
        RmppType::Unknown(0)
    }
}

impl fmt::Display for RmppType {
    /// `DATA`, `ACK`, `STOP`, `ABORT`, or `?(n)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RmppType::Data => f.write_str("DATA"),
            RmppType::Ack => f.write_str("ACK"),
            RmppType::Stop => f.write_str("STOP"),
            RmppType::Abort => f.write_str("ABORT"),
            RmppType::Unknown(n) => write!(f, "?({n})"),
        }
    }
}

enum_with_unknown! {
    /// RMPPStatus: why a transfer was stopped or aborted (codes 118–127
    /// are ABORT reasons).
    #[derive(Default)]
    pub enum RmppStatus(u8) {
        /// Normal: no error.
        #[default]
        Normal = 0,
        /// STOP: the receiver ran out of resources.
        ResourcesExhausted = 1,
        /// ABORT: the total transfer time was too long.
        TotalTimeTooLong = 118,
        /// ABORT: PayloadLength inconsistent with the Last flag.
        InconsistentLastAndPayloadLength = 119,
        /// ABORT: SegmentNumber inconsistent with the First flag.
        InconsistentFirstAndSegmentNumber = 120,
        /// ABORT: bad RMPPType.
        BadRmppType = 121,
        /// ABORT: NewWindowLast below the segments already acknowledged.
        NewWindowLastTooSmall = 122,
        /// ABORT: SegmentNumber beyond NewWindowLast.
        SegmentNumberTooBig = 123,
        /// ABORT: illegal RMPPStatus.
        IllegalStatus = 124,
        /// ABORT: unsupported RMPPVersion.
        UnsupportedVersion = 125,
        /// ABORT: too many retries.
        TooManyRetries = 126,
        /// ABORT: unspecified error.
        Unspecified = 127,
    }
}

impl RmppStatus {
    /// The ABORT status codes (118–127).
    pub const ABORT_RANGE: RangeInclusive<u8> = 118..=127;

    /// Whether this is one of the ABORT codes (118–127).
    pub fn is_abort(self) -> bool {
        Self::ABORT_RANGE.contains(&u8::from(self))
    }
}

impl fmt::Display for RmppStatus {
    /// The IBA name of the code (`Normal`, `Resources Exhausted`, `Total
    /// Time Too Long`, …); codes without a name as `Class Specific (n)`
    /// (128–191), `Vendor Specific (n)` (192–255) or `Reserved (n)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            RmppStatus::Normal => "Normal",
            RmppStatus::ResourcesExhausted => "Resources Exhausted",
            RmppStatus::TotalTimeTooLong => "Total Time Too Long",
            RmppStatus::InconsistentLastAndPayloadLength => "Inconsistent Last and PayloadLength",
            RmppStatus::InconsistentFirstAndSegmentNumber => {
                "Inconsistent First and Segment Number"
            }
            RmppStatus::BadRmppType => "Bad RMPPType",
            RmppStatus::NewWindowLastTooSmall => "NewWindowLast Too Small",
            RmppStatus::SegmentNumberTooBig => "SegmentNumber Too Big",
            RmppStatus::IllegalStatus => "Illegal Status",
            RmppStatus::UnsupportedVersion => "Unsupported Version",
            RmppStatus::TooManyRetries => "Too Many Retries",
            RmppStatus::Unspecified => "Unspecified",
            RmppStatus::Unknown(n @ 128..=191) => return write!(f, "Class Specific ({n})"),
            RmppStatus::Unknown(n @ 192..=255) => return write!(f, "Vendor Specific ({n})"),
            RmppStatus::Unknown(n) => return write!(f, "Reserved ({n})"),
        };
        f.write_str(s)
    }
}

/// The 3-bit RMPPFlags field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct RmppFlags(pub u8);

impl RmppFlags {
    /// No flag: RMPP not active (a single-packet MAD of an RMPP class).
    pub const NONE: RmppFlags = RmppFlags(0);
    /// Bit 0: the RMPP header is valid (RMPP active).
    pub const ACTIVE: u8 = 0x1;
    /// Bit 1: first segment of a transfer.
    pub const FIRST: u8 = 0x2;
    /// Bit 2: last segment of a transfer.
    pub const LAST: u8 = 0x4;

    /// Whether the Active flag is set.
    pub fn is_active(self) -> bool {
        self.0 & Self::ACTIVE != 0
    }

    /// Whether the First flag is set.
    pub fn is_first(self) -> bool {
        self.0 & Self::FIRST != 0
    }

    /// Whether the Last flag is set.
    pub fn is_last(self) -> bool {
        self.0 & Self::LAST != 0
    }

    /// These flags with `flag` set or cleared.
    pub fn with(self, flag: u8, on: bool) -> RmppFlags {
        if on {
            RmppFlags(self.0 | flag)
        } else {
            RmppFlags(self.0 & !flag)
        }
    }
}

impl From<u8> for RmppFlags {
    fn from(v: u8) -> Self {
        RmppFlags(v)
    }
}

impl From<RmppFlags> for u8 {
    fn from(f: RmppFlags) -> Self {
        f.0
    }
}

/// A view of a buffer holding a MAD with an RMPP header, from the common
/// header on.
///
/// The buffer may be longer than [`crate::MAD_SIZE`] (a reassembled
/// transfer); [`Rmpp::check_len`] only requires the 36 bytes up to the end
/// of the RMPP header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rmpp<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Rmpp<T> {
    /// Wraps a buffer without checking its length.
    pub const fn new_unchecked(buffer: T) -> Rmpp<T> {
        Rmpp { buffer }
    }

    /// Wraps a buffer and checks that it holds the common and RMPP headers.
    pub fn new_checked(buffer: T) -> Result<Rmpp<T>> {
        let rmpp = Self::new_unchecked(buffer);
        rmpp.check_len()?;
        Ok(rmpp)
    }

    /// Checks that the buffer holds at least [`RMPP_DATA_OFFSET`] bytes.
    /// After `Ok(())` no accessor or setter panics.
    pub fn check_len(&self) -> Result<()> {
        bytes::check_len(self.buffer.as_ref(), RMPP_DATA_OFFSET)
    }

    /// Returns the wrapped buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The common MAD header as a view.
    pub fn header(&self) -> Mad<&[u8]> {
        Mad::new_unchecked(self.buffer.as_ref())
    }

    /// RMPPVersion (byte 24); 1, or 0 in MADs that do not use RMPP.
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VERSION]
    }

    /// RMPPType (byte 25).
    pub fn rmpp_type(&self) -> RmppType {
        RmppType::from(self.buffer.as_ref()[field::TYPE])
    }

    /// RRespTime (byte 26, bits 7:3): the sender's response time value.
    pub fn resp_time(&self) -> u8 {
        bits(self.buffer.as_ref()[field::RESP_TIME_FLAGS], 3, 5)
    }

    /// RMPPFlags (byte 26, bits 2:0).
    pub fn flags(&self) -> RmppFlags {
        RmppFlags(bits(self.buffer.as_ref()[field::RESP_TIME_FLAGS], 0, 3))
    }

    /// Whether the Active flag is set: the RMPP fields are meaningful.
    pub fn is_active(&self) -> bool {
        self.flags().is_active()
    }

    /// RMPPStatus (byte 27).
    pub fn status(&self) -> RmppStatus {
        RmppStatus::from(self.buffer.as_ref()[field::STATUS])
    }

    /// Data1 (bytes 28–31), raw.
    pub fn data1(&self) -> u32 {
        bytes::get_u32(&self.buffer.as_ref()[field::DATA1])
    }

    /// Data2 (bytes 32–35), raw.
    pub fn data2(&self) -> u32 {
        bytes::get_u32(&self.buffer.as_ref()[field::DATA2])
    }

    /// SegmentNumber of a DATA or ACK packet (Data1).
    pub fn segment_number(&self) -> u32 {
        self.data1()
    }

    /// PayloadLength of a DATA packet (Data2): total payload bytes in the
    /// first segment, remaining bytes in the last, 0 otherwise.
    pub fn payload_length(&self) -> u32 {
        self.data2()
    }

    /// NewWindowLast of an ACK packet (Data2): the last segment the sender
    /// may send.
    pub fn new_window_last(&self) -> u32 {
        self.data2()
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Rmpp<&'a T> {
    /// Everything after the RMPP header (byte 36 on: the class header, if
    /// any, then the payload), borrowed from the buffer.
    pub fn data(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::DATA]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Rmpp<T> {
    /// The common MAD header as a mutable view.
    pub fn header_mut(&mut self) -> Mad<&mut [u8]> {
        Mad::new_unchecked(self.buffer.as_mut())
    }

    /// Sets RMPPVersion.
    pub fn set_version(&mut self, value: u8) {
        self.buffer.as_mut()[field::VERSION] = value;
    }

    /// Sets RMPPType.
    pub fn set_rmpp_type(&mut self, value: RmppType) {
        self.buffer.as_mut()[field::TYPE] = value.into();
    }

    /// Sets RRespTime (masked to 5 bits), keeping the flags.
    pub fn set_resp_time(&mut self, value: u8) {
        let b = &mut self.buffer.as_mut()[field::RESP_TIME_FLAGS];
        *b = place(value, 3, 5) | (*b & 0x07);
    }

    /// Sets RMPPFlags (masked to 3 bits), keeping RRespTime.
    pub fn set_flags(&mut self, value: RmppFlags) {
        let b = &mut self.buffer.as_mut()[field::RESP_TIME_FLAGS];
        *b = (*b & 0xf8) | place(value.0, 0, 3);
    }

    /// Sets RMPPStatus.
    pub fn set_status(&mut self, value: RmppStatus) {
        self.buffer.as_mut()[field::STATUS] = value.into();
    }

    /// Sets Data1.
    pub fn set_data1(&mut self, value: u32) {
        bytes::set_u32(&mut self.buffer.as_mut()[field::DATA1], value);
    }

    /// Sets Data2.
    pub fn set_data2(&mut self, value: u32) {
        bytes::set_u32(&mut self.buffer.as_mut()[field::DATA2], value);
    }

    /// Sets SegmentNumber (Data1).
    pub fn set_segment_number(&mut self, value: u32) {
        self.set_data1(value);
    }

    /// Sets PayloadLength (Data2).
    pub fn set_payload_length(&mut self, value: u32) {
        self.set_data2(value);
    }

    /// Sets NewWindowLast (Data2).
    pub fn set_new_window_last(&mut self, value: u32) {
        self.set_data2(value);
    }

    /// Everything after the RMPP header, mutably.
    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::DATA]
    }
}

/// The RMPP header, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct RmppHeader {
    /// RMPPVersion.
    pub version: u8,
    /// RMPPType.
    pub rmpp_type: RmppType,
    /// RRespTime (5 bits).
    pub resp_time: u8,
    /// RMPPFlags (3 bits).
    pub flags: RmppFlags,
    /// RMPPStatus.
    pub status: RmppStatus,
    /// Data1: SegmentNumber for DATA and ACK, reserved otherwise.
    pub data1: u32,
    /// Data2: PayloadLength for DATA, NewWindowLast for ACK, reserved
    /// otherwise.
    pub data2: u32,
}

impl RmppHeader {
    /// An RMPP header with RMPP inactive (all zero): what a single-packet
    /// request of an RMPP class carries.
    pub const INACTIVE: RmppHeader = RmppHeader {
        version: 0,
        rmpp_type: RmppType::Unknown(0),
        resp_time: 0,
        flags: RmppFlags::NONE,
        status: RmppStatus::Normal,
        data1: 0,
        data2: 0,
    };

    /// A DATA segment header: version 1, Active, First/Last as given,
    /// `segment` (1-based) and `payload_length`.
    pub fn data(segment: u32, first: bool, last: bool, payload_length: u32) -> RmppHeader {
        RmppHeader {
            version: RMPP_VERSION,
            rmpp_type: RmppType::Data,
            flags: RmppFlags(RmppFlags::ACTIVE)
                .with(RmppFlags::FIRST, first)
                .with(RmppFlags::LAST, last),
            data1: segment,
            data2: payload_length,
            ..RmppHeader::INACTIVE
        }
    }

    /// An ACK header: version 1, Active, acknowledging `segment` and
    /// opening the window to `new_window_last`.
    pub fn ack(segment: u32, new_window_last: u32) -> RmppHeader {
        RmppHeader {
            version: RMPP_VERSION,
            rmpp_type: RmppType::Ack,
            flags: RmppFlags(RmppFlags::ACTIVE),
            data1: segment,
            data2: new_window_last,
            ..RmppHeader::INACTIVE
        }
    }

    /// A STOP (`abort == false`) or ABORT header with `status`.
    pub fn stop_or_abort(abort: bool, status: RmppStatus) -> RmppHeader {
        RmppHeader {
            version: RMPP_VERSION,
            rmpp_type: if abort {
                RmppType::Abort
            } else {
                RmppType::Stop
            },
            flags: RmppFlags(RmppFlags::ACTIVE),
            status,
            ..RmppHeader::INACTIVE
        }
    }

    /// Parses the RMPP header of `rmpp` (the buffer must hold
    /// [`RMPP_DATA_OFFSET`] bytes). No field is validated: RMPP errors are
    /// for the protocol engine to answer with an ABORT.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(rmpp: &Rmpp<&T>) -> Result<RmppHeader> {
        rmpp.check_len()?;
        Ok(RmppHeader {
            version: rmpp.version(),
            rmpp_type: rmpp.rmpp_type(),
            resp_time: rmpp.resp_time(),
            flags: rmpp.flags(),
            status: rmpp.status(),
            data1: rmpp.data1(),
            data2: rmpp.data2(),
        })
    }

    /// Bytes of the RMPP header: [`RMPP_HEADER_LEN`] (written at MAD offset
    /// 24 by [`RmppHeader::emit`]).
    pub const fn buffer_len(&self) -> usize {
        RMPP_HEADER_LEN
    }

    /// Writes every RMPP field into `rmpp` (bytes 24–35); `resp_time` is
    /// masked to 5 bits, `flags` to 3.
    ///
    /// # Panics
    ///
    /// If the buffer is shorter than [`RMPP_DATA_OFFSET`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, rmpp: &mut Rmpp<&mut T>) {
        rmpp.set_version(self.version);
        rmpp.set_rmpp_type(self.rmpp_type);
        rmpp.set_resp_time(self.resp_time);
        rmpp.set_flags(self.flags);
        rmpp.set_status(self.status);
        rmpp.set_data1(self.data1);
        rmpp.set_data2(self.data2);
    }
}

impl fmt::Display for RmppHeader {
    /// One line: `RMPP v1 DATA flags 0x3 (Active,First) status Normal seg 1
    /// data2 260 resp 0`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "RMPP v{} {} flags 0x{:x} (",
            self.version, self.rmpp_type, self.flags.0
        )?;
        let mut sep = "";
        for (set, name) in [
            (self.flags.is_active(), "Active"),
            (self.flags.is_first(), "First"),
            (self.flags.is_last(), "Last"),
        ] {
            if set {
                write!(f, "{sep}{name}")?;
                sep = ",";
            }
        }
        write!(
            f,
            ") status {} seg {} data2 {} resp {}",
            self.status, self.data1, self.data2, self.resp_time
        )
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::{check_offsets, check_round_trip, Case, XorShift};
    use crate::Error;

    #[test]
    fn data_offset_is_the_class_header_the_kernel_repeats() {
        assert_eq!(data_offset(0x03), 56);
        assert_eq!(data_offset(0x06), 64);
        assert_eq!(data_offset(0x12), 64);
        assert_eq!(data_offset(0x4f), 40);
        assert_eq!(data_offset(0x04), 24);
    }

    /// First of three segments of an SA GetTableResp (first 40 bytes):
    /// RMPP v1 DATA, RRespTime 18, Active|First, segment 1, payload 500.
    static SEGMENT_BYTES: [u8; 40] = [
        0x01,
        0x03,
        0x02,
        0x92, // base 1, class SA, version 2, GetTableResp
        0x00,
        0x00,
        0x00,
        0x00, // status, class specific
        0,
        0,
        0,
        0,
        0,
        0,
        0x12,
        0x34, // tid
        0x00,
        0x11,
        0x00,
        0x00, // attr NodeRecord, reserved
        0x00,
        0x00,
        0x00,
        0x00, // attr mod
        0x01,
        0x01,
        (18 << 3) | 0x03,
        0x00, // RMPP v1, DATA, resp 18 + A|F, status
        0x00,
        0x00,
        0x00,
        0x01, // segment 1
        0x00,
        0x00,
        0x01,
        0xf4, // payload length 500
        0xaa,
        0xbb,
        0xcc,
        0xdd, // SA header starts
    ];

    #[test]
    fn test_deconstruct() {
        let r = Rmpp::new_checked(&SEGMENT_BYTES[..]).unwrap();
        assert_eq!(r.header().attr_id(), 0x11);
        assert_eq!(r.version(), 1);
        assert_eq!(r.rmpp_type(), RmppType::Data);
        assert_eq!(r.resp_time(), 18);
        assert_eq!(r.flags(), RmppFlags(3));
        assert!(r.is_active());
        assert!(r.flags().is_first());
        assert!(!r.flags().is_last());
        assert_eq!(r.status(), RmppStatus::Normal);
        assert_eq!(r.data1(), 1);
        assert_eq!(r.segment_number(), 1);
        assert_eq!(r.data2(), 500);
        assert_eq!(r.payload_length(), 500);
        assert_eq!(r.new_window_last(), 500);
        assert_eq!(r.data(), &[0xaa, 0xbb, 0xcc, 0xdd]);
        let h = RmppHeader::parse(&r).unwrap();
        assert_eq!(
            h,
            RmppHeader {
                resp_time: 18,
                ..RmppHeader::data(1, true, false, 500)
            }
        );
        assert_eq!(
            h.to_string(),
            "RMPP v1 DATA flags 0x3 (Active,First) status Normal seg 1 data2 500 resp 18"
        );
    }

    #[test]
    fn test_construct() {
        let mut bytes = SEGMENT_BYTES;
        bytes[24..36].fill(0xa5);
        let mut r = Rmpp::new_unchecked(&mut bytes[..]);
        r.set_version(1);
        r.set_rmpp_type(RmppType::Data);
        r.set_flags(RmppFlags(RmppFlags::ACTIVE | RmppFlags::FIRST));
        r.set_resp_time(18);
        r.set_status(RmppStatus::Normal);
        r.set_segment_number(1);
        r.set_payload_length(500);
        assert_eq!(bytes, SEGMENT_BYTES);

        let mut bytes = SEGMENT_BYTES;
        bytes[24..36].fill(0xa5);
        let h = RmppHeader {
            resp_time: 18,
            ..RmppHeader::data(1, true, false, 500)
        };
        assert_eq!(h.buffer_len(), 12);
        h.emit(&mut Rmpp::new_unchecked(&mut bytes[..]));
        assert_eq!(bytes, SEGMENT_BYTES);

        let mut r = Rmpp::new_unchecked(&mut bytes[..]);
        r.set_new_window_last(7);
        r.data_mut()[0] = 0x11;
        r.header_mut().set_tid(9);
        assert_eq!(r.data2(), 7);
        assert_eq!(bytes[36], 0x11);
        assert_eq!(bytes[15], 9);
    }

    #[test]
    fn test_impossible_len() {
        for len in 0..RMPP_DATA_OFFSET {
            let buf = vec![0u8; len];
            assert_eq!(
                Rmpp::new_checked(&buf[..]).err(),
                Some(Error::Truncated {
                    needed: 36,
                    got: len
                })
            );
            assert!(RmppHeader::parse(&Rmpp::new_unchecked(&buf[..])).is_err());
        }
        let exact = [0u8; 36];
        assert!(Rmpp::new_checked(&exact[..]).unwrap().data().is_empty());
    }

    #[test]
    #[should_panic]
    fn emit_short_buffer_panics() {
        let mut buf = [0u8; 35];
        RmppHeader::INACTIVE.emit(&mut Rmpp::new_unchecked(&mut buf[..]));
    }

    /// [`RmppHeader::parse`] as a parser of the 12 header bytes alone, for
    /// the shared layout checks.
    fn parse_header(b: &[u8]) -> Result<RmppHeader> {
        let mut mad = [0u8; RMPP_DATA_OFFSET];
        mad[RMPP_HEADER_OFFSET..].copy_from_slice(bytes::array::<RMPP_HEADER_LEN>(b)?);
        RmppHeader::parse(&Rmpp::new_unchecked(&mad[..]))
    }

    /// [`RmppHeader::emit`] into the 12 header bytes alone.
    fn emit_header(h: &RmppHeader, b: &mut [u8]) {
        let mut mad = [0u8; RMPP_DATA_OFFSET];
        h.emit(&mut Rmpp::new_unchecked(&mut mad[..]));
        b[..RMPP_HEADER_LEN].copy_from_slice(&mad[RMPP_HEADER_OFFSET..]);
    }

    #[test]
    fn test_round_trip_random() {
        check_round_trip(
            RMPP_HEADER_LEN,
            parse_header,
            emit_header,
            0x4a99_0000_0000_0024,
        );
        // In place, the rest of the MAD is left alone.
        let mut rng = XorShift(0x4a99_0000_0000_0025);
        for _ in 0..1000 {
            let mut input = [0u8; 40];
            rng.fill(&mut input);
            let h = RmppHeader::parse(&Rmpp::new_unchecked(&input[..])).unwrap();
            let mut out = input;
            out[24..36].fill(0);
            h.emit(&mut Rmpp::new_unchecked(&mut out[..]));
            assert_eq!(out, input);
        }
    }

    #[test]
    fn test_field_offsets() {
        // Offsets within the RMPP header (MAD bytes 24..36).
        #[rustfmt::skip]
        let cases: &[Case<'_, RmppHeader>] = &[
            ("RMPPVersion", |h| h.version = 0xff, 0, &[0xff]),
            ("RMPPType", |h| h.rmpp_type = RmppType::Unknown(0xff), 1, &[0xff]),
            ("RRespTime", |h| h.resp_time = 0xff, 2, &[0xf8]),
            ("RMPPFlags", |h| h.flags = RmppFlags(0xff), 2, &[0x07]),
            ("RMPPStatus", |h| h.status = RmppStatus::Unknown(0xff), 3, &[0xff]),
            ("Data1", |h| h.data1 = u32::MAX, 4, &[0xff; 4]),
            ("Data2", |h| h.data2 = u32::MAX, 8, &[0xff; 4]),
        ];
        check_offsets(RMPP_HEADER_LEN, parse_header, emit_header, cases);
    }

    #[test]
    fn builders() {
        let h = RmppHeader::data(3, false, true, 40);
        assert_eq!(h.flags, RmppFlags(0x5));
        assert!(h.flags.is_last() && !h.flags.is_first());
        assert_eq!((h.data1, h.data2), (3, 40));
        let a = RmppHeader::ack(2, 10);
        assert_eq!(a.rmpp_type, RmppType::Ack);
        assert_eq!((a.data1, a.data2), (2, 10));
        let s = RmppHeader::stop_or_abort(false, RmppStatus::ResourcesExhausted);
        assert_eq!(s.rmpp_type, RmppType::Stop);
        let x = RmppHeader::stop_or_abort(true, RmppStatus::TooManyRetries);
        assert_eq!(x.rmpp_type, RmppType::Abort);
        assert!(x.status.is_abort());
        assert!(!RmppStatus::ResourcesExhausted.is_abort());
        assert_eq!(RmppHeader::default(), RmppHeader::INACTIVE);
        assert_eq!(
            RmppHeader::INACTIVE.to_string(),
            "RMPP v0 ?(0) flags 0x0 () status Normal seg 0 data2 0 resp 0"
        );
        assert_eq!(RmppFlags(7).with(RmppFlags::FIRST, false), RmppFlags(5));
        assert_eq!(u8::from(RmppFlags::from(4)), 4);
    }

    #[test]
    fn enums() {
        assert_eq!(RmppType::Data.to_string(), "DATA");
        assert_eq!(RmppType::Ack.to_string(), "ACK");
        assert_eq!(RmppType::Stop.to_string(), "STOP");
        assert_eq!(RmppType::Abort.to_string(), "ABORT");
        assert_eq!(RmppType::from(0).to_string(), "?(0)");
        assert_eq!(RmppStatus::from(118), RmppStatus::TotalTimeTooLong);
        assert_eq!(RmppStatus::from(127), RmppStatus::Unspecified);
        assert_eq!(
            RmppStatus::InconsistentLastAndPayloadLength.to_string(),
            "Inconsistent Last and PayloadLength"
        );
        assert_eq!(
            RmppStatus::UnsupportedVersion.to_string(),
            "Unsupported Version"
        );
        assert_eq!(RmppStatus::from(2).to_string(), "Reserved (2)");
        assert_eq!(RmppStatus::from(130).to_string(), "Class Specific (130)");
        assert_eq!(RmppStatus::from(200).to_string(), "Vendor Specific (200)");
        for v in 0..=u8::MAX {
            assert_eq!(u8::from(RmppType::from(v)), v);
            assert_eq!(u8::from(RmppStatus::from(v)), v);
        }
        for class in RMPP_CLASSES {
            assert!(is_rmpp_class(class));
        }
        for class in RMPP_VENDOR_CLASSES {
            assert!(is_rmpp_class(class));
        }
        assert_eq!(RMPP_SEGMENT_DATA_LEN, 220);
        assert_eq!(RMPP_HEADER_OFFSET, 24);
    }
}
