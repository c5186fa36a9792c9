//! Subnet administration (class 0x03, class version 2; IBA Vol 1, 15.2):
//! the SA MAD layout, request builders, GetTableResp record iteration, and
//! the records.
//!
//! ```text
//!  bytes
//!    0..24  common MAD header (class 0x03, class version 2)
//!   24..36  RMPP header (see [`crate::rmpp`])
//!   36..44  SM_Key
//!   44..46  AttributeOffset: record size in 8-byte units (GetTableResp)
//!   46..48  reserved
//!   48..56  ComponentMask: which record fields a query matches on
//!   56..    SA data: 200 bytes in one MAD, more once RMPP-reassembled
//! ```
//!
//! [`SaMad`] is the in-place view, [`SaHeader`] the parsed summary of the
//! first 56 bytes. Each record is a Repr in its own module, with a `comp`
//! module holding its ComponentMask bits in IBA order; all records
//! implement [`SaRecord`], which the builders ([`SaMad::get_request`],
//! [`SaMad::get_table_request`]) and [`SaMad::parse_records`] use.
//!
//! A record's `LEN` is its size in the IBA tables. In a GetTableResp every
//! record is padded to a multiple of 8 bytes ([`SaRecord::ATTR_OFFSET`]);
//! the padding is not part of the record.
//!
//! The panic rules of the crate docs apply: after
//! [`SaMad::check_len`] (or [`SaMad::new_checked`]) no accessor or setter
//! panics.
//!
//! ```
//! use ibmad::sa::{path_record::comp, PathRecord, SaMad, SaRecord};
//! use ibmad::{Gid, Method};
//!
//! // GetTable(PathRecord) from one port GID to another.
//! let query = PathRecord {
//!     sgid: Gid::new(0xfe80_0000_0000_0000, 0x0002_c903_0000_0001),
//!     dgid: Gid::new(0xfe80_0000_0000_0000, 0x0002_c903_0000_0002),
//!     numb_path: 1,
//!     ..PathRecord::default()
//! };
//! let mask = comp::SGID | comp::DGID | comp::NUMB_PATH;
//! let request = SaMad::get_table_request(&query, mask, 0x42);
//! let sa = SaMad::new_checked(&request[..])?;
//! assert_eq!(sa.method(), Method::GetTable);
//! assert_eq!(sa.attr_id(), PathRecord::ATTR_ID);
//! assert_eq!(sa.comp_mask(), mask);
//!
//! // ... send it to the SA (SM LID, QP1) and receive `reply`, RMPP
//! // reassembled, truncated to the length received ...
//! # let mut reply = request.to_vec();
//! # reply[3] = 0x92;
//! # reply[44..46].copy_from_slice(&8u16.to_be_bytes());
//! # reply.truncate(56 + 2 * 64);
//! # query.emit(&mut reply[56 + 64..]);
//! let sa = SaMad::new_checked(&reply[..])?;
//! for record in sa.parse_records::<PathRecord>() {
//!     let path = record?;
//!     assert_eq!(path.sgid, query.sgid);
//! }
//! assert_eq!(sa.records().len(), 2);
//! # Ok::<(), ibmad::Error>(())
//! ```

use core::fmt;
use core::iter::FusedIterator;
use core::marker::PhantomData;

use crate::bytes;
use crate::header::{Mad, MadHeader, Method, MgmtClass, Status, MAD_SIZE};
use crate::rmpp::{Rmpp, RmppHeader};
use crate::Result;

/// Implements [`SaRecord`] for a record Repr by delegating to its inherent
/// `LEN`, `parse` and `emit`, and checks at compile time that the record
/// fits the data area of one SA MAD.
macro_rules! impl_sa_record {
    ($ty:ident, $id:expr) => {
        impl $crate::sa::SaRecord for $ty {
            const ATTR_ID: u16 = $id;
            const LEN: usize = $ty::LEN;

            fn parse(buf: &[u8]) -> $crate::Result<Self> {
                $ty::parse(buf)
            }

            fn emit(&self, buf: &mut [u8]) {
                $ty::emit(self, buf)
            }
        }

        const _: () = assert!($ty::LEN <= $crate::sa::SA_DATA_LEN);
    };
}

pub mod guid_info_record;
pub mod inform_info;
pub mod lft_record;
pub mod link_record;
pub mod mc_member_record;
pub mod mft_record;
pub mod node_record;
pub mod path_record;
pub mod pkey_table_record;
pub mod port_info_record;
pub mod service_record;
pub mod sl2vl_record;
pub mod sm_info_record;
pub mod switch_info_record;
pub mod vl_arb_record;

// ClassPortInfo travels in the SA data area too (SA Get(ClassPortInfo)).
impl_sa_record!(ClassPortInfo, attr_id::CLASS_PORT_INFO);
use crate::attr::ClassPortInfo;

pub use guid_info_record::GuidInfoRecord;
pub use inform_info::{InformInfo, InformInfoRecord};
pub use lft_record::LftRecord;
pub use link_record::LinkRecord;
pub use mc_member_record::McMemberRecord;
pub use mft_record::MftRecord;
pub use node_record::NodeRecord;
pub use path_record::PathRecord;
pub use pkey_table_record::PKeyTableRecord;
pub use port_info_record::PortInfoRecord;
pub use service_record::ServiceRecord;
pub use sl2vl_record::Sl2VlRecord;
pub use sm_info_record::SmInfoRecord;
pub use switch_info_record::SwitchInfoRecord;
pub use vl_arb_record::VlArbRecord;

mod field {
    use crate::bytes::{Field, Rest};

    pub(super) const SM_KEY: Field = 36..44;
    pub(super) const ATTR_OFFSET: Field = 44..46;
    pub(super) const RESERVED: Field = 46..48;
    pub(super) const COMP_MASK: Field = 48..56;
    pub(super) const DATA: Rest = 56..;
}

