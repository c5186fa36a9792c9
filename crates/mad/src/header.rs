//! The 24-byte common MAD header (IBA Vol 1, 13.4.2–13.4.7).
//!
//! ```text
//!  byte 0        1           2              3
//!      +-------------+-----------+--------------+----------------+
//!    0 | BaseVersion | MgmtClass | ClassVersion | R | Method     |
//!    4 |        Status           |        ClassSpecific          |
//!    8 |                 TransactionID (64 bits)                 |
//!   16 |        AttributeID      |        Reserved               |
//!   20 |                 AttributeModifier                       |
//!   24 | Data ...                                                |
//! ```
//!
//! [`Mad`] is the in-place view, [`MadHeader`] the parsed summary. See the
//! crate docs for the panic rules.

use core::fmt;
use core::ops::RangeInclusive;

use crate::bytes;
use crate::{Error, Result};

mod field {
    use crate::bytes::{Field, Rest};

    pub(super) const BASE_VERSION: usize = 0;
    pub(super) const MGMT_CLASS: usize = 1;
    pub(super) const CLASS_VERSION: usize = 2;
    pub(super) const METHOD: usize = 3;
    pub(super) const STATUS: Field = 4..6;
    pub(super) const CLASS_SPECIFIC: Field = 6..8;
    pub(super) const TID: Field = 8..16;
    pub(super) const ATTR_ID: Field = 16..18;
    pub(super) const RESERVED: Field = 18..20;
    pub(super) const ATTR_MOD: Field = 20..24;
    pub(super) const DATA: Rest = 24..;
}

/// Length of the common MAD header in bytes.
pub const HEADER_LEN: usize = field::ATTR_MOD.end;

/// Size of a (non-RMPP) MAD on the wire, in bytes.
pub const MAD_SIZE: usize = 256;

/// The only InfiniBand MAD base version.
pub const BASE_VERSION: u8 = 1;

/// The response bit of the `Method` byte.
pub const METHOD_RESP_BIT: u8 = 0x80;

/// Vendor-specific management classes, first range (no RMPP, no OUI).
pub const VENDOR_RANGE1: RangeInclusive<u8> = 0x09..=0x0f;

/// Vendor-specific management classes, second range (OUI in the header,
/// RMPP capable).
pub const VENDOR_RANGE2: RangeInclusive<u8> = 0x30..=0x4f;

/// Application-specific management classes.
pub const APPLICATION_RANGE: RangeInclusive<u8> = 0x10..=0x2f;

enum_with_unknown! {
    /// Management class (header byte 1).
    ///
    /// Classes in the vendor and application ranges without a name here come
    /// back as `Unknown(_)`; use [`MgmtClass::is_vendor`] and friends for them.
    pub enum MgmtClass(u8) {
        /// Subnet management, LID routed (QP0).
        SubnLid = 0x01,
        /// Subnet management, directed route (QP0).
        SubnDirectedRoute = 0x81,
        /// Subnet administration (SA).
        SubnAdm = 0x03,
        /// Performance management (PMA).
        Perf = 0x04,
        /// Baseboard management.
        Bm = 0x05,
        /// Device management.
        DevMgt = 0x06,
        /// Communication management (CM).
        ComMgt = 0x07,
        /// SNMP tunnelling.
        Snmp = 0x08,
        /// Device administration (first application-specific class).
        DevAdm = 0x10,
        /// Boot management.
        BootMgt = 0x11,
        /// BIS.
        Bis = 0x12,
        /// Congestion control (CC).
        CongMgmt = 0x21,
    }
}

impl MgmtClass {
    /// The QP number this class is sent to: 0 for subnet management
    /// (0x01, 0x81), 1 for everything else.
    pub fn qp(self) -> u32 {
        qp_for_class(self.into())
    }

    /// Whether this is a vendor-specific class (either range).
    pub fn is_vendor(self) -> bool {
        is_vendor_class(self.into())
    }

    /// Whether the kernel treats this class as RMPP capable.
    pub fn is_rmpp(self) -> bool {
        is_rmpp_class(self.into())
    }
}

