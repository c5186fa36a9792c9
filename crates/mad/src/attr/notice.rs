//! Notice (attribute 0x02, common to all classes, IBA Vol 1, 13.4.8.2): the
//! payload of `Trap()` and `Report()` MADs. 80 bytes in GS classes; 64 in
//! SMPs, which have no room for the IssuerGID.
//!
//! ```text
//!  0      IsGeneric(7) Type(6:0)
//!  1..4   ProducerType (generic) / VendorID (vendor-specific), 24 bits
//!  4..6   TrapNumber (generic) / DeviceID (vendor-specific)
//!  6..8   IssuerLID
//!  8..10  NoticeToggle(15) NoticeCount(14:0)
//! 10..64  DataDetails (54 bytes, layout depends on the trap)
//! 64..80  IssuerGID (not in SMPs)
//! ```
//!
//! Offsets match libibmad's `fields.c` (`IB_NOTICE_*_F`); the DataDetails
//! layouts decoded by the `details_*` methods follow IBA 14.2.5.1 and
//! OpenSM's `ib_mad_notice_attr_t`.

use core::fmt;

use crate::bytes::{self, bits, get_u16, get_u24, get_u32, get_u64, place, set_u16, set_u24};
use crate::types::Gid;
use crate::Result;

mod field {
    use crate::bytes::Field;

    /// IsGeneric(7), Type(6:0).
    pub(super) const GENERIC_TYPE: usize = 0;
    pub(super) const PRODUCER_TYPE_VENDOR_ID: Field = 1..4;
    pub(super) const TRAP_NUMBER_DEVICE_ID: Field = 4..6;
    pub(super) const ISSUER_LID: Field = 6..8;
    /// NoticeToggle(15), NoticeCount(14:0).
    pub(super) const TOGGLE_COUNT: Field = 8..10;
    pub(super) const DATA_DETAILS: Field = 10..64;
    pub(super) const ISSUER_GID: Field = 64..80;
}

/// Offsets within DataDetails (DataDetails byte 0 is Notice byte 10).
mod details {
    use crate::bytes::Field;

    /// Traps 64–67: the GID that came or went (after 6 reserved bytes).
    pub(super) const GID_64_67: Field = 6..22;
    /// Trap 128: LID of the switch whose link state changed.
    pub(super) const LID_128: Field = 0..2;
    /// Traps 129–131, 144, 145, 256–259: the LID the trap is about
    /// (after 2 reserved bytes).
    pub(super) const LID: Field = 2..4;
    /// Traps 129–131: the port number.
    pub(super) const PORT_129_131: usize = 4;
    /// Trap 144: reserved(7:1), OtherLocalChanges(0).
    pub(super) const LOCAL_CHANGES_144: usize = 5;
    /// Trap 144: the new CapabilityMask.
    pub(super) const CAP_MASK_144: Field = 6..10;
    /// Trap 144: reserved(15:6), change flags(5:0).
    pub(super) const CHANGE_FLAGS_144: Field = 10..12;
    /// Trap 144: the new CapabilityMask2.
    pub(super) const CAP_MASK2_144: Field = 12..14;
    /// Trap 145: the new SystemImageGUID.
    pub(super) const SYS_GUID_145: Field = 6..14;
}

enum_with_unknown! {
    /// Notice.Type: the severity class of the notice.
    #[derive(Default)]
    pub enum NoticeType(u8) {
        /// Fatal.
        #[default]
        Fatal = 0,
        /// Urgent.
        Urgent = 1,
        /// Security.
        Security = 2,
        /// Subnet management.
        SubnetManagement = 3,
        /// Informational.
        Informational = 4,
        /// Empty: the notice queue holds nothing (Get(Notice) replies).
        Empty = 0x7f,
    }
}

impl fmt::Display for NoticeType {
    /// `Fatal`, `Urgent`, `Security`, `Subnet Management`,
    /// `Informational`, `Empty`, or `?(n)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NoticeType::Fatal => f.write_str("Fatal"),
            NoticeType::Urgent => f.write_str("Urgent"),
            NoticeType::Security => f.write_str("Security"),
            NoticeType::SubnetManagement => f.write_str("Subnet Management"),
            NoticeType::Informational => f.write_str("Informational"),
            NoticeType::Empty => f.write_str("Empty"),
            NoticeType::Unknown(n) => write!(f, "?({n})"),
        }
    }
}