/// Length of the SA MAD header (common header, RMPP header, SA header).
pub const SA_HEADER_LEN: usize = field::COMP_MASK.end;

/// Byte offset of the SA data (the records) within the MAD.
pub const SA_DATA_OFFSET: usize = field::DATA.start;

/// Size of the SA data area of one 256-byte MAD.
pub const SA_DATA_LEN: usize = MAD_SIZE - SA_DATA_OFFSET;

pub use crate::rmpp::RMPP_HEADER_LEN;

/// Class version of subnet administration.
pub const SA_CLASS_VERSION: u8 = 2;

/// SA attribute IDs (IBA 15.2.5, libibumad's `umad_sa.h`).
pub mod attr_id {
    /// The attributes common to all classes: ClassPortInfo, Notice and
    /// InformInfo (a `Set(InformInfo)` to the SA subscribes to traps).
    pub use crate::attr::id::{CLASS_PORT_INFO, INFORM_INFO, NOTICE};

    /// NodeRecord.
    pub const NODE_RECORD: u16 = 0x0011;
    /// PortInfoRecord.
    pub const PORT_INFO_RECORD: u16 = 0x0012;
    /// SLtoVLMappingTableRecord.
    pub const SL2VL_RECORD: u16 = 0x0013;
    /// SwitchInfoRecord.
    pub const SWITCH_INFO_RECORD: u16 = 0x0014;
    /// LinearForwardingTableRecord.
    pub const LFT_RECORD: u16 = 0x0015;
    /// RandomForwardingTableRecord.
    pub const RFT_RECORD: u16 = 0x0016;
    /// MulticastForwardingTableRecord.
    pub const MFT_RECORD: u16 = 0x0017;
    /// SMInfoRecord.
    pub const SM_INFO_RECORD: u16 = 0x0018;
    /// LinkSpeedWidthPairsTableRecord.
    pub const LINK_SPEED_WIDTH_PAIRS_RECORD: u16 = 0x0019;
    /// LinkRecord.
    pub const LINK_RECORD: u16 = 0x0020;
    /// GuidInfoRecord.
    pub const GUID_INFO_RECORD: u16 = 0x0030;
    /// ServiceRecord.
    pub const SERVICE_RECORD: u16 = 0x0031;
    /// P_KeyTableRecord.
    pub const PKEY_TABLE_RECORD: u16 = 0x0033;
    /// PathRecord.
    pub const PATH_RECORD: u16 = 0x0035;
    /// VLArbitrationTableRecord.
    pub const VL_ARB_RECORD: u16 = 0x0036;
    /// MCMemberRecord.
    pub const MCMEMBER_RECORD: u16 = 0x0038;
    /// TraceRecord.
    pub const TRACE_RECORD: u16 = 0x0039;
    /// MultiPathRecord.
    pub const MULTI_PATH_RECORD: u16 = 0x003a;
    /// ServiceAssociationRecord.
    pub const SERVICE_ASSOCIATION_RECORD: u16 = 0x003b;
    /// HierarchyInfoRecord.
    pub const HIERARCHY_INFO_RECORD: u16 = 0x003c;
    /// CableInfoRecord.
    pub const CABLE_INFO_RECORD: u16 = 0x003d;
    /// PortInfoExtendedRecord.
    pub const PORT_INFO_EXT_RECORD: u16 = 0x003e;
    /// InformInfoRecord.
    pub const INFORM_INFO_RECORD: u16 = 0x00f3;
}

/// SA status words: the SA code in status bits 8–15 (IBA 15.2.1.1, Table
/// "SA MAD class-specific status"), as 16-bit values for
/// [`crate::Status`].
pub mod status {
    /// Insufficient resources to complete the request.
    pub const NO_RESOURCES: u16 = 0x0100;
    /// The request is invalid (e.g. bad component mask).
    pub const REQ_INVALID: u16 = 0x0200;
    /// No record matched (Get only; GetTable returns zero records).
    pub const NO_RECORDS: u16 = 0x0300;
    /// More than one record matched a Get.
    pub const TOO_MANY_RECORDS: u16 = 0x0400;
    /// A GID in the request is invalid.
    pub const INVALID_GID: u16 = 0x0500;
    /// The component mask does not select enough components.
    pub const INSUFFICIENT_COMPONENTS: u16 = 0x0600;
    /// The request was denied.
    pub const REQ_DENIED: u16 = 0x0700;
    /// The requested priority is in use; the SA suggests another.
    pub const PRIORITY_SUGGESTED: u16 = 0x0800;
}

/// SA ClassPortInfo.CapabilityMask bits (`umad_sa.h`).
pub mod cap {
    /// Subnet optional records are supported.
    pub const IS_SUBNET_OPT_REC_SUP: u16 = 1 << 8;
    /// UD multicast is supported.
    pub const IS_UD_MCAST_SUP: u16 = 1 << 9;
    /// MultiPathRecord is supported.
    pub const IS_MULTIPATH_SUP: u16 = 1 << 10;
    /// Reinit is supported.
    pub const IS_REINIT_SUP: u16 = 1 << 11;
    /// GID-scoped MultiPathRecord is supported.
    pub const IS_GID_SCOPED_MULTIPATH_SUP: u16 = 1 << 12;
    /// PortInfoRecord CapabilityMask matching is supported.
    pub const IS_PORTINFO_CAP_MASK_MATCH_SUP: u16 = 1 << 13;
    /// LinkSpeedWidthPairsTableRecord is supported.
    pub const IS_LINK_SPEED_WIDTH_PAIRS_REC_SUP: u16 = 1 << 14;
    /// PA services are supported.
    pub const IS_PA_SERVICES_SUP: u16 = 1 << 15;
}

