//! InformInfo (attribute 0x03, common to all classes; IBA Vol 1, 13.4.8.3)
//! and InformInfoRecord (SA attribute 0xF3, 15.2.5).
//!
//! A `Set(InformInfo)` to the SA subscribes to (or, with Subscribe 0,
//! unsubscribes from) traps; `GetTable(InformInfoRecord)` lists the
//! subscriptions.
//!
//! ```text
//! InformInfo (36 bytes)             InformInfoRecord (60 bytes, 64 padded)
//!  0..16  GID                        0..16  SubscriberGID
//! 16..18  LIDRangeBegin             16..18  Enum
//! 18..20  LIDRangeEnd               18..24  reserved
//! 20..22  reserved                  24..60  InformInfo
//! 22      IsGeneric
//! 23      Subscribe
//! 24..26  Type
//! 26..28  TrapNumber / DeviceID
//! 28..32  QPN(31:8) reserved(7:5) RespTimeValue(4:0)
//! 32      reserved
//! 33..36  ProducerType / VendorID (24 bits)
//! ```

use crate::bytes::{self, get_u16, get_u24, get_u32, set_u16, set_u24, set_u32};
use crate::types::Gid;
use crate::Result;

mod field {
    use crate::bytes::Field;

    pub(super) const GID: Field = 0..16;
    pub(super) const LID_RANGE_BEGIN: Field = 16..18;
    pub(super) const LID_RANGE_END: Field = 18..20;
    pub(super) const RESERVED_20: Field = 20..22;
    pub(super) const IS_GENERIC: usize = 22;
    pub(super) const SUBSCRIBE: usize = 23;
    pub(super) const TYPE: Field = 24..26;
    pub(super) const TRAP_NUMBER: Field = 26..28;
    /// QPN(31:8), reserved(7:5), RespTimeValue(4:0).
    pub(super) const QPN_RESP_TIME: Field = 28..32;
    pub(super) const RESERVED_32: usize = 32;
    pub(super) const PRODUCER_TYPE: Field = 33..36;
}

mod record_field {
    use crate::bytes::Field;

    pub(super) const SUBSCRIBER_GID: Field = 0..16;
    pub(super) const ENUM: Field = 16..18;
    pub(super) const RESERVED: Field = 18..24;
    pub(super) const INFORM_INFO: Field = 24..60;
}

/// InformInfoRecord ComponentMask bits, in IBA order (opensm
/// `IB_IIR_COMPMASK_*`): the record header, then one bit per InformInfo
/// field.
pub mod comp {
    /// SubscriberGID.
    pub const SUBSCRIBER_GID: u64 = 1 << 0;
    /// Enum.
    pub const ENUM: u64 = 1 << 1;
    /// Reserved (bytes 18–23).
    pub const RESERVED0: u64 = 1 << 2;
    /// InformInfo.GID.
    pub const GID: u64 = 1 << 3;
    /// InformInfo.LIDRangeBegin.
    pub const LID_RANGE_BEGIN: u64 = 1 << 4;
    /// InformInfo.LIDRangeEnd.
    pub const LID_RANGE_END: u64 = 1 << 5;
    /// InformInfo reserved word.
    pub const RESERVED1: u64 = 1 << 6;
    /// InformInfo.IsGeneric.
    pub const IS_GENERIC: u64 = 1 << 7;
    /// InformInfo.Subscribe.
    pub const SUBSCRIBE: u64 = 1 << 8;
    /// InformInfo.Type.
    pub const TYPE: u64 = 1 << 9;
    /// InformInfo.TrapNumber / DeviceID.
    pub const TRAP_NUMBER_DEVICE_ID: u64 = 1 << 10;
    /// InformInfo.QPN.
    pub const QPN: u64 = 1 << 11;
    /// InformInfo reserved bits 7:5 of byte 31.
    pub const RESERVED2: u64 = 1 << 12;
    /// InformInfo.RespTimeValue.
    pub const RESP_TIME_VALUE: u64 = 1 << 13;
    /// InformInfo reserved byte 32.
    pub const RESERVED3: u64 = 1 << 14;
    /// InformInfo.ProducerType / VendorID.
    pub const PRODUCER_TYPE_VENDOR_ID: u64 = 1 << 15;
}