enum_with_unknown! {
    /// Notice.ProducerType of a generic notice (24 bits on the wire).
    pub enum ProducerType(u32) {
        /// Channel adapter.
        ChannelAdapter = 1,
        /// Switch.
        Switch = 2,
        /// Router.
        Router = 3,
        /// Class manager (e.g. the SM/SA).
        ClassManager = 4,
    }
}

impl fmt::Display for ProducerType {
    /// As OpenSM's `ib_get_producer_type_str()`: `Channel Adapter`,
    /// `Switch`, `Router`, `Class Manager`, or `UNKNOWN`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ProducerType::ChannelAdapter => "Channel Adapter",
            ProducerType::Switch => "Switch",
            ProducerType::Router => "Router",
            ProducerType::ClassManager => "Class Manager",
            ProducerType::Unknown(_) => "UNKNOWN",
        })
    }
}

enum_with_unknown! {
    /// Notice.TrapNumber of a generic notice (IBA 14.2.5.1 and 15.2.5.1).
    pub enum TrapNumber(u16) {
        /// 64: a GID is now in service.
        GidInService = 64,
        /// 65: a GID is out of service.
        GidOutOfService = 65,
        /// 66: a multicast group was created.
        McastGroupCreated = 66,
        /// 67: a multicast group was deleted.
        McastGroupDeleted = 67,
        /// 68: a path is no longer valid.
        UnPath = 68,
        /// 69: a path was recomputed.
        RePath = 69,
        /// 128: a switch port changed link state.
        LinkStateChange = 128,
        /// 129: the local link integrity threshold was reached.
        LocalLinkIntegrity = 129,
        /// 130: the excessive buffer overrun threshold was reached.
        ExcessiveBufferOverrun = 130,
        /// 131: the flow control update watchdog timer expired.
        FlowControlUpdateWatchdog = 131,
        /// 144: CapabilityMask, NodeDescription, link width/speed enabled
        /// or SM priority changed.
        LocalChanges = 144,
        /// 145: the system image GUID changed.
        SystemImageGuidChange = 145,
        /// 256: bad M_Key.
        BadMKey = 256,
        /// 257: bad P_Key.
        BadPKey = 257,
        /// 258: bad Q_Key.
        BadQKey = 258,
        /// 259: bad P_Key at a switch external port.
        BadPKeySwitchExternalPort = 259,
    }
}

impl fmt::Display for TrapNumber {
    /// The trap's name as OpenSM's `ib_get_trap_str()` logs it (e.g.
    /// `Link state change`), or `Unknown`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TrapNumber::GidInService => "GID in service",
            TrapNumber::GidOutOfService => "GID out of service",
            TrapNumber::McastGroupCreated => "New mcast group created",
            TrapNumber::McastGroupDeleted => "Mcast group deleted",
            TrapNumber::UnPath => "UnPath, Path no longer valid",
            TrapNumber::RePath => "RePath, Path recomputed",
            TrapNumber::LinkStateChange => "Link state change",
            TrapNumber::LocalLinkIntegrity => "Local Link integrity threshold reached",
            TrapNumber::ExcessiveBufferOverrun => "Excessive Buffer Overrun Threshold reached",
            TrapNumber::FlowControlUpdateWatchdog => "Flow Control Update watchdog timer expired",
            TrapNumber::LocalChanges => {
                "CapabilityMask, NodeDescription, Link [Width|Speed] Enabled, SM priority changed"
            }
            TrapNumber::SystemImageGuidChange => "System Image GUID changed",
            TrapNumber::BadMKey => "Bad M_Key",
            TrapNumber::BadPKey => "Bad P_Key",
            TrapNumber::BadQKey => "Bad Q_Key",
            TrapNumber::BadPKeySwitchExternalPort => "Bad P_Key (switch external port)",
            TrapNumber::Unknown(_) => "Unknown",
        })
    }
}