impl fmt::Display for MgmtClass {
    /// Names as libibumad's `umad_class_str()` prints them (see
    /// [`crate::names::class_str`], typo in 0x21 included); classes without a
    /// name are shown as `Vendor(0x..)`, `Application(0x..)` or
    /// `Unknown(0x..)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = crate::names::class_str(u8::from(*self));
        match self {
            MgmtClass::Unknown(c) if name == crate::names::UNKNOWN => {
                write!(f, "Unknown(0x{c:02x})")
            }
            MgmtClass::Unknown(c) => write!(f, "{name}(0x{c:02x})"),
            _ => f.write_str(name),
        }
    }
}

/// Whether `class` is a vendor-specific management class (0x09–0x0f or
/// 0x30–0x4f).
pub fn is_vendor_class(class: u8) -> bool {
    VENDOR_RANGE1.contains(&class) || VENDOR_RANGE2.contains(&class)
}

/// Whether `class` is in the second vendor range (0x30–0x4f), whose header
/// carries an OUI.
pub fn is_vendor_range2(class: u8) -> bool {
    VENDOR_RANGE2.contains(&class)
}

/// Whether the kernel MAD layer treats `class` as RMPP capable: the
/// classes of [`crate::rmpp::RMPP_CLASSES`] (SA 0x03, device management
/// 0x06, device administration 0x10, BIS 0x12) and the second vendor range
/// (0x30–0x4f). Same list as the kernel's `ib_is_mad_class_rmpp()`.
pub fn is_rmpp_class(class: u8) -> bool {
    crate::rmpp::RMPP_CLASSES.contains(&class) || is_vendor_range2(class)
}

/// The QP a MAD of `class` is addressed to: 0 for subnet management
/// (0x01 LID routed, 0x81 directed route), 1 (the GSI) for every other class.
pub fn qp_for_class(class: u8) -> u32 {
    match class {
        0x01 | 0x81 => 0,
        _ => 1,
    }
}

enum_with_unknown! {
    /// MAD method (header byte 3, including the response bit 0x80).
    pub enum Method(u8) {
        /// Get an attribute.
        Get = 0x01,
        /// Set an attribute.
        Set = 0x02,
        /// Send a datagram (no response).
        Send = 0x03,
        /// Unsolicited notice.
        Trap = 0x05,
        /// Forward a subscribed event.
        Report = 0x06,
        /// Stop repeating a trap (no response bit).
        TrapRepress = 0x07,
        /// SA: get all matching records.
        GetTable = 0x12,
        /// SA: trace a path.
        GetTraceTable = 0x13,
        /// SA: multi-packet request.
        GetMulti = 0x14,
        /// SA: delete a record.
        Delete = 0x15,
        /// Response to `Get` or `Set`.
        GetResp = 0x81,
        /// Response to `Report`.
        ReportResp = 0x86,
        /// Response to `GetTable` and `GetTraceTable`.
        GetTableResp = 0x92,
        /// Response to `GetMulti`.
        GetMultiResp = 0x94,
        /// Response to `Delete`.
        DeleteResp = 0x95,
    }
}

impl Method {
    /// Whether the response bit (0x80) is set. `TrapRepress` is not a
    /// response by this definition.
    pub fn is_response(self) -> bool {
        u8::from(self) & METHOD_RESP_BIT != 0
    }

    /// The method a responder answers this request with, if any: `Get` and
    /// `Set` → `GetResp`, `Report` → `ReportResp`, `Trap` → `TrapRepress`,
    /// `GetTable`/`GetTraceTable` → `GetTableResp`, `GetMulti` →
    /// `GetMultiResp`, `Delete` → `DeleteResp`.
    pub fn response(self) -> Option<Method> {
        Some(match self {
            Method::Get | Method::Set => Method::GetResp,
            Method::Report => Method::ReportResp,
            Method::Trap => Method::TrapRepress,
            Method::GetTable | Method::GetTraceTable => Method::GetTableResp,
            Method::GetMulti => Method::GetMultiResp,
            Method::Delete => Method::DeleteResp,
            _ => return None,
        })
    }
}