/// InformInfo, parsed: a trap subscription.
///
/// For generic traps (`is_generic` 1) `trap_number_or_device_id` is the
/// trap number and `producer_type_or_vendor_id` the producer node type;
/// for vendor traps they are the device ID and the vendor OUI.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct InformInfo {
    /// GID of the port whose traps are wanted (zero: use the LID range).
    pub gid: Gid,
    /// First LID of the range (0xffff: all LIDs).
    pub lid_range_begin: u16,
    /// Last LID of the range.
    pub lid_range_end: u16,
    /// Reserved (bytes 20–21), kept so `emit` reproduces the input.
    pub reserved_20: u16,
    /// IsGeneric: 1 for generic traps, 0 for vendor traps.
    pub is_generic: u8,
    /// Subscribe: 1 to subscribe, 0 to unsubscribe.
    pub subscribe: u8,
    /// Type (trap type; 0xffff: all).
    pub notice_type: u16,
    /// TrapNumber (generic) or DeviceID (vendor); 0xffff: all.
    pub trap_number_or_device_id: u16,
    /// QPN to send Reports to (24 bits).
    pub qpn: u32,
    /// Reserved (byte 31, bits 7:5), kept so `emit` reproduces the input.
    pub reserved_31: u8,
    /// RespTimeValue (5 bits).
    pub resp_time_value: u8,
    /// Reserved (byte 32), kept so `emit` reproduces the input.
    pub reserved_32: u8,
    /// ProducerType (generic) or VendorID (vendor), 24 bits; 0xffffff: all.
    pub producer_type_or_vendor_id: u32,
}

impl InformInfo {
    /// Size of InformInfo.
    pub const LEN: usize = field::PRODUCER_TYPE.end;

    /// Parses the first [`InformInfo::LEN`] bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<InformInfo> {
        let b = bytes::array::<{ Self::LEN }>(buf)?;
        let qrt = get_u32(&b[field::QPN_RESP_TIME]);
        let low = qrt.to_be_bytes()[3];
        Ok(InformInfo {
            gid: Gid::parse(&b[field::GID])?,
            lid_range_begin: get_u16(&b[field::LID_RANGE_BEGIN]),
            lid_range_end: get_u16(&b[field::LID_RANGE_END]),
            reserved_20: get_u16(&b[field::RESERVED_20]),
            is_generic: b[field::IS_GENERIC],
            subscribe: b[field::SUBSCRIBE],
            notice_type: get_u16(&b[field::TYPE]),
            trap_number_or_device_id: get_u16(&b[field::TRAP_NUMBER]),
            qpn: qrt >> 8,
            reserved_31: bytes::bits(low, 5, 3),
            resp_time_value: bytes::bits(low, 0, 5),
            reserved_32: b[field::RESERVED_32],
            producer_type_or_vendor_id: get_u24(&b[field::PRODUCER_TYPE]),
        })
    }

    /// Bytes [`InformInfo::emit`] writes: [`InformInfo::LEN`].
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes the first [`InformInfo::LEN`] bytes of `buf`; `qpn` and
    /// `producer_type_or_vendor_id` are truncated to 24 bits, the sub-byte
    /// fields masked to their widths.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`InformInfo::LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        let b = bytes::array_mut::<{ Self::LEN }>(buf);
        self.gid.emit(&mut b[field::GID]);
        set_u16(&mut b[field::LID_RANGE_BEGIN], self.lid_range_begin);
        set_u16(&mut b[field::LID_RANGE_END], self.lid_range_end);
        set_u16(&mut b[field::RESERVED_20], self.reserved_20);
        b[field::IS_GENERIC] = self.is_generic;
        b[field::SUBSCRIBE] = self.subscribe;
        set_u16(&mut b[field::TYPE], self.notice_type);
        set_u16(&mut b[field::TRAP_NUMBER], self.trap_number_or_device_id);
        let low = bytes::place(self.reserved_31, 5, 3) | bytes::place(self.resp_time_value, 0, 5);
        set_u32(
            &mut b[field::QPN_RESP_TIME],
            ((self.qpn & 0xff_ffff) << 8) | u32::from(low),
        );
        b[field::RESERVED_32] = self.reserved_32;
        set_u24(
            &mut b[field::PRODUCER_TYPE],
            self.producer_type_or_vendor_id,
        );
    }
}