/// The details of trap 144 (local changes), as laid out in DataDetails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct LocalChanges {
    /// LID of the port whose attributes changed.
    pub lid: u16,
    /// OtherLocalChanges: something other than the CapabilityMask changed.
    pub other_local_changes: bool,
    /// The new PortInfo.CapabilityMask.
    pub capability_mask: u32,
    /// Change flags (6 bits): link speed enabled, link width enabled,
    /// NodeDescription and SM priority changes.
    pub change_flags: u8,
    /// The new PortInfo.CapabilityMask2.
    pub capability_mask2: u16,
}

/// Notice, parsed.
///
/// `issuer_gid` is `None` for a Notice carried in an SMP (parsed with
/// [`Notice::parse_smp`]), `Some` for the 80-byte GS form
/// ([`Notice::parse`]); `emit` writes 64 or 80 bytes accordingly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Notice {
    /// IsGeneric (byte 0, bit 7): generic (trap number) or vendor-specific
    /// (device ID) notice.
    pub is_generic: bool,
    /// Type (byte 0, bits 6:0).
    pub notice_type: NoticeType,
    /// ProducerType (generic) or VendorID (vendor), bytes 1–3, 24 bits;
    /// see [`Notice::producer_type`] and [`Notice::vendor_id`].
    pub producer_type_vendor_id: u32,
    /// TrapNumber (generic) or DeviceID (vendor), bytes 4–5; see
    /// [`Notice::trap_number`] and [`Notice::device_id`].
    pub trap_number_device_id: u16,
    /// IssuerLID (bytes 6–7): LID of the port that issued the notice.
    pub issuer_lid: u16,
    /// NoticeToggle (byte 8, bit 7): alternates between successive notices.
    pub notice_toggle: bool,
    /// NoticeCount (bytes 8–9, 15 bits): notices not yet read.
    pub notice_count: u16,
    /// DataDetails (bytes 10–63); decode with the `details_*` methods.
    pub data_details: [u8; 54],
    /// IssuerGID (bytes 64–79), absent in SMPs.
    pub issuer_gid: Option<Gid>,
}

impl Default for Notice {
    /// All fields zero, SMP form (no IssuerGID).
    fn default() -> Self {
        Notice {
            is_generic: false,
            notice_type: NoticeType::default(),
            producer_type_vendor_id: 0,
            trap_number_device_id: 0,
            issuer_lid: 0,
            notice_toggle: false,
            notice_count: 0,
            data_details: [0; 54],
            issuer_gid: None,
        }
    }
}

impl Notice {
    /// Size of a Notice in GS classes (SA `Report`, InformInfo), with the
    /// IssuerGID.
    pub const LEN: usize = field::ISSUER_GID.end;

    /// Size of a Notice in an SMP `Trap` (no IssuerGID).
    pub const SMP_LEN: usize = field::DATA_DETAILS.end;

    /// A generic notice of `notice_type` from `producer` about `trap`,
    /// issued by `issuer_lid`, with zero toggle, count and details; SMP form
    /// (set `issuer_gid` for GS classes).
    pub fn generic(
        notice_type: NoticeType,
        producer: ProducerType,
        trap: TrapNumber,
        issuer_lid: u16,
    ) -> Notice {
        Notice {
            is_generic: true,
            notice_type,
            producer_type_vendor_id: producer.into(),
            trap_number_device_id: trap.into(),
            issuer_lid,
            ..Notice::default()
        }
    }

    /// Parses the 80-byte GS form from the first [`Notice::LEN`] bytes of
    /// `buf`; `issuer_gid` is `Some`.
    pub fn parse(buf: &[u8]) -> Result<Notice> {
        let b = bytes::array::<{ Self::LEN }>(buf)?;
        let mut notice = Self::parse_smp(b)?;
        notice.issuer_gid = Some(Gid::parse(&b[field::ISSUER_GID])?);
        Ok(notice)
    }

    /// Parses the 64-byte SMP form from the first [`Notice::SMP_LEN`] bytes
    /// of `buf`; `issuer_gid` is `None`.
    pub fn parse_smp(buf: &[u8]) -> Result<Notice> {
        let b = bytes::array::<{ Self::SMP_LEN }>(buf)?;
        let gt = b[field::GENERIC_TYPE];
        let tc = get_u16(&b[field::TOGGLE_COUNT]);
        let mut data_details = [0u8; 54];
        data_details.copy_from_slice(&b[field::DATA_DETAILS]);
        Ok(Notice {
            is_generic: bits(gt, 7, 1) != 0,
            notice_type: NoticeType::from(bits(gt, 0, 7)),
            producer_type_vendor_id: get_u24(&b[field::PRODUCER_TYPE_VENDOR_ID]),
            trap_number_device_id: get_u16(&b[field::TRAP_NUMBER_DEVICE_ID]),
            issuer_lid: get_u16(&b[field::ISSUER_LID]),
            notice_toggle: tc & 0x8000 != 0,
            notice_count: tc & 0x7fff,
            data_details,
            issuer_gid: None,
        })
    }