/// SA ClassPortInfo.CapabilityMask2 bits (`umad_sa.h`).
pub mod cap2 {
    /// Unpath/repath traps are supported.
    pub const IS_UNPATH_REPATH_SUP: u32 = 1 << 0;
    /// QoS is supported.
    pub const IS_QOS_SUP: u32 = 1 << 1;
    /// The reverse-path P_Key member bit is supported.
    pub const IS_REV_PATH_PKEY_MEM_BIT_SUP: u32 = 1 << 2;
    /// Multicast topology is supported.
    pub const IS_MCAST_TOP_SUP: u32 = 1 << 3;
    /// HierarchyInfoRecord is supported.
    pub const IS_HIERARCHY_INFO_SUP: u32 = 1 << 4;
    /// Additional GUIDs are supported.
    pub const IS_ADDITIONAL_GUID_SUP: u32 = 1 << 5;
    /// Full PortInfoRecord is supported.
    pub const IS_FULL_PORTINFO_REC_SUP: u32 = 1 << 6;
    /// Extended speeds are supported.
    pub const IS_EXT_SPEEDS_SUP: u32 = 1 << 7;
    /// Multicast ServiceRecord is supported.
    pub const IS_MCAST_SERVICE_REC_SUP: u32 = 1 << 8;
    /// CableInfoRecord is supported.
    pub const IS_CABLE_INFO_REC_SUP: u32 = 1 << 9;
    /// PortInfoRecord CapabilityMask2 matching is supported.
    pub const IS_PORT_INFO_CAPMASK2_MATCH_SUP: u32 = 1 << 10;
    /// PortInfoExtendedRecord is supported.
    pub const IS_PORT_INFO_EXT_REC_SUP: u32 = 1 << 11;
}

enum_with_unknown! {
    /// The SA status code (status bits 8–15; IBA 15.2.1.1).
    #[derive(Default)]
    pub enum SaStatus(u8) {
        /// No SA error.
        #[default]
        Success = 0,
        /// Insufficient resources.
        NoResources = 1,
        /// Request invalid.
        RequestInvalid = 2,
        /// No records.
        NoRecords = 3,
        /// Too many records.
        TooManyRecords = 4,
        /// Invalid GID.
        InvalidGid = 5,
        /// Insufficient components.
        InsufficientComponents = 6,
        /// Request denied.
        RequestDenied = 7,
        /// Priority suggested.
        PrioritySuggested = 8,
    }
}

impl SaStatus {
    /// The SA code of a status word (its bits 8–15; the low bits are the
    /// common status, see [`Status`]).
    pub fn from_status(status: Status) -> SaStatus {
        SaStatus::from(status.class_specific())
    }

    /// The status word carrying this code (bits 8–15, low bits zero).
    pub fn to_status(self) -> Status {
        Status(u16::from(u8::from(self)) << 8)
    }
}

impl fmt::Display for SaStatus {
    /// The text of libibumad's `umad_sa_mad_status_str()`
    /// ([`crate::names::sa_mad_status_str`]): `Success`, `No Resources`,
    /// `Request Invalid`, `No Records`, `Too Many Records`, `Invalid GID`,
    /// `Insufficient Components`, `Request Denied`, `Priority Suggested`,
    /// else `Undefined Error`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(crate::names::sa_mad_status_str(self.to_status().raw()))
    }
}

/// An SA record (or InformInfo) that travels in the SA data area.
///
/// Implemented by every record of this module; the builders and
/// [`SaMad::parse_records`] are generic over it.
pub trait SaRecord: Sized {
    /// SA attribute ID of the record.
    const ATTR_ID: u16;
    /// Size of the record in the IBA tables, in bytes.
    const LEN: usize;
    /// AttributeOffset of the record in a GetTableResp: `LEN` rounded up to
    /// a multiple of 8, in 8-byte units.
    // `LEN` is at most a few hundred bytes, so the cast is lossless.
    const ATTR_OFFSET: u16 = Self::LEN.div_ceil(8) as u16;

    /// Parses the first `LEN` bytes of `buf`.
    fn parse(buf: &[u8]) -> Result<Self>;

    /// Writes the first `LEN` bytes of `buf`.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than `LEN`.
    fn emit(&self, buf: &mut [u8]);
}