impl fmt::Display for Method {
    /// Names as libibumad's `umad_method_str()` prints them for the SA class
    /// (see [`crate::names::method_str`]), which knows every method this enum
    /// names; unknown codes as `Unknown(0x..)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Method::Unknown(m) => write!(f, "Unknown(0x{m:02x})"),
            _ => f.write_str(crate::names::method_str(
                u8::from(MgmtClass::SubnAdm),
                u8::from(*self),
            )),
        }
    }
}

enum_with_unknown! {
    /// The "invalid field" code in status bits 2–4 (IBA 13.4.7).
    pub enum InvalidField(u8) {
        /// No invalid field.
        None = 0,
        /// Bad base or class version.
        BadVersion = 1,
        /// Method not supported by the class.
        MethodNotSupported = 2,
        /// Method/attribute combination not supported.
        MethodAttrNotSupported = 3,
        /// An attribute or attribute-modifier field has an invalid value.
        InvalidAttrValue = 7,
    }
}

/// The 16-bit MAD status word (IBA 13.4.7), host order.
///
/// Bit 0 busy, bit 1 redirect required, bits 2–4 invalid-field code,
/// bits 8–15 class specific. In directed-route SMPs bit 15 is the D
/// (direction) bit instead and the status proper is the low 15 bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Status(pub u16);

impl Status {
    /// No error.
    pub const SUCCESS: Status = Status(0);
    /// Bit 0: the responder is busy, retry later.
    pub const BUSY: u16 = 0x0001;
    /// Bit 1: redirection required (see ClassPortInfo).
    pub const REDIRECT: u16 = 0x0002;
    /// Bits 2–4: the invalid-field code.
    pub const INVALID_FIELD_MASK: u16 = 0x001c;
    /// Invalid-field code 1 in place: bad version.
    pub const BAD_VERSION: u16 = 1 << 2;
    /// Invalid-field code 2 in place: method not supported.
    pub const METHOD_NOT_SUPPORTED: u16 = 2 << 2;
    /// Invalid-field code 3 in place: method/attribute not supported.
    pub const METHOD_ATTR_NOT_SUPPORTED: u16 = 3 << 2;
    /// Invalid-field code 7 in place: invalid attribute or modifier value.
    pub const INVALID_ATTR_VALUE: u16 = 7 << 2;
    /// Bits 8–15: class-specific status.
    pub const CLASS_MASK: u16 = 0xff00;
    /// Bit 15: D bit of directed-route SMPs (1 = returning from the target).
    pub const DIRECTION: u16 = 0x8000;

    /// The raw 16-bit value.
    pub fn raw(self) -> u16 {
        self.0
    }

    /// Whether no error bit is set. Bit 15 is ignored: it is the D bit of
    /// directed-route SMPs, and no standard class uses it for an error code.
    pub fn is_success(self) -> bool {
        self.without_direction().0 == 0
    }

    /// Whether the busy bit is set.
    pub fn is_busy(self) -> bool {
        self.0 & Self::BUSY != 0
    }

    /// Whether the redirect-required bit is set.
    pub fn is_redirect(self) -> bool {
        self.0 & Self::REDIRECT != 0
    }

    /// The invalid-field code (bits 2–4).
    pub fn invalid_field(self) -> InvalidField {
        // The mask keeps the value within 3 bits, so the cast is lossless.
        InvalidField::from(((self.0 & Self::INVALID_FIELD_MASK) >> 2) as u8)
    }

    /// The class-specific byte (bits 8–15, including the D bit for
    /// directed-route SMPs).
    pub fn class_specific(self) -> u8 {
        self.0.to_be_bytes()[0]
    }

    /// The D bit of a directed-route SMP (bit 15).
    pub fn direction(self) -> bool {
        self.0 & Self::DIRECTION != 0
    }

    /// This status with the D bit cleared.
    pub fn without_direction(self) -> Status {
        Status(self.0 & !Self::DIRECTION)
    }
}