impl_sa_record!(InformInfo, super::attr_id::INFORM_INFO);

/// InformInfoRecord, parsed: one subscription as the SA lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct InformInfoRecord {
    /// GID of the subscriber.
    pub subscriber_gid: Gid,
    /// Enum: distinguishes several subscriptions of one subscriber.
    pub subscriber_enum: u16,
    /// Reserved (bytes 18–23), kept so `emit` reproduces the input.
    pub reserved: [u8; 6],
    /// The subscription.
    pub inform_info: InformInfo,
}

impl InformInfoRecord {
    /// Size of InformInfoRecord in the IBA table.
    pub const LEN: usize = record_field::INFORM_INFO.end;

    /// Parses the first [`InformInfoRecord::LEN`] bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<InformInfoRecord> {
        let b = bytes::array::<{ Self::LEN }>(buf)?;
        Ok(InformInfoRecord {
            subscriber_gid: Gid::parse(&b[record_field::SUBSCRIBER_GID])?,
            subscriber_enum: get_u16(&b[record_field::ENUM]),
            reserved: *bytes::array::<6>(&b[record_field::RESERVED])?,
            inform_info: InformInfo::parse(&b[record_field::INFORM_INFO])?,
        })
    }

    /// Bytes [`InformInfoRecord::emit`] writes: [`InformInfoRecord::LEN`].
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes the first [`InformInfoRecord::LEN`] bytes of `buf`.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`InformInfoRecord::LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        let b = bytes::array_mut::<{ Self::LEN }>(buf);
        self.subscriber_gid
            .emit(&mut b[record_field::SUBSCRIBER_GID]);
        set_u16(&mut b[record_field::ENUM], self.subscriber_enum);
        b[record_field::RESERVED].copy_from_slice(&self.reserved);
        self.inform_info.emit(&mut b[record_field::INFORM_INFO]);
    }
}

impl_sa_record!(InformInfoRecord, super::attr_id::INFORM_INFO_RECORD);

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::{check_comp_mask, check_offsets, check_round_trip, Case};

    /// Subscribe to generic trap 64 (GID in service) from all LIDs,
    /// Reports to QP 1 (as a client of the SA's event forwarding).
    static INFORM_BYTES: [u8; 36] = [
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // GID: none
        0xff, 0xff, 0x00, 0x00, // LIDRangeBegin all, LIDRangeEnd 0
        0x00, 0x00, 0x01, 0x01, // reserved, IsGeneric, Subscribe
        0x00, 0x04, 0x00, 0x40, // Type 4 (informational), trap 64
        0x00, 0x00, 0x01, 0x13, // QPN 1, RespTimeValue 19
        0x00, 0xff, 0xff, 0xff, // reserved, ProducerType all
    ];

    fn expected() -> InformInfo {
        InformInfo {
            lid_range_begin: 0xffff,
            is_generic: 1,
            subscribe: 1,
            notice_type: 4,
            trap_number_or_device_id: 64,
            qpn: 1,
            resp_time_value: 19,
            producer_type_or_vendor_id: 0xff_ffff,
            ..InformInfo::default()
        }
    }

    #[test]
    fn test_deconstruct() {
        assert_eq!(InformInfo::parse(&INFORM_BYTES), Ok(expected()));
    }

    #[test]
    fn test_construct() {
        let mut out = [0xa5u8; 40];
        expected().emit(&mut out);
        assert_eq!(out[..36], INFORM_BYTES);
        assert_eq!(out[36..], [0xa5; 4]);
        assert_eq!(expected().buffer_len(), 36);
    }

    #[test]
    fn test_record() {
        let mut bytes = [0u8; 60];
        bytes[..16].copy_from_slice(Gid::new(0xfe80 << 48, 0x0002_c903_0000_0001).as_bytes());
        bytes[17] = 3; // Enum 3
        bytes[24..].copy_from_slice(&INFORM_BYTES);
        let r = InformInfoRecord::parse(&bytes).unwrap();
        assert_eq!(r.subscriber_gid.guid(), 0x0002_c903_0000_0001);
        assert_eq!(r.subscriber_enum, 3);
        assert_eq!(r.reserved, [0; 6]);
        assert_eq!(r.inform_info, expected());
        let mut out = [0xa5u8; 64];
        r.emit(&mut out);
        assert_eq!(out[..60], bytes);
        assert_eq!(out[60..], [0xa5; 4]);
        assert_eq!(r.buffer_len(), 60);
    }

    #[test]
    fn test_impossible_len_and_round_trip() {
        check_round_trip(InformInfo::LEN, InformInfo::parse, InformInfo::emit, 3);
        check_round_trip(
            InformInfoRecord::LEN,
            InformInfoRecord::parse,
            InformInfoRecord::emit,
            4,
        );
    }

    #[test]
    fn test_field_offsets() {
        #[rustfmt::skip]
        let cases: &[Case<'_, InformInfo>] = &[
            ("GID", |r| r.gid = Gid([0xff; 16]), 0, &[0xff; 16]),
            ("LIDRangeBegin", |r| r.lid_range_begin = u16::MAX, 16, &[0xff; 2]),
            ("LIDRangeEnd", |r| r.lid_range_end = u16::MAX, 18, &[0xff; 2]),
            ("reserved_20", |r| r.reserved_20 = u16::MAX, 20, &[0xff; 2]),
            ("IsGeneric", |r| r.is_generic = 0xff, 22, &[0xff]),
            ("Subscribe", |r| r.subscribe = 0xff, 23, &[0xff]),
            ("Type", |r| r.notice_type = u16::MAX, 24, &[0xff; 2]),
            ("TrapNumber", |r| r.trap_number_or_device_id = u16::MAX, 26, &[0xff; 2]),
            ("QPN", |r| r.qpn = u32::MAX, 28, &[0xff; 3]),
            ("reserved_31", |r| r.reserved_31 = 0xff, 31, &[0xe0]),
            ("RespTimeValue", |r| r.resp_time_value = 0xff, 31, &[0x1f]),
            ("reserved_32", |r| r.reserved_32 = 0xff, 32, &[0xff]),
            ("ProducerType", |r| r.producer_type_or_vendor_id = u32::MAX, 33, &[0xff; 3]),
        ];
        check_offsets(InformInfo::LEN, InformInfo::parse, InformInfo::emit, cases);

        #[rustfmt::skip]
        let cases: &[Case<'_, InformInfoRecord>] = &[
            ("SubscriberGID", |r| r.subscriber_gid = Gid([0xff; 16]), 0, &[0xff; 16]),
            ("Enum", |r| r.subscriber_enum = u16::MAX, 16, &[0xff; 2]),
            ("reserved", |r| r.reserved = [0xff; 6], 18, &[0xff; 6]),
            ("InformInfo", |r| r.inform_info = InformInfo::parse(&[0xff; 36]).unwrap(), 24, &[0xff; 36]),
        ];
        check_offsets(
            InformInfoRecord::LEN,
            InformInfoRecord::parse,
            InformInfoRecord::emit,
            cases,
        );
    }

    #[test]
    fn test_comp_mask() {
        #[rustfmt::skip]
        let bits = [
            ("SubscriberGID", comp::SUBSCRIBER_GID), ("Enum", comp::ENUM),
            ("Reserved", comp::RESERVED0), ("GID", comp::GID),
            ("LIDRangeBegin", comp::LID_RANGE_BEGIN), ("LIDRangeEnd", comp::LID_RANGE_END),
            ("Reserved", comp::RESERVED1), ("IsGeneric", comp::IS_GENERIC),
            ("Subscribe", comp::SUBSCRIBE), ("Type", comp::TYPE),
            ("TrapNumber/DeviceID", comp::TRAP_NUMBER_DEVICE_ID), ("QPN", comp::QPN),
            ("Reserved", comp::RESERVED2), ("RespTimeValue", comp::RESP_TIME_VALUE),
            ("Reserved", comp::RESERVED3), ("ProducerType/VendorID", comp::PRODUCER_TYPE_VENDOR_ID),
        ];
        check_comp_mask(&bits);
    }
}