    /// Bytes [`Notice::emit`] writes: [`Notice::LEN`] with an IssuerGID,
    /// [`Notice::SMP_LEN`] without.
    pub const fn buffer_len(&self) -> usize {
        if self.issuer_gid.is_some() {
            Self::LEN
        } else {
            Self::SMP_LEN
        }
    }

    /// Writes [`Notice::buffer_len`] bytes into the start of `buf`.
    /// `notice_type` is masked to 7 bits, `producer_type_vendor_id` to 24,
    /// `notice_count` to 15.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`Notice::buffer_len`].
    pub fn emit(&self, buf: &mut [u8]) {
        if let Some(gid) = self.issuer_gid {
            let b = bytes::array_mut::<{ Self::LEN }>(buf);
            gid.emit(&mut b[field::ISSUER_GID]);
        }
        let b = bytes::array_mut::<{ Self::SMP_LEN }>(buf);
        b[field::GENERIC_TYPE] =
            place(u8::from(self.is_generic), 7, 1) | place(self.notice_type.into(), 0, 7);
        set_u24(
            &mut b[field::PRODUCER_TYPE_VENDOR_ID],
            self.producer_type_vendor_id,
        );
        set_u16(
            &mut b[field::TRAP_NUMBER_DEVICE_ID],
            self.trap_number_device_id,
        );
        set_u16(&mut b[field::ISSUER_LID], self.issuer_lid);
        let toggle = if self.notice_toggle { 0x8000 } else { 0 };
        set_u16(
            &mut b[field::TOGGLE_COUNT],
            toggle | (self.notice_count & 0x7fff),
        );
        b[field::DATA_DETAILS].copy_from_slice(&self.data_details);
    }

    /// The producer type of a generic notice; `None` for vendor notices.
    pub fn producer_type(&self) -> Option<ProducerType> {
        self.is_generic
            .then(|| ProducerType::from(self.producer_type_vendor_id))
    }

    /// The vendor ID (IEEE OUI) of a vendor-specific notice; `None` for
    /// generic notices.
    pub fn vendor_id(&self) -> Option<u32> {
        (!self.is_generic).then_some(self.producer_type_vendor_id)
    }

    /// The trap number of a generic notice; `None` for vendor notices.
    pub fn trap_number(&self) -> Option<TrapNumber> {
        self.is_generic
            .then(|| TrapNumber::from(self.trap_number_device_id))
    }

    /// The device ID of a vendor-specific notice; `None` for generic
    /// notices.
    pub fn device_id(&self) -> Option<u16> {
        (!self.is_generic).then_some(self.trap_number_device_id)
    }

    /// Traps 64–67: the port GID (64, 65) or multicast GID (66, 67) the
    /// notice is about.
    pub fn details_gid(&self) -> Option<Gid> {
        use TrapNumber::*;
        match self.trap_number()? {
            GidInService | GidOutOfService | McastGroupCreated | McastGroupDeleted => {
                Gid::parse(&self.data_details[details::GID_64_67]).ok()
            }
            _ => None,
        }
    }

    /// The LID the trap is about: trap 128's switch LID, or the LIDADDR of
    /// traps 129–131, 144, 145 and 256–259 (the first LID for 257–259).
    pub fn details_lid(&self) -> Option<u16> {
        use TrapNumber::*;
        let range = match self.trap_number()? {
            LinkStateChange => details::LID_128,
            LocalLinkIntegrity
            | ExcessiveBufferOverrun
            | FlowControlUpdateWatchdog
            | LocalChanges
            | SystemImageGuidChange
            | BadMKey
            | BadPKey
            | BadQKey
            | BadPKeySwitchExternalPort => details::LID,
            _ => return None,
        };
        Some(get_u16(&self.data_details[range]))
    }