impl From<u16> for Status {
    fn from(v: u16) -> Self {
        Status(v)
    }
}

impl From<Status> for u16 {
    fn from(s: Status) -> Self {
        s.0
    }
}

impl fmt::Display for Status {
    /// The text of libibumad's `umad_common_mad_status_str()` (busy, then
    /// redirect, then the invalid-field code, else "Success"; see
    /// [`crate::names::common_mad_status_str`]), followed by the raw value
    /// when any class-specific bit other than D is set.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(crate::names::common_mad_status_str(self.0))?;
        if self.without_direction().0 & Self::CLASS_MASK != 0 {
            write!(f, " (status 0x{:04x})", self.0)?;
        }
        Ok(())
    }
}

/// A view of a buffer holding a MAD, starting at the common header.
///
/// The buffer may be longer than [`MAD_SIZE`] (reassembled RMPP payloads);
/// [`Mad::check_len`] only requires the 24-byte header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mad<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Mad<T> {
    /// Wraps a buffer without checking its length.
    pub const fn new_unchecked(buffer: T) -> Mad<T> {
        Mad { buffer }
    }

    /// Wraps a buffer and checks that it holds at least the header.
    pub fn new_checked(buffer: T) -> Result<Mad<T>> {
        let mad = Self::new_unchecked(buffer);
        mad.check_len()?;
        Ok(mad)
    }

    /// Checks that the buffer holds at least [`HEADER_LEN`] bytes. After
    /// `Ok(())` no accessor or setter panics.
    pub fn check_len(&self) -> Result<()> {
        bytes::check_len(self.buffer.as_ref(), HEADER_LEN)
    }

    /// Returns the wrapped buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The base version (byte 0); 1 for InfiniBand.
    pub fn base_version(&self) -> u8 {
        self.buffer.as_ref()[field::BASE_VERSION]
    }

    /// The management class (byte 1).
    pub fn mgmt_class(&self) -> MgmtClass {
        MgmtClass::from(self.buffer.as_ref()[field::MGMT_CLASS])
    }

    /// The class version (byte 2).
    pub fn class_version(&self) -> u8 {
        self.buffer.as_ref()[field::CLASS_VERSION]
    }

    /// The method byte (byte 3), response bit included.
    pub fn method(&self) -> Method {
        Method::from(self.buffer.as_ref()[field::METHOD])
    }

    /// Whether the response bit (0x80 of byte 3) is set.
    pub fn is_response(&self) -> bool {
        self.method().is_response()
    }

    /// Whether a MAD layer routes this MAD as a response (to the agent whose TID it carries)
    /// rather than as a request (by class, version and method): the response bit, or
    /// `TrapRepress`, or a Baseboard Management MAD with attribute-modifier bit 24 (the
    /// kernel's `ib_response_mad`).
    pub fn is_response_mad(&self) -> bool {
        let m = u8::from(self.method());
        m & METHOD_RESP_BIT != 0
            || m == u8::from(Method::TrapRepress)
            || (u8::from(self.mgmt_class()) == 0x05 && self.attr_mod() & (1 << 24) != 0)
    }

    /// The status word (bytes 4–5).
    pub fn status(&self) -> Status {
        Status(bytes::get_u16(&self.buffer.as_ref()[field::STATUS]))
    }

    /// The class-specific word (bytes 6–7). For directed-route SMPs byte 6
    /// is the hop pointer and byte 7 the hop count.
    pub fn class_specific(&self) -> u16 {
        bytes::get_u16(&self.buffer.as_ref()[field::CLASS_SPECIFIC])
    }

    /// The 64-bit transaction ID (bytes 8–15).
    pub fn tid(&self) -> u64 {
        bytes::get_u64(&self.buffer.as_ref()[field::TID])
    }

    /// The attribute ID (bytes 16–17).
    pub fn attr_id(&self) -> u16 {
        bytes::get_u16(&self.buffer.as_ref()[field::ATTR_ID])
    }

    /// The reserved word (bytes 18–19).
    pub fn reserved(&self) -> u16 {
        bytes::get_u16(&self.buffer.as_ref()[field::RESERVED])
    }

    /// The attribute modifier (bytes 20–23).
    pub fn attr_mod(&self) -> u32 {
        bytes::get_u32(&self.buffer.as_ref()[field::ATTR_MOD])
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Mad<&'a T> {
    /// Everything after the header (byte 24 on), borrowed from the buffer.
    pub fn data(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::DATA]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Mad<T> {
    /// Sets the base version.
    pub fn set_base_version(&mut self, value: u8) {
        self.buffer.as_mut()[field::BASE_VERSION] = value;
    }

    /// Sets the management class.
    pub fn set_mgmt_class(&mut self, value: MgmtClass) {
        self.buffer.as_mut()[field::MGMT_CLASS] = value.into();
    }

    /// Sets the class version.
    pub fn set_class_version(&mut self, value: u8) {
        self.buffer.as_mut()[field::CLASS_VERSION] = value;
    }

    /// Sets the method byte (response bit included).
    pub fn set_method(&mut self, value: Method) {
        self.buffer.as_mut()[field::METHOD] = value.into();
    }

    /// Sets or clears the response bit, keeping the rest of the method.
    pub fn set_response(&mut self, response: bool) {
        let b = &mut self.buffer.as_mut()[field::METHOD];
        if response {
            *b |= METHOD_RESP_BIT;
        } else {
            *b &= !METHOD_RESP_BIT;
        }
    }

    /// Sets the status word.
    pub fn set_status(&mut self, value: Status) {
        bytes::set_u16(&mut self.buffer.as_mut()[field::STATUS], value.0);
    }

    /// Sets the class-specific word.
    pub fn set_class_specific(&mut self, value: u16) {
        bytes::set_u16(&mut self.buffer.as_mut()[field::CLASS_SPECIFIC], value);
    }

    /// Sets the transaction ID.
    pub fn set_tid(&mut self, value: u64) {
        bytes::set_u64(&mut self.buffer.as_mut()[field::TID], value);
    }

    /// Sets the attribute ID.
    pub fn set_attr_id(&mut self, value: u16) {
        bytes::set_u16(&mut self.buffer.as_mut()[field::ATTR_ID], value);
    }

    /// Sets the reserved word (normally 0).
    pub fn set_reserved(&mut self, value: u16) {
        bytes::set_u16(&mut self.buffer.as_mut()[field::RESERVED], value);
    }

    /// Sets the attribute modifier.
    pub fn set_attr_mod(&mut self, value: u32) {
        bytes::set_u32(&mut self.buffer.as_mut()[field::ATTR_MOD], value);
    }

    /// Everything after the header, mutably.
    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::DATA]
    }
}