/// A view of a buffer holding an SA MAD, starting at the common header.
///
/// The buffer may be longer than [`MAD_SIZE`]: a GetTableResp reassembled
/// from RMPP segments is one header followed by all the records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaMad<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> SaMad<T> {
    /// Wraps a buffer without checking its length.
    pub const fn new_unchecked(buffer: T) -> SaMad<T> {
        SaMad { buffer }
    }

    /// Wraps a buffer and checks that it holds at least the SA header.
    pub fn new_checked(buffer: T) -> Result<SaMad<T>> {
        let sa = Self::new_unchecked(buffer);
        sa.check_len()?;
        Ok(sa)
    }

    /// Checks that the buffer holds at least [`SA_HEADER_LEN`] bytes. After
    /// `Ok(())` no accessor or setter panics.
    pub fn check_len(&self) -> Result<()> {
        bytes::check_len(self.buffer.as_ref(), SA_HEADER_LEN)
    }

    /// Returns the wrapped buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The common MAD header as a view (class, method, TID, …).
    pub fn header(&self) -> Mad<&[u8]> {
        Mad::new_unchecked(self.buffer.as_ref())
    }

    /// The management class (0x03 for a real SA MAD).
    pub fn mgmt_class(&self) -> MgmtClass {
        self.header().mgmt_class()
    }

    /// The method (response bit included).
    pub fn method(&self) -> Method {
        self.header().method()
    }

    /// The full status word.
    pub fn status(&self) -> Status {
        self.header().status()
    }

    /// The SA code in status bits 8–15.
    pub fn sa_status(&self) -> SaStatus {
        SaStatus::from_status(self.status())
    }

    /// The transaction ID.
    pub fn tid(&self) -> u64 {
        self.header().tid()
    }

    /// The attribute ID (which record).
    pub fn attr_id(&self) -> u16 {
        self.header().attr_id()
    }

    /// The attribute modifier.
    pub fn attr_mod(&self) -> u32 {
        self.header().attr_mod()
    }

    /// The RMPP header (bytes 24–35) as a view.
    pub fn rmpp(&self) -> Rmpp<&[u8]> {
        Rmpp::new_unchecked(self.buffer.as_ref())
    }

    /// The SM_Key (bytes 36–43).
    pub fn sm_key(&self) -> u64 {
        bytes::get_u64(&self.buffer.as_ref()[field::SM_KEY])
    }

    /// The AttributeOffset (bytes 44–45): the size of each record of a
    /// GetTableResp in 8-byte units.
    pub fn attr_offset(&self) -> u16 {
        bytes::get_u16(&self.buffer.as_ref()[field::ATTR_OFFSET])
    }

    /// The reserved word (bytes 46–47).
    pub fn reserved(&self) -> u16 {
        bytes::get_u16(&self.buffer.as_ref()[field::RESERVED])
    }

    /// The ComponentMask (bytes 48–55): bit *n* selects the record's *n*-th
    /// component (see each record's `comp` module).
    pub fn comp_mask(&self) -> u64 {
        bytes::get_u64(&self.buffer.as_ref()[field::COMP_MASK])
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> SaMad<&'a T> {
    /// The SA data (byte 56 to the end of the buffer), borrowed from the
    /// buffer.
    pub fn data(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::DATA]
    }

    /// The records of a GetTableResp (or GetMultiResp): consecutive
    /// `attr_offset() * 8`-byte slices of [`SaMad::data`].
    ///
    /// Never fails and never panics on bad offsets: an AttributeOffset of 0
    /// (what the SA sends with zero records) gives an empty iterator, as
    /// does a record size larger than the data; a trailing partial record
    /// is not returned. This is the count infiniband-diags' `sa_query`
    /// computes, `(len - 56) / (offset * 8)`, so the buffer must end where
    /// the received MAD ends.
    pub fn records(&self) -> Records<'a> {
        Records::new(self.data(), self.attr_offset())
    }

    /// The records of a GetTableResp parsed as `R`; see
    /// [`SaMad::records`]. A record slice shorter than `R::LEN` (an
    /// AttributeOffset too small for `R`) yields an [`crate::Error::Truncated`]
    /// item.
    pub fn parse_records<R: SaRecord>(&self) -> ParsedRecords<'a, R> {
        ParsedRecords {
            inner: self.records(),
            _record: PhantomData,
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> SaMad<T> {
    /// The common MAD header as a mutable view.
    pub fn header_mut(&mut self) -> Mad<&mut [u8]> {
        Mad::new_unchecked(self.buffer.as_mut())
    }

    /// The RMPP header as a mutable view.
    pub fn rmpp_mut(&mut self) -> Rmpp<&mut [u8]> {
        Rmpp::new_unchecked(self.buffer.as_mut())
    }

    /// Sets the SM_Key.
    pub fn set_sm_key(&mut self, value: u64) {
        bytes::set_u64(&mut self.buffer.as_mut()[field::SM_KEY], value);
    }

    /// Sets the AttributeOffset (8-byte units).
    pub fn set_attr_offset(&mut self, value: u16) {
        bytes::set_u16(&mut self.buffer.as_mut()[field::ATTR_OFFSET], value);
    }

    /// Sets the reserved word (normally 0).
    pub fn set_reserved(&mut self, value: u16) {
        bytes::set_u16(&mut self.buffer.as_mut()[field::RESERVED], value);
    }

    /// Sets the ComponentMask.
    pub fn set_comp_mask(&mut self, value: u64) {
        bytes::set_u64(&mut self.buffer.as_mut()[field::COMP_MASK], value);
    }

    /// The SA data, mutably.
    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::DATA]
    }
}

impl SaMad<[u8; MAD_SIZE]> {
    /// Builds an SA request the way libibmad does for `saquery`: base
    /// version 1, class 0x03, class version 2, status 0, RMPP header zero,
    /// SM_Key 0, AttributeOffset 0, the given ComponentMask, data zero.
    ///
    /// Send it to the SM's LID on QP1 with the GSI Q_Key.
    pub fn request(
        method: Method,
        attr_id: u16,
        attr_mod: u32,
        comp_mask: u64,
        tid: u64,
    ) -> [u8; MAD_SIZE] {
        let mut buf = [0u8; MAD_SIZE];
        SaHeader::request(method, attr_id, attr_mod, comp_mask, tid)
            .emit(&mut SaMad::new_unchecked(&mut buf[..]));
        buf
    }

    /// Builds an SA request for a record type: [`SaMad::request`] with
    /// `R::ATTR_ID`, attribute modifier 0, and `record` in the data area
    /// (the fields `comp_mask` selects are the ones the SA matches).
    pub fn record_request<R: SaRecord>(
        method: Method,
        record: &R,
        comp_mask: u64,
        tid: u64,
    ) -> [u8; MAD_SIZE] {
        let mut buf = Self::request(method, R::ATTR_ID, 0, comp_mask, tid);
        record.emit(&mut buf[SA_DATA_OFFSET..]);
        buf
    }

    /// Builds `Get(record)`: the one record matching `comp_mask` (status
    /// [`status::TOO_MANY_RECORDS`] if several match).
    pub fn get_request<R: SaRecord>(record: &R, comp_mask: u64, tid: u64) -> [u8; MAD_SIZE] {
        Self::record_request(Method::Get, record, comp_mask, tid)
    }

    /// Builds `GetTable(record)`: all records matching `comp_mask` (0: all
    /// records); the answer is a GetTableResp, usually RMPP.
    pub fn get_table_request<R: SaRecord>(record: &R, comp_mask: u64, tid: u64) -> [u8; MAD_SIZE] {
        Self::record_request(Method::GetTable, record, comp_mask, tid)
    }
}