    /// Traps 129–131: the port number the error counter belongs to.
    pub fn details_port(&self) -> Option<u8> {
        use TrapNumber::*;
        match self.trap_number()? {
            LocalLinkIntegrity | ExcessiveBufferOverrun | FlowControlUpdateWatchdog => {
                Some(self.data_details[details::PORT_129_131])
            }
            _ => None,
        }
    }

    /// Trap 144: what changed.
    pub fn details_local_changes(&self) -> Option<LocalChanges> {
        if self.trap_number()? != TrapNumber::LocalChanges {
            return None;
        }
        let d = &self.data_details;
        Some(LocalChanges {
            lid: get_u16(&d[details::LID]),
            other_local_changes: bits(d[details::LOCAL_CHANGES_144], 0, 1) != 0,
            capability_mask: get_u32(&d[details::CAP_MASK_144]),
            change_flags: bits(d[details::CHANGE_FLAGS_144][1], 0, 6),
            capability_mask2: get_u16(&d[details::CAP_MASK2_144]),
        })
    }

    /// Trap 145: the new system image GUID.
    pub fn details_system_image_guid(&self) -> Option<u64> {
        (self.trap_number()? == TrapNumber::SystemImageGuidChange)
            .then(|| get_u64(&self.data_details[details::SYS_GUID_145]))
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::{check_layout, check_round_trip, Case};

    /// Trap 128 from switch LID 5 as an SMP carries it: generic, urgent,
    /// producer switch, issuer LID 5, toggle 1, count 0, details LID 5.
    static TRAP128_BYTES: [u8; 64] = {
        let mut b = [0u8; 64];
        b[0] = 0x81; // generic, type 1 (urgent)
        b[3] = 0x02; // producer: switch
        b[5] = 0x80; // trap 128
        b[7] = 0x05; // issuer LID 5
        b[8] = 0x80; // toggle 1, count 0
        b[11] = 0x05; // details: LIDADDR 5
        b
    };

    /// Trap 64 (GID in service) as the SA reports it: 80 bytes, producer
    /// class manager, GID fe80::2:c903:a:b in the details, issuer GID
    /// fe80::1.
    fn trap64_bytes() -> [u8; 80] {
        let mut b = [0u8; 80];
        b[0] = 0x84; // generic, informational
        b[3] = 0x04; // class manager
        b[5] = 0x40; // trap 64
        b[7] = 0x01; // issuer LID 1
        b[8] = 0x00;
        b[9] = 0x03; // count 3
        let gid = [
            0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xc9, 0x03, 0x00, 0x0a, 0x00, 0x0b,
        ];
        b[16..32].copy_from_slice(&gid);
        b[64] = 0xfe;
        b[65] = 0x80;
        b[79] = 0x01;
        b
    }

    #[test]
    fn test_deconstruct_smp() {
        let n = Notice::parse_smp(&TRAP128_BYTES).unwrap();
        assert!(n.is_generic);
        assert_eq!(n.notice_type, NoticeType::Urgent);
        assert_eq!(n.producer_type(), Some(ProducerType::Switch));
        assert_eq!(n.vendor_id(), None);
        assert_eq!(n.trap_number(), Some(TrapNumber::LinkStateChange));
        assert_eq!(n.device_id(), None);
        assert_eq!(n.issuer_lid, 5);
        assert!(n.notice_toggle);
        assert_eq!(n.notice_count, 0);
        assert_eq!(n.details_lid(), Some(5));
        assert_eq!(n.details_port(), None);
        assert_eq!(n.details_gid(), None);
        assert_eq!(n.issuer_gid, None);
        assert_eq!(n.buffer_len(), 64);
        assert_eq!(n.trap_number().unwrap().to_string(), "Link state change");
    }

    #[test]
    fn test_deconstruct_gs() {
        let bytes = trap64_bytes();
        let n = Notice::parse(&bytes).unwrap();
        assert_eq!(n.notice_type, NoticeType::Informational);
        assert_eq!(n.producer_type(), Some(ProducerType::ClassManager));
        assert_eq!(n.trap_number(), Some(TrapNumber::GidInService));
        assert_eq!(n.issuer_lid, 1);
        assert!(!n.notice_toggle);
        assert_eq!(n.notice_count, 3);
        assert_eq!(n.details_gid().unwrap().as_bytes()[..], bytes[16..32]);
        assert_eq!(n.details_gid().unwrap().to_string(), "fe80::2:c903:a:b");
        assert_eq!(n.details_lid(), None);
        assert_eq!(n.issuer_gid, Some(Gid::new(0xfe80_0000_0000_0000, 1)));
        assert_eq!(n.buffer_len(), 80);
    }

    #[test]
    fn test_construct() {
        let mut n = Notice::generic(
            NoticeType::Urgent,
            ProducerType::Switch,
            TrapNumber::LinkStateChange,
            5,
        );
        n.notice_toggle = true;
        n.data_details[1] = 5;
        let mut out = [0xa5u8; 70];
        n.emit(&mut out);
        assert_eq!(out[..64], TRAP128_BYTES);
        assert!(out[64..].iter().all(|&b| b == 0xa5));

        let bytes = trap64_bytes();
        let mut n = Notice::generic(
            NoticeType::Informational,
            ProducerType::ClassManager,
            TrapNumber::GidInService,
            1,
        );
        n.notice_count = 3;
        n.data_details[6..22].copy_from_slice(&bytes[16..32]);
        n.issuer_gid = Some(Gid::parse(&bytes[64..80]).unwrap());
        let mut out = [0xa5u8; 80];
        n.emit(&mut out);
        assert_eq!(out, bytes);
    }

    #[test]
    fn test_smp_form_ignores_issuer_gid() {
        // parse_smp ignores bytes 64.. even when present.
        assert_eq!(Notice::parse_smp(&trap64_bytes()).unwrap().issuer_gid, None);
    }

    #[test]
    #[should_panic(expected = "need 80 bytes, got 64")]
    fn emit_gs_form_into_smp_buffer_panics() {
        let n = Notice {
            issuer_gid: Some(Gid::default()),
            ..Notice::default()
        };
        n.emit(&mut [0u8; 64]);
    }

    #[test]
    #[should_panic(expected = "need 64 bytes, got 63")]
    fn emit_short_buffer_panics() {
        Notice::default().emit(&mut [0u8; 63]);
    }

    #[test]
    fn test_impossible_len_and_round_trip() {
        check_round_trip(
            Notice::LEN,
            Notice::parse,
            Notice::emit,
            0x7011_ce00_0000_0002,
        );
        check_round_trip(
            Notice::SMP_LEN,
            Notice::parse_smp,
            Notice::emit,
            0x7011_ce00_0000_0003,
        );
    }

    #[test]
    fn test_field_offsets() {
        #[rustfmt::skip]
        let cases: &[Case<'_, Notice>] = &[
            ("IsGeneric", |n| n.is_generic = true, 0, &[0x80]),
            ("Type", |n| n.notice_type = NoticeType::Unknown(0xff), 0, &[0x7f]),
            ("ProducerType/VendorID", |n| n.producer_type_vendor_id = u32::MAX, 1, &[0xff; 3]),
            ("TrapNumber/DeviceID", |n| n.trap_number_device_id = u16::MAX, 4, &[0xff; 2]),
            ("IssuerLID", |n| n.issuer_lid = u16::MAX, 6, &[0xff; 2]),
            ("NoticeToggle", |n| n.notice_toggle = true, 8, &[0x80]),
            ("NoticeCount", |n| n.notice_count = u16::MAX, 8, &[0x7f, 0xff]),
            ("DataDetails", |n| n.data_details = [0xff; 54], 10, &[0xff; 54]),
            ("IssuerGID", |n| n.issuer_gid = Some(Gid([0xff; 16])), 64, &[0xff; 16]),
        ];
        // The GS form (with an IssuerGID) covers all 80 bytes.
        let gs = Notice {
            issuer_gid: Some(Gid::default()),
            ..Notice::default()
        };
        check_layout(&gs, Notice::LEN, Notice::parse, Notice::emit, cases, None);
    }

    #[test]
    fn details_decoders() {
        let mut n = Notice::generic(
            NoticeType::Urgent,
            ProducerType::ChannelAdapter,
            TrapNumber::LocalLinkIntegrity,
            9,
        );
        n.data_details[2..5].copy_from_slice(&[0x00, 0x09, 0x03]);
        assert_eq!(n.details_lid(), Some(9));
        assert_eq!(n.details_port(), Some(3));
        assert_eq!(n.details_local_changes(), None);

        let mut n = Notice::generic(
            NoticeType::Informational,
            ProducerType::ChannelAdapter,
            TrapNumber::LocalChanges,
            7,
        );
        n.data_details[..14].copy_from_slice(&[
            0, 0, 0x00, 0x07, 0x00, 0x01, 0x02, 0x51, 0x08, 0x6a, 0x00, 0x3f, 0x00, 0x10,
        ]);
        assert_eq!(
            n.details_local_changes(),
            Some(LocalChanges {
                lid: 7,
                other_local_changes: true,
                capability_mask: 0x0251_086a,
                change_flags: 0x3f,
                capability_mask2: 0x0010,
            })
        );
        assert_eq!(n.details_lid(), Some(7));
        assert_eq!(n.details_port(), None);

        let mut n = Notice::generic(
            NoticeType::Informational,
            ProducerType::Switch,
            TrapNumber::SystemImageGuidChange,
            2,
        );
        n.data_details[6..14].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(n.details_system_image_guid(), Some(0x0102_0304_0506_0708));
        assert_eq!(n.details_gid(), None);

        // Vendor notices have no trap number and no decoded details.
        let v = Notice {
            is_generic: false,
            producer_type_vendor_id: 0x0002c9,
            trap_number_device_id: 0x1234,
            ..Notice::default()
        };
        assert_eq!(v.vendor_id(), Some(0x0002c9));
        assert_eq!(v.device_id(), Some(0x1234));
        assert_eq!(v.trap_number(), None);
        assert_eq!(v.producer_type(), None);
        assert_eq!(v.details_lid(), None);
        assert_eq!(v.details_system_image_guid(), None);
    }

    #[test]
    fn enum_display() {
        assert_eq!(TrapNumber::GidInService.to_string(), "GID in service");
        assert_eq!(
            TrapNumber::McastGroupCreated.to_string(),
            "New mcast group created"
        );
        assert_eq!(
            TrapNumber::McastGroupDeleted.to_string(),
            "Mcast group deleted"
        );
        assert_eq!(
            TrapNumber::LocalLinkIntegrity.to_string(),
            "Local Link integrity threshold reached"
        );
        assert_eq!(
            TrapNumber::ExcessiveBufferOverrun.to_string(),
            "Excessive Buffer Overrun Threshold reached"
        );
        assert_eq!(
            TrapNumber::FlowControlUpdateWatchdog.to_string(),
            "Flow Control Update watchdog timer expired"
        );
        assert!(TrapNumber::LocalChanges
            .to_string()
            .starts_with("CapabilityMask"));
        assert_eq!(
            TrapNumber::SystemImageGuidChange.to_string(),
            "System Image GUID changed"
        );
        assert_eq!(TrapNumber::BadMKey.to_string(), "Bad M_Key");
        assert_eq!(TrapNumber::BadPKey.to_string(), "Bad P_Key");
        assert_eq!(TrapNumber::BadQKey.to_string(), "Bad Q_Key");
        assert_eq!(
            TrapNumber::BadPKeySwitchExternalPort.to_string(),
            "Bad P_Key (switch external port)"
        );
        assert_eq!(TrapNumber::from(1000).to_string(), "Unknown");
        assert_eq!(u16::from(TrapNumber::BadPKeySwitchExternalPort), 259);
        assert_eq!(ProducerType::ChannelAdapter.to_string(), "Channel Adapter");
        assert_eq!(ProducerType::ClassManager.to_string(), "Class Manager");
        assert_eq!(ProducerType::from(9).to_string(), "UNKNOWN");
        assert_eq!(
            NoticeType::SubnetManagement.to_string(),
            "Subnet Management"
        );
        assert_eq!(NoticeType::from(0x7f), NoticeType::Empty);
        assert_eq!(NoticeType::from(9).to_string(), "?(9)");
        for v in 0..=u8::MAX {
            assert_eq!(u8::from(NoticeType::from(v)), v);
        }
        for v in 0..=600u16 {
            assert_eq!(u16::from(TrapNumber::from(v)), v);
        }
    }
}