impl<T: AsRef<[u8]>> fmt::Display for Mad<T> {
    /// One-line summary of the header, or `[truncated MAD]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match MadHeader::parse_unchecked_version(self) {
            Ok(repr) => write!(f, "{repr}"),
            Err(_) => f.write_str("[truncated MAD]"),
        }
    }
}

/// The common MAD header, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MadHeader {
    /// Base version; [`MadHeader::parse`] only accepts 1.
    pub base_version: u8,
    /// Management class.
    pub mgmt_class: MgmtClass,
    /// Class version (1 for SMPs and PerfMgt, 2 for SA).
    pub class_version: u8,
    /// Method, response bit included.
    pub method: Method,
    /// Status word.
    pub status: Status,
    /// Class-specific word (hop pointer and hop count in DR SMPs).
    pub class_specific: u16,
    /// Transaction ID.
    pub tid: u64,
    /// Attribute ID.
    pub attr_id: u16,
    /// Reserved word, kept so `emit` reproduces the input.
    pub reserved: u16,
    /// Attribute modifier.
    pub attr_mod: u32,
}

impl MadHeader {
    /// Parses and validates the header: the buffer must hold [`HEADER_LEN`]
    /// bytes and the base version must be 1.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(mad: &Mad<&T>) -> Result<MadHeader> {
        let repr = Self::parse_unchecked_version(mad)?;
        if repr.base_version != BASE_VERSION {
            return Err(Error::BadBaseVersion(repr.base_version));
        }
        Ok(repr)
    }

    fn parse_unchecked_version<T: AsRef<[u8]>>(mad: &Mad<T>) -> Result<MadHeader> {
        mad.check_len()?;
        Ok(MadHeader {
            base_version: mad.base_version(),
            mgmt_class: mad.mgmt_class(),
            class_version: mad.class_version(),
            method: mad.method(),
            status: mad.status(),
            class_specific: mad.class_specific(),
            tid: mad.tid(),
            attr_id: mad.attr_id(),
            reserved: mad.reserved(),
            attr_mod: mad.attr_mod(),
        })
    }

    /// A request header with base version 1, status 0 and the given fields.
    pub fn request(
        mgmt_class: MgmtClass,
        class_version: u8,
        method: Method,
        attr_id: u16,
        attr_mod: u32,
        tid: u64,
    ) -> MadHeader {
        MadHeader {
            base_version: BASE_VERSION,
            mgmt_class,
            class_version,
            method,
            status: Status::SUCCESS,
            class_specific: 0,
            tid,
            attr_id,
            reserved: 0,
            attr_mod,
        }
    }

    /// Bytes [`MadHeader::emit`] writes: [`HEADER_LEN`].
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes every header field into `mad`.
    ///
    /// # Panics
    ///
    /// If the buffer is shorter than [`HEADER_LEN`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, mad: &mut Mad<&mut T>) {
        // Check first so a short buffer panics before anything is written.
        bytes::array_mut::<HEADER_LEN>(mad.buffer.as_mut());
        mad.set_base_version(self.base_version);
        mad.set_mgmt_class(self.mgmt_class);
        mad.set_class_version(self.class_version);
        mad.set_method(self.method);
        mad.set_status(self.status);
        mad.set_class_specific(self.class_specific);
        mad.set_tid(self.tid);
        mad.set_attr_id(self.attr_id);
        mad.set_reserved(self.reserved);
        mad.set_attr_mod(self.attr_mod);
    }
}