/// The first 56 bytes of an SA MAD, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SaHeader {
    /// The common MAD header.
    pub header: MadHeader,
    /// The RMPP header (bytes 24–35).
    pub rmpp: RmppHeader,
    /// SM_Key.
    pub sm_key: u64,
    /// AttributeOffset (8-byte units).
    pub attr_offset: u16,
    /// Reserved word, kept so `emit` reproduces the input.
    pub reserved: u16,
    /// ComponentMask.
    pub comp_mask: u64,
}

impl SaHeader {
    /// Parses and validates the header: the buffer must hold
    /// [`SA_HEADER_LEN`] bytes and the base version must be 1.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(sa: &SaMad<&T>) -> Result<SaHeader> {
        sa.check_len()?;
        Ok(SaHeader {
            header: MadHeader::parse(&sa.header())?,
            rmpp: RmppHeader::parse(&sa.rmpp())?,
            sm_key: sa.sm_key(),
            attr_offset: sa.attr_offset(),
            reserved: sa.reserved(),
            comp_mask: sa.comp_mask(),
        })
    }

    /// A request header: class 0x03, class version 2, status 0, RMPP
    /// header, SM_Key and AttributeOffset zero.
    pub fn request(
        method: Method,
        attr_id: u16,
        attr_mod: u32,
        comp_mask: u64,
        tid: u64,
    ) -> SaHeader {
        SaHeader {
            header: MadHeader::request(
                MgmtClass::SubnAdm,
                SA_CLASS_VERSION,
                method,
                attr_id,
                attr_mod,
                tid,
            ),
            rmpp: RmppHeader::INACTIVE,
            sm_key: 0,
            attr_offset: 0,
            reserved: 0,
            comp_mask,
        }
    }

    /// Bytes [`SaHeader::emit`] writes: [`SA_HEADER_LEN`].
    pub const fn buffer_len(&self) -> usize {
        SA_HEADER_LEN
    }

    /// Writes every header field (the first [`SA_HEADER_LEN`] bytes).
    ///
    /// # Panics
    ///
    /// If the buffer is shorter than [`SA_HEADER_LEN`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, sa: &mut SaMad<&mut T>) {
        bytes::array_mut::<SA_HEADER_LEN>(sa.buffer.as_mut());
        self.header.emit(&mut sa.header_mut());
        self.rmpp.emit(&mut sa.rmpp_mut());
        sa.set_sm_key(self.sm_key);
        sa.set_attr_offset(self.attr_offset);
        sa.set_reserved(self.reserved);
        sa.set_comp_mask(self.comp_mask);
    }
}

/// Iterator over the fixed-size records of an SA payload; see
/// [`SaMad::records`].
#[derive(Debug, Clone)]
pub struct Records<'a> {
    data: &'a [u8],
    record_len: usize,
}

impl<'a> Records<'a> {
    /// The records of `data` (the SA data area, from MAD byte 56 on), each
    /// `attr_offset * 8` bytes long. An `attr_offset` of 0, or a record
    /// size larger than `data`, gives no records; a trailing partial record
    /// is ignored.
    pub fn new(data: &'a [u8], attr_offset: u16) -> Records<'a> {
        Records {
            data,
            record_len: usize::from(attr_offset) * 8,
        }
    }

    /// The size of each record in bytes (`attr_offset * 8`).
    pub fn record_len(&self) -> usize {
        self.record_len
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.record_len == 0 || self.data.len() < self.record_len {
            return None;
        }
        let (record, rest) = self.data.split_at(self.record_len);
        self.data = rest;
        Some(record)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self
            .data
            .len()
            .checked_div(self.record_len)
            .unwrap_or_default();
        (n, Some(n))
    }
}

impl ExactSizeIterator for Records<'_> {}

impl FusedIterator for Records<'_> {}

/// Iterator over the records of an SA payload parsed as `R`; see
/// [`SaMad::parse_records`].
#[derive(Debug, Clone)]
pub struct ParsedRecords<'a, R> {
    inner: Records<'a>,
    _record: PhantomData<fn() -> R>,
}