impl fmt::Display for MadHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "MAD class {} (0x{:02x}) v{} method {} (0x{:02x}) attr 0x{:04x} mod 0x{:08x} \
             tid 0x{:016x} status 0x{:04x}",
            self.mgmt_class,
            u8::from(self.mgmt_class),
            self.class_version,
            self.method,
            u8::from(self.method),
            self.attr_id,
            self.attr_mod,
            self.tid,
            self.status.0
        )
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::XorShift;

    /// A PortInfo GetResp as ibsim returns it to a DR request (first 28 bytes).
    static HEADER_BYTES: [u8; 28] = [
        0x01, 0x81, 0x01, 0x81, // base 1, class DR SMP, class v1, GetResp
        0x80, 0x00, 0x01, 0x02, // status: D bit; hop ptr 1, hop cnt 2
        0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x07, 0x77, // tid
        0x00, 0x15, 0x00, 0x00, // attr PortInfo, reserved
        0x00, 0x00, 0x00, 0x03, // attr mod: port 3
        0xaa, 0xbb, 0xcc, 0xdd, // data
    ];

    #[test]
    fn test_deconstruct() {
        let mad = Mad::new_checked(&HEADER_BYTES[..]).unwrap();
        assert_eq!(mad.base_version(), 1);
        assert_eq!(mad.mgmt_class(), MgmtClass::SubnDirectedRoute);
        assert_eq!(mad.class_version(), 1);
        assert_eq!(mad.method(), Method::GetResp);
        assert!(mad.is_response());
        assert_eq!(mad.status(), Status(0x8000));
        assert!(mad.status().direction());
        assert!(mad.status().is_success());
        assert_eq!(mad.class_specific(), 0x0102);
        assert_eq!(mad.tid(), 0x0001_0000_0000_0777);
        assert_eq!(mad.attr_id(), 0x15);
        assert_eq!(mad.reserved(), 0);
        assert_eq!(mad.attr_mod(), 3);
        assert_eq!(mad.data(), &[0xaa, 0xbb, 0xcc, 0xdd]);
    }

    #[test]
    fn test_construct() {
        let mut bytes = vec![0xa5; 28];
        let mut mad = Mad::new_unchecked(&mut bytes);
        mad.set_base_version(1);
        mad.set_mgmt_class(MgmtClass::SubnDirectedRoute);
        mad.set_class_version(1);
        mad.set_method(Method::Get);
        mad.set_response(true);
        mad.set_status(Status(0x8000));
        mad.set_class_specific(0x0102);
        mad.set_tid(0x0001_0000_0000_0777);
        mad.set_attr_id(0x15);
        mad.set_reserved(0);
        mad.set_attr_mod(3);
        mad.data_mut().copy_from_slice(&[0xaa, 0xbb, 0xcc, 0xdd]);
        assert_eq!(&bytes[..], &HEADER_BYTES[..]);
    }

    #[test]
    fn test_impossible_len() {
        for len in 0..HEADER_LEN {
            let buf = vec![1u8; len];
            assert_eq!(
                Mad::new_checked(&buf[..]).err(),
                Some(Error::Truncated {
                    needed: HEADER_LEN,
                    got: len
                })
            );
            assert!(MadHeader::parse(&Mad::new_unchecked(&buf[..])).is_err());
            assert_eq!(Mad::new_unchecked(&buf[..]).to_string(), "[truncated MAD]");
        }
        let exact = [1u8; HEADER_LEN];
        let mad = Mad::new_checked(&exact[..]).unwrap();
        assert!(mad.data().is_empty());
    }

    #[test]
    fn test_bad_base_version() {
        let mut buf = HEADER_BYTES;
        buf[0] = 0x80;
        assert_eq!(
            MadHeader::parse(&Mad::new_unchecked(&buf[..])),
            Err(Error::BadBaseVersion(0x80))
        );
    }

    #[test]
    fn test_repr_round_trip() {
        let repr = MadHeader::parse(&Mad::new_unchecked(&HEADER_BYTES[..])).unwrap();
        assert_eq!(repr.mgmt_class, MgmtClass::SubnDirectedRoute);
        assert_eq!(repr.buffer_len(), 24);
        let mut out = [0u8; 28];
        repr.emit(&mut Mad::new_unchecked(&mut out[..]));
        assert_eq!(out[..24], HEADER_BYTES[..24]);

        let mut rng = XorShift(0x1234_5678_9abc_def0);
        for _ in 0..1000 {
            let mut input = [0u8; HEADER_LEN];
            rng.fill(&mut input);
            input[0] = BASE_VERSION;
            let repr = MadHeader::parse(&Mad::new_unchecked(&input[..])).unwrap();
            let mut out = [0u8; HEADER_LEN];
            repr.emit(&mut Mad::new_unchecked(&mut out[..]));
            assert_eq!(out, input);
        }
    }

    #[test]
    fn test_request_header() {
        let h = MadHeader::request(MgmtClass::Perf, 1, Method::Get, 0x12, 0, 42);
        let mut out = [0xffu8; HEADER_LEN];
        h.emit(&mut Mad::new_unchecked(&mut out[..]));
        assert_eq!(
            out,
            [1, 4, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 42, 0, 0x12, 0, 0, 0, 0, 0, 0]
        );
        assert!(h.to_string().contains("method Get (0x01) attr 0x0012"));
    }

    #[test]
    fn enums_round_trip_every_code() {
        for v in 0..=u8::MAX {
            assert_eq!(u8::from(MgmtClass::from(v)), v);
            assert_eq!(u8::from(Method::from(v)), v);
            assert_eq!(u8::from(InvalidField::from(v)), v);
        }
        assert_eq!(MgmtClass::from(0x21), MgmtClass::CongMgmt);
        assert_eq!(MgmtClass::from(0x0a), MgmtClass::Unknown(0x0a));
        assert_eq!(Method::from(0x92), Method::GetTableResp);
        assert_eq!(Method::from(0x99), Method::Unknown(0x99));
    }

    #[test]
    fn method_helpers() {
        assert!(Method::GetResp.is_response());
        assert!(Method::ReportResp.is_response());
        assert!(!Method::TrapRepress.is_response());
        assert!(!Method::Get.is_response());
        assert!(Method::Unknown(0xc2).is_response());
        assert_eq!(Method::Set.response(), Some(Method::GetResp));
        assert_eq!(Method::GetTraceTable.response(), Some(Method::GetTableResp));
        assert_eq!(Method::Trap.response(), Some(Method::TrapRepress));
        assert_eq!(Method::Send.response(), None);
        assert_eq!(Method::GetResp.response(), None);
        assert_eq!(Method::GetMulti.to_string(), "GetMulti");
        assert_eq!(Method::Unknown(0x42).to_string(), "Unknown(0x42)");
    }

    #[test]
    fn class_helpers() {
        assert_eq!(qp_for_class(0x01), 0);
        assert_eq!(qp_for_class(0x81), 0);
        assert_eq!(qp_for_class(0x03), 1);
        assert_eq!(qp_for_class(0x04), 1);
        assert_eq!(MgmtClass::SubnDirectedRoute.qp(), 0);
        assert_eq!(MgmtClass::Perf.qp(), 1);
        for c in 0..=u8::MAX {
            let vendor = (0x09..=0x0f).contains(&c) || (0x30..=0x4f).contains(&c);
            assert_eq!(is_vendor_class(c), vendor, "class {c:#x}");
        }
        assert!(is_rmpp_class(0x03));
        assert!(is_rmpp_class(0x06));
        assert!(is_rmpp_class(0x10));
        assert!(is_rmpp_class(0x12));
        assert!(is_rmpp_class(0x30));
        assert!(is_rmpp_class(0x4f));
        assert!(!is_rmpp_class(0x01));
        assert!(!is_rmpp_class(0x04));
        assert!(!is_rmpp_class(0x09));
        assert!(MgmtClass::SubnAdm.is_rmpp());
        assert!(MgmtClass::Unknown(0x0a).is_vendor());
        assert_eq!(MgmtClass::SubnLid.to_string(), "Subn");
        assert_eq!(MgmtClass::SubnAdm.to_string(), "SubnAdm");
        assert_eq!(MgmtClass::Unknown(0x0a).to_string(), "Vendor(0x0a)");
        assert_eq!(MgmtClass::Unknown(0x2a).to_string(), "Application(0x2a)");
        assert_eq!(MgmtClass::Unknown(0x55).to_string(), "Unknown(0x55)");
    }

    #[test]
    fn status_helpers() {
        let s = Status(0x001c);
        assert_eq!(s.invalid_field(), InvalidField::InvalidAttrValue);
        assert!(!s.is_success());
        assert_eq!(s.to_string(), "Invalid attribute/modifier field");
        assert_eq!(
            Status(Status::METHOD_NOT_SUPPORTED).invalid_field(),
            InvalidField::MethodNotSupported
        );
        assert_eq!(
            Status(0x000c).to_string(),
            "Method/Attribute combo not supported"
        );
        assert!(Status(Status::BUSY).is_busy());
        assert_eq!(Status(0x0001).to_string(), "Busy");
        assert!(Status(Status::REDIRECT).is_redirect());
        assert_eq!(Status(0x0002).to_string(), "Redirection required");
        let dr = Status(0x801c);
        assert!(dr.direction());
        assert_eq!(dr.without_direction(), Status(0x001c));
        assert_eq!(dr.class_specific(), 0x80);
        assert_eq!(Status(0x8000).to_string(), "Success");
        assert_eq!(Status(0x0300).to_string(), "Success (status 0x0300)");
        assert_eq!(Status(0x0300).class_specific(), 3);
        assert!(!Status(0x0300).is_success());
        assert_eq!(u16::from(Status::from(0x1234)), 0x1234);
        assert_eq!(Status(0x0010).invalid_field(), InvalidField::Unknown(4));
    }
}