impl<R: SaRecord> Iterator for ParsedRecords<'_, R> {
    type Item = Result<R>;

    fn next(&mut self) -> Option<Result<R>> {
        self.inner.next().map(R::parse)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl<R: SaRecord> ExactSizeIterator for ParsedRecords<'_, R> {}

impl<R: SaRecord> FusedIterator for ParsedRecords<'_, R> {}

#[cfg(test)]
mod test {
    use super::*;
    use crate::rmpp::{RmppFlags, RmppStatus, RmppType};
    use crate::test_util::XorShift;
    use crate::Error;

    /// A GetTableResp(NodeRecord) header as opensm sends it: two records
    /// of 112 bytes (AttributeOffset 14), RMPP active/first/last.
    static HEADER_BYTES: [u8; 60] = [
        0x01, 0x03, 0x02, 0x92, // base 1, SA, class v2, GetTableResp
        0x00, 0x00, 0x00, 0x00, // status, class specific
        0x00, 0x00, 0x00, 0x00, 0x12, 0x34, 0x56, 0x78, // tid
        0x00, 0x11, 0x00, 0x00, // NodeRecord, reserved
        0x00, 0x00, 0x00, 0x00, // attr mod
        0x01, 0x01, 0x07, 0x00, // RMPP v1, DATA, resp time 1 + flags 7, status
        0x00, 0x00, 0x00, 0x01, // segment 1
        0x00, 0x00, 0x00, 0xf4, // payload length 244 = 20 + 2 * 112
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // SM_Key
        0x00, 0x0e, 0x00, 0x00, // AttributeOffset 14, reserved
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, // ComponentMask: LID
        0xaa, 0xbb, 0xcc, 0xdd, // data
    ];

    #[test]
    fn test_deconstruct() {
        let sa = SaMad::new_checked(&HEADER_BYTES[..]).unwrap();
        assert_eq!(sa.mgmt_class(), MgmtClass::SubnAdm);
        assert_eq!(sa.header().class_version(), SA_CLASS_VERSION);
        assert_eq!(sa.method(), Method::GetTableResp);
        assert_eq!(sa.status(), Status::SUCCESS);
        assert_eq!(sa.sa_status(), SaStatus::Success);
        assert_eq!(sa.tid(), 0x1234_5678);
        assert_eq!(sa.attr_id(), attr_id::NODE_RECORD);
        assert_eq!(sa.attr_mod(), 0);
        let rmpp = RmppHeader::parse(&sa.rmpp()).unwrap();
        assert_eq!(
            rmpp,
            RmppHeader {
                flags: RmppFlags(7),
                ..RmppHeader::data(1, true, true, 244)
            }
        );
        assert_eq!(rmpp.resp_time, 0);
        assert_eq!(sa.sm_key(), 0);
        assert_eq!(sa.attr_offset(), 14);
        assert_eq!(sa.reserved(), 0);
        assert_eq!(sa.comp_mask(), node_record::comp::LID);
        assert_eq!(sa.data(), &[0xaa, 0xbb, 0xcc, 0xdd]);
    }

    #[test]
    fn test_construct() {
        let mut buf = vec![0xa5u8; 60];
        let mut sa = SaMad::new_unchecked(&mut buf);
        sa.header_mut().set_base_version(1);
        sa.header_mut().set_mgmt_class(MgmtClass::SubnAdm);
        sa.header_mut().set_class_version(2);
        sa.header_mut().set_method(Method::GetTableResp);
        sa.header_mut().set_status(Status(0));
        sa.header_mut().set_class_specific(0);
        sa.header_mut().set_tid(0x1234_5678);
        sa.header_mut().set_attr_id(0x11);
        sa.header_mut().set_reserved(0);
        sa.header_mut().set_attr_mod(0);
        let mut rmpp = sa.rmpp_mut();
        rmpp.set_version(1);
        rmpp.set_rmpp_type(RmppType::Data);
        rmpp.set_resp_time(0);
        rmpp.set_flags(RmppFlags(7));
        rmpp.set_status(RmppStatus::Normal);
        rmpp.set_segment_number(1);
        rmpp.set_payload_length(244);
        sa.set_sm_key(0);
        sa.set_attr_offset(14);
        sa.set_reserved(0);
        sa.set_comp_mask(1);
        sa.data_mut().copy_from_slice(&[0xaa, 0xbb, 0xcc, 0xdd]);
        assert_eq!(&buf[..], &HEADER_BYTES[..]);
    }

    #[test]
    fn test_impossible_len() {
        for len in 0..SA_HEADER_LEN {
            let buf = vec![1u8; len];
            assert_eq!(
                SaMad::new_checked(&buf[..]).err(),
                Some(Error::Truncated {
                    needed: SA_HEADER_LEN,
                    got: len
                })
            );
            assert!(SaHeader::parse(&SaMad::new_unchecked(&buf[..])).is_err());
        }
        let exact = [1u8; SA_HEADER_LEN];
        let sa = SaMad::new_checked(&exact[..]).unwrap();
        assert!(sa.data().is_empty());
        assert_eq!(sa.records().count(), 0);
    }

    #[test]
    #[should_panic(expected = "need 56 bytes, got 55")]
    fn header_emit_short_buffer_panics() {
        let h = SaHeader::request(Method::Get, 0x11, 0, 0, 1);
        h.emit(&mut SaMad::new_unchecked(&mut [0u8; 55][..]));
    }

    #[test]
    fn test_field_offsets() {
        // Each SA header field set to all ones lights exactly its bytes.
        let mut buf = [0u8; SA_HEADER_LEN];
        SaMad::new_unchecked(&mut buf[..]).set_sm_key(u64::MAX);
        assert!(buf[36..44].iter().all(|&b| b == 0xff));
        assert_eq!(buf.iter().filter(|&&b| b != 0).count(), 8);
        let mut buf = [0u8; SA_HEADER_LEN];
        SaMad::new_unchecked(&mut buf[..]).set_attr_offset(u16::MAX);
        assert_eq!(buf[44..46], [0xff, 0xff]);
        assert_eq!(buf.iter().filter(|&&b| b != 0).count(), 2);
        let mut buf = [0u8; SA_HEADER_LEN];
        SaMad::new_unchecked(&mut buf[..]).set_reserved(u16::MAX);
        assert_eq!(buf[46..48], [0xff, 0xff]);
        assert_eq!(buf.iter().filter(|&&b| b != 0).count(), 2);
        let mut buf = [0u8; SA_HEADER_LEN];
        SaMad::new_unchecked(&mut buf[..]).set_comp_mask(u64::MAX);
        assert!(buf[48..56].iter().all(|&b| b == 0xff));
        assert_eq!(buf.iter().filter(|&&b| b != 0).count(), 8);
        let mut buf = [0u8; SA_HEADER_LEN];
        SaMad::new_unchecked(&mut buf[..])
            .rmpp_mut()
            .set_data2(u32::MAX);
        assert!(buf[32..36].iter().all(|&b| b == 0xff));
        assert_eq!(buf.iter().filter(|&&b| b != 0).count(), 4);
        assert_eq!(SA_DATA_OFFSET, 56);
        assert_eq!(SA_DATA_LEN, 200);
        assert_eq!(RMPP_HEADER_LEN, 12);
    }

    #[test]
    fn test_repr_round_trip() {
        let sa = SaMad::new_unchecked(&HEADER_BYTES[..]);
        let repr = SaHeader::parse(&sa).unwrap();
        assert_eq!(repr.header.method, Method::GetTableResp);
        assert_eq!(repr.attr_offset, 14);
        assert_eq!(repr.buffer_len(), 56);
        let mut out = [0u8; 56];
        repr.emit(&mut SaMad::new_unchecked(&mut out[..]));
        assert_eq!(out[..], HEADER_BYTES[..56]);

        let mut rng = XorShift(0x5a5a_0003);
        for _ in 0..500 {
            let mut input = [0u8; SA_HEADER_LEN];
            rng.fill(&mut input);
            input[0] = 1;
            let repr = SaHeader::parse(&SaMad::new_unchecked(&input[..])).unwrap();
            let mut out = [0u8; SA_HEADER_LEN];
            repr.emit(&mut SaMad::new_unchecked(&mut out[..]));
            assert_eq!(out, input);
        }
        let mut bad = HEADER_BYTES;
        bad[0] = 2;
        assert_eq!(
            SaHeader::parse(&SaMad::new_unchecked(&bad[..])),
            Err(Error::BadBaseVersion(2))
        );
    }

    #[test]
    fn test_request() {
        let req = SaMad::request(Method::GetTable, attr_id::PATH_RECORD, 0, 0x0c, 0x777);
        let mut expected = [0u8; MAD_SIZE];
        expected[..24].copy_from_slice(&[
            0x01, 0x03, 0x02, 0x12, // base, SA, v2, GetTable
            0, 0, 0, 0, // status, class specific
            0, 0, 0, 0, 0, 0, 0x07, 0x77, // tid
            0x00, 0x35, 0, 0, // PathRecord, reserved
            0, 0, 0, 0, // attr mod
        ]);
        expected[55] = 0x0c; // ComponentMask
        assert_eq!(req, expected);
        let mad = Mad::new_checked(&req[..]).unwrap();
        assert_eq!(mad.mgmt_class().qp(), 1);
    }

    #[test]
    fn test_record_request() {
        let link = LinkRecord {
            from_lid: 0x0102,
            from_port: 3,
            to_port: 4,
            to_lid: 0x0506,
        };
        let req = SaMad::get_request(&link, link_record::comp::FROM_LID, 9);
        let sa = SaMad::new_checked(&req[..]).unwrap();
        assert_eq!(sa.method(), Method::Get);
        assert_eq!(sa.attr_id(), attr_id::LINK_RECORD);
        assert_eq!(sa.attr_offset(), 0);
        assert_eq!(sa.comp_mask(), 1);
        assert_eq!(sa.data()[..8], [0x01, 0x02, 3, 4, 0x05, 0x06, 0, 0]);
        assert!(sa.data()[8..].iter().all(|&b| b == 0));
        assert_eq!(LinkRecord::parse(sa.data()), Ok(link));

        let req = SaMad::get_table_request(&NodeRecord::default(), 0, 10);
        let sa = SaMad::new_checked(&req[..]).unwrap();
        assert_eq!(sa.method(), Method::GetTable);
        assert_eq!(sa.attr_id(), 0x11);
        assert!(req[24..].iter().all(|&b| b == 0));
    }

    #[test]
    fn test_records() {
        // Three 8-byte LinkRecords, then 3 stray bytes.
        let mut buf = HEADER_BYTES[..56].to_vec();
        buf[45] = 1;
        for i in 0..3u8 {
            buf.extend_from_slice(&[0, i + 1, 1, 2, 0, 9, 0, 0]);
        }
        buf.extend_from_slice(&[7, 7, 7]);
        let sa = SaMad::new_checked(&buf[..]).unwrap();
        let records = sa.records();
        assert_eq!(records.record_len(), 8);
        assert_eq!(records.len(), 3);
        let lids: Vec<u16> = sa
            .parse_records::<LinkRecord>()
            .map(|r| r.unwrap().from_lid)
            .collect();
        assert_eq!(lids, [1, 2, 3]);
        assert_eq!(sa.parse_records::<LinkRecord>().len(), 3);
        let mut it = sa.records();
        assert_eq!(it.next(), Some(&buf[56..64]));
        assert_eq!(it.len(), 2);
        assert_eq!(it.by_ref().count(), 2);
        assert_eq!(it.next(), None);

        // Records too short for the type: each item is an error.
        let mut short = buf.clone();
        short[45] = 1;
        let errs: Vec<_> = SaMad::new_unchecked(&short[..])
            .parse_records::<NodeRecord>()
            .collect();
        assert_eq!(errs.len(), 3);
        assert!(errs.iter().all(|e| *e
            == Err(Error::Truncated {
                needed: 108,
                got: 8
            })));
    }

    #[test]
    fn test_records_bad_offsets() {
        let mut buf = HEADER_BYTES[..56].to_vec();
        buf.extend_from_slice(&[0u8; 200]);
        // Offset 0: no records (the SA sends 0 with an empty table).
        buf[44] = 0;
        buf[45] = 0;
        assert_eq!(SaMad::new_unchecked(&buf[..]).records().count(), 0);
        assert_eq!(SaMad::new_unchecked(&buf[..]).records().len(), 0);
        // Offset past the buffer: no records, no panic.
        for offset in [26u16, 0x100, u16::MAX] {
            buf[44..46].copy_from_slice(&offset.to_be_bytes());
            let sa = SaMad::new_unchecked(&buf[..]);
            assert_eq!(sa.records().count(), 0, "offset {offset}");
            assert_eq!(sa.parse_records::<PathRecord>().count(), 0);
        }
        // Exactly one record fills the data.
        buf[44..46].copy_from_slice(&25u16.to_be_bytes());
        assert_eq!(SaMad::new_unchecked(&buf[..]).records().count(), 1);
        assert_eq!(Records::new(&[], 1).count(), 0);
    }

    #[test]
    fn test_records_random_never_panic() {
        let mut rng = XorShift(0xfeed);
        for _ in 0..500 {
            let len = (rng.next_u64() % 600) as usize;
            let mut buf = vec![0u8; len];
            rng.fill(&mut buf);
            if let Ok(sa) = SaMad::new_checked(&buf[..]) {
                let n = sa.records().len();
                assert_eq!(sa.records().count(), n);
                let total: usize = sa.records().map(<[u8]>::len).sum();
                assert!(total <= sa.data().len());
                assert_eq!(sa.parse_records::<PathRecord>().count(), n);
            }
        }
    }

    #[test]
    fn sa_status_codes() {
        let table = [
            (status::NO_RESOURCES, SaStatus::NoResources, "No Resources"),
            (
                status::REQ_INVALID,
                SaStatus::RequestInvalid,
                "Request Invalid",
            ),
            (status::NO_RECORDS, SaStatus::NoRecords, "No Records"),
            (
                status::TOO_MANY_RECORDS,
                SaStatus::TooManyRecords,
                "Too Many Records",
            ),
            (status::INVALID_GID, SaStatus::InvalidGid, "Invalid GID"),
            (
                status::INSUFFICIENT_COMPONENTS,
                SaStatus::InsufficientComponents,
                "Insufficient Components",
            ),
            (
                status::REQ_DENIED,
                SaStatus::RequestDenied,
                "Request Denied",
            ),
            (
                status::PRIORITY_SUGGESTED,
                SaStatus::PrioritySuggested,
                "Priority Suggested",
            ),
        ];
        for (word, code, text) in table {
            assert_eq!(SaStatus::from_status(Status(word)), code);
            assert_eq!(code.to_status(), Status(word));
            assert_eq!(code.to_string(), text);
        }
        assert_eq!(SaStatus::from_status(Status(0x0001)), SaStatus::Success);
        assert_eq!(SaStatus::Success.to_string(), "Success");
        assert_eq!(SaStatus::from(9).to_string(), "Undefined Error");
        assert_eq!(SaStatus::default(), SaStatus::Success);
        let mut buf = HEADER_BYTES;
        buf[4] = 0x03;
        assert_eq!(
            SaMad::new_unchecked(&buf[..]).sa_status(),
            SaStatus::NoRecords
        );
        for v in 0..=u8::MAX {
            assert_eq!(u8::from(SaStatus::from(v)), v);
        }
        // Same text as the libibumad-compatible name table, for every word.
        for word in 0..=u16::MAX {
            assert_eq!(
                SaStatus::from_status(Status(word)).to_string(),
                crate::names::sa_mad_status_str(word),
                "status {word:#06x}"
            );
        }
    }

    #[test]
    fn attr_offsets_of_records() {
        // Record sizes and their GetTableResp AttributeOffsets, as opensm
        // pads them (`ib_*_record_t` with `pad[]`).
        assert_eq!((NodeRecord::LEN, NodeRecord::ATTR_OFFSET), (108, 14));
        assert_eq!((PortInfoRecord::LEN, PortInfoRecord::ATTR_OFFSET), (68, 9));
        assert_eq!((PathRecord::LEN, PathRecord::ATTR_OFFSET), (64, 8));
        assert_eq!((LinkRecord::LEN, LinkRecord::ATTR_OFFSET), (6, 1));
        assert_eq!(
            (SwitchInfoRecord::LEN, SwitchInfoRecord::ATTR_OFFSET),
            (24, 3)
        );
        assert_eq!((GuidInfoRecord::LEN, GuidInfoRecord::ATTR_OFFSET), (72, 9));
        assert_eq!((ServiceRecord::LEN, ServiceRecord::ATTR_OFFSET), (176, 22));
        assert_eq!((McMemberRecord::LEN, McMemberRecord::ATTR_OFFSET), (52, 7));
        assert_eq!((InformInfo::LEN, InformInfo::ATTR_OFFSET), (36, 5));
        assert_eq!(
            (InformInfoRecord::LEN, InformInfoRecord::ATTR_OFFSET),
            (60, 8)
        );
        assert_eq!(
            (PKeyTableRecord::LEN, PKeyTableRecord::ATTR_OFFSET),
            (72, 9)
        );
        assert_eq!((LftRecord::LEN, LftRecord::ATTR_OFFSET), (72, 9));
        assert_eq!((SmInfoRecord::LEN, SmInfoRecord::ATTR_OFFSET), (25, 4));
        assert_eq!(<NodeRecord as SaRecord>::ATTR_ID, attr_id::NODE_RECORD);
        assert_eq!(<InformInfo as SaRecord>::ATTR_ID, attr_id::INFORM_INFO);
        assert_eq!(
            <InformInfoRecord as SaRecord>::ATTR_ID,
            attr_id::INFORM_INFO_RECORD
        );
    }

    #[test]
    fn attr_ids() {
        assert_eq!(attr_id::CLASS_PORT_INFO, 0x01);
        assert_eq!(attr_id::NOTICE, 0x02);
        assert_eq!(attr_id::INFORM_INFO, 0x03);
        assert_eq!(attr_id::NODE_RECORD, 0x11);
        assert_eq!(attr_id::PORT_INFO_RECORD, 0x12);
        assert_eq!(attr_id::SL2VL_RECORD, 0x13);
        assert_eq!(attr_id::SWITCH_INFO_RECORD, 0x14);
        assert_eq!(attr_id::LFT_RECORD, 0x15);
        assert_eq!(attr_id::RFT_RECORD, 0x16);
        assert_eq!(attr_id::MFT_RECORD, 0x17);
        assert_eq!(attr_id::SM_INFO_RECORD, 0x18);
        assert_eq!(attr_id::LINK_RECORD, 0x20);
        assert_eq!(attr_id::GUID_INFO_RECORD, 0x30);
        assert_eq!(attr_id::SERVICE_RECORD, 0x31);
        assert_eq!(attr_id::PKEY_TABLE_RECORD, 0x33);
        assert_eq!(attr_id::PATH_RECORD, 0x35);
        assert_eq!(attr_id::VL_ARB_RECORD, 0x36);
        assert_eq!(attr_id::MCMEMBER_RECORD, 0x38);
        assert_eq!(attr_id::TRACE_RECORD, 0x39);
        assert_eq!(attr_id::MULTI_PATH_RECORD, 0x3a);
        assert_eq!(attr_id::SERVICE_ASSOCIATION_RECORD, 0x3b);
        assert_eq!(attr_id::INFORM_INFO_RECORD, 0xf3);
    }
}
