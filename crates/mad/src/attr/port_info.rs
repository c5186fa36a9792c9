//! PortInfo (SMP attribute 0x15, IBA Vol 1, 14.2.5.6): 64 bytes, plus the
//! port state, link width and link speed codes it carries.
//!
//! Layout (byte offsets within the SMP data area; bit 7 is the most
//! significant bit of a byte):
//!
//! ```text
//!  0..8   M_Key                     44..46 M_KeyViolations
//!  8..16  GidPrefix                 46..48 P_KeyViolations
//! 16..18  LID                       48..50 Q_KeyViolations
//! 18..20  MasterSMLID               50     GUIDCap
//! 20..24  CapabilityMask            51     ClientReregister(7) MulticastPKeyTrapSuppressionEnabled(6:5)
//! 24..26  DiagCode                         SubnetTimeOut(4:0)
//! 26..28  M_KeyLeasePeriod          52     reserved(7:5) RespTimeValue(4:0)
//! 28      LocalPortNum              53     LocalPhyErrors(7:4) OverrunErrors(3:0)
//! 29      LinkWidthEnabled          54..56 MaxCreditHint
//! 30      LinkWidthSupported        56     reserved(7) LinkSpeedExtActive2(6:5)
//! 31      LinkWidthActive                  LinkSpeedExtSupported2(4:3) LinkSpeedExtEnabled2(2:0)
//! 32      LinkSpeedSupported(7:4) PortState(3:0)
//! 33      PortPhysicalState(7:4) LinkDownDefaultState(3:0)
//! 34      M_KeyProtectBits(7:6) reserved(5:3) LMC(2:0)
//! 35      LinkSpeedActive(7:4) LinkSpeedEnabled(3:0)
//! 36      NeighborMTU(7:4) MasterSMSL(3:0)
//! 37      VLCap(7:4) InitType(3:0)  57..60 LinkRoundTripLatency (24 bits)
//! 38      VLHighLimit               60..62 CapabilityMask2
//! 39      VLArbitrationHighCap      62     LinkSpeedExtActive(7:4) LinkSpeedExtSupported(3:0)
//! 40      VLArbitrationLowCap       63     reserved(7:5) LinkSpeedExtEnabled(4:0)
//! 41      InitTypeReply(7:4) MTUCap(3:0)
//! 42      VLStallCount(7:5) HOQLife(4:0)
//! 43      OperationalVLs(7:4) PartitionEnforcementInbound(3)
//!         PartitionEnforcementOutbound(2) FilterRawInbound(1) FilterRawOutbound(0)
//! ```
//!
//! The XDR fields in byte 56 (LinkSpeedExt*2) were reserved before IBA 1.7;
//! offsets match libibmad's `fields.c`.

use core::fmt;

use crate::bytes::{self, bits, get_u16, get_u24, get_u32, get_u64, place};
use crate::bytes::{set_u16, set_u24, set_u32, set_u64};
use crate::types::Mtu;
use crate::Result;

mod field {
    use crate::bytes::Field;

    pub(super) const M_KEY: Field = 0..8;
    pub(super) const GID_PREFIX: Field = 8..16;
    pub(super) const LID: Field = 16..18;
    pub(super) const MASTER_SM_LID: Field = 18..20;
    pub(super) const CAPABILITY_MASK: Field = 20..24;
    pub(super) const DIAG_CODE: Field = 24..26;
    pub(super) const M_KEY_LEASE_PERIOD: Field = 26..28;
    pub(super) const LOCAL_PORT_NUM: usize = 28;
    pub(super) const LINK_WIDTH_ENABLED: usize = 29;
    pub(super) const LINK_WIDTH_SUPPORTED: usize = 30;
    pub(super) const LINK_WIDTH_ACTIVE: usize = 31;
    /// LinkSpeedSupported(7:4), PortState(3:0).
    pub(super) const SPEED_SUP_STATE: usize = 32;
    /// PortPhysicalState(7:4), LinkDownDefaultState(3:0).
    pub(super) const PHYS_DOWN_DEFAULT: usize = 33;
    /// M_KeyProtectBits(7:6), reserved(5:3), LMC(2:0).
    pub(super) const PROTECT_LMC: usize = 34;
    /// LinkSpeedActive(7:4), LinkSpeedEnabled(3:0).
    pub(super) const SPEED_ACT_EN: usize = 35;
    /// NeighborMTU(7:4), MasterSMSL(3:0).
    pub(super) const MTU_SMSL: usize = 36;
    /// VLCap(7:4), InitType(3:0).
    pub(super) const VLCAP_INIT: usize = 37;
    pub(super) const VL_HIGH_LIMIT: usize = 38;
    pub(super) const VL_ARB_HIGH_CAP: usize = 39;
    pub(super) const VL_ARB_LOW_CAP: usize = 40;
    /// InitTypeReply(7:4), MTUCap(3:0).
    pub(super) const INITREPLY_MTUCAP: usize = 41;
    /// VLStallCount(7:5), HOQLife(4:0).
    pub(super) const STALL_HOQ: usize = 42;
    /// OperationalVLs(7:4), PartEnfIn(3), PartEnfOut(2), FilterRawIn(1),
    /// FilterRawOut(0).
    pub(super) const OPVLS_FLAGS: usize = 43;
    pub(super) const M_KEY_VIOLATIONS: Field = 44..46;
    pub(super) const P_KEY_VIOLATIONS: Field = 46..48;
    pub(super) const Q_KEY_VIOLATIONS: Field = 48..50;
    pub(super) const GUID_CAP: usize = 50;
    /// ClientReregister(7), MulticastPKeyTrapSuppressionEnabled(6:5),
    /// SubnetTimeOut(4:0).
    pub(super) const REREG_SUBNET_TO: usize = 51;
    /// reserved(7:5), RespTimeValue(4:0).
    pub(super) const RESP_TIME: usize = 52;
    /// LocalPhyErrors(7:4), OverrunErrors(3:0).
    pub(super) const PHY_OVERRUN: usize = 53;
    pub(super) const MAX_CREDIT_HINT: Field = 54..56;
    /// reserved(7), LinkSpeedExtActive2(6:5), LinkSpeedExtSupported2(4:3),
    /// LinkSpeedExtEnabled2(2:0).
    pub(super) const SPEED_EXT2: usize = 56;
    pub(super) const LINK_ROUND_TRIP_LATENCY: Field = 57..60;
    pub(super) const CAPABILITY_MASK2: Field = 60..62;
    /// LinkSpeedExtActive(7:4), LinkSpeedExtSupported(3:0).
    pub(super) const SPEED_EXT_ACT_SUP: usize = 62;
    /// reserved(7:5), LinkSpeedExtEnabled(4:0).
    pub(super) const SPEED_EXT_EN: usize = 63;
}

/// PortInfo.CapabilityMask bits (IBA 14.2.5.6; names as libibmad prints
/// them).
pub mod cap {
    /// The port hosts a subnet manager.
    pub const IS_SM: u32 = 1 << 1;
    /// Notices are supported.
    pub const IS_NOTICE_SUPPORTED: u32 = 1 << 2;
    /// Traps are supported.
    pub const IS_TRAP_SUPPORTED: u32 = 1 << 3;
    /// Optional IPD is supported.
    pub const IS_OPTIONAL_IPD_SUPPORTED: u32 = 1 << 4;
    /// Automatic path migration is supported.
    pub const IS_AUTOMATIC_MIGRATION_SUPPORTED: u32 = 1 << 5;
    /// SL-to-VL mapping is supported.
    pub const IS_SL_MAPPING_SUPPORTED: u32 = 1 << 6;
    /// M_Key is kept in non-volatile memory.
    pub const IS_MKEY_NVRAM: u32 = 1 << 7;
    /// P_Key table is kept in non-volatile memory.
    pub const IS_PKEY_NVRAM: u32 = 1 << 8;
    /// LedInfo is supported.
    pub const IS_LED_INFO_SUPPORTED: u32 = 1 << 9;
    /// The SM on this port is disabled.
    pub const IS_SM_DISABLED: u32 = 1 << 10;
    /// System image GUID is supported.
    pub const IS_SYSTEM_IMAGE_GUID_SUPPORTED: u32 = 1 << 11;
    /// P_Key switch external port trap is supported.
    pub const IS_PKEY_SWITCH_EXTERNAL_PORT_TRAP_SUPPORTED: u32 = 1 << 12;
    /// Extended link speeds (FDR and faster) are supported; the
    /// LinkSpeedExt fields are valid.
    pub const IS_EXTENDED_SPEEDS_SUPPORTED: u32 = 1 << 14;
    /// CapabilityMask2 is valid.
    pub const IS_CAPABILITY_MASK2_SUPPORTED: u32 = 1 << 15;
    /// Communication management is supported.
    pub const IS_COMMUNICATION_MANAGEMENT_SUPPORTED: u32 = 1 << 16;
    /// SNMP tunnelling is supported.
    pub const IS_SNMP_TUNNELING_SUPPORTED: u32 = 1 << 17;
    /// Reinit is supported.
    pub const IS_REINIT_SUPPORTED: u32 = 1 << 18;
    /// Device management is supported.
    pub const IS_DEVICE_MANAGEMENT_SUPPORTED: u32 = 1 << 19;
    /// Vendor classes are supported.
    pub const IS_VENDOR_CLASS_SUPPORTED: u32 = 1 << 20;
    /// DR notices are supported.
    pub const IS_DR_NOTICE_SUPPORTED: u32 = 1 << 21;
    /// Capability-mask-change notices are supported.
    pub const IS_CAPABILITY_MASK_NOTICE_SUPPORTED: u32 = 1 << 22;
    /// Boot management is supported.
    pub const IS_BOOT_MANAGEMENT_SUPPORTED: u32 = 1 << 23;
    /// LinkRoundTripLatency is supported.
    pub const IS_LINK_ROUND_TRIP_LATENCY_SUPPORTED: u32 = 1 << 24;
    /// Client reregistration is supported.
    pub const IS_CLIENT_REREGISTRATION_SUPPORTED: u32 = 1 << 25;
    /// Other-local-changes notices are supported.
    pub const IS_OTHER_LOCAL_CHANGES_NOTICE_SUPPORTED: u32 = 1 << 26;
    /// LinkSpeedWidthPairsTable is supported.
    pub const IS_LINK_SPEED_WIDTH_PAIRS_TABLE_SUPPORTED: u32 = 1 << 27;
    /// VendorSpecificMadsTable is supported.
    pub const IS_VENDOR_SPECIFIC_MADS_TABLE_SUPPORTED: u32 = 1 << 28;
    /// Multicast P_Key trap suppression is supported.
    pub const IS_MCAST_PKEY_TRAP_SUPPRESSION_SUPPORTED: u32 = 1 << 29;
    /// SwitchInfo.MulticastFDBTop is supported.
    pub const IS_MULTICAST_FDB_TOP_SUPPORTED: u32 = 1 << 30;
    /// HierarchyInfo is supported.
    pub const IS_HIERARCHY_INFO_SUPPORTED: u32 = 1 << 31;
}

/// PortInfo.CapabilityMask2 bits (valid when
/// [`cap::IS_CAPABILITY_MASK2_SUPPORTED`] is set; names as libibmad prints
/// them).
pub mod cap2 {
    /// Set(NodeDescription) is supported.
    pub const IS_SET_NODE_DESCRIPTION_SUPPORTED: u16 = 1 << 0;
    /// PortInfoExtended is supported.
    pub const IS_PORT_INFO_EXTENDED_SUPPORTED: u16 = 1 << 1;
    /// Virtualization is supported.
    pub const IS_VIRTUALIZATION_SUPPORTED: u16 = 1 << 2;
    /// SwitchPortStateTable is supported.
    pub const IS_SWITCH_PORT_STATE_TABLE_SUPPORTED: u16 = 1 << 3;
    /// 2X link width is supported.
    pub const IS_LINK_WIDTH_2X_SUPPORTED: u16 = 1 << 4;
    /// HDR link speed is supported.
    pub const IS_LINK_SPEED_HDR_SUPPORTED: u16 = 1 << 5;
    /// Extended M_Key protect bits are supported.
    pub const IS_MKEY_PROTECT_BITS_EXT_SUPPORTED: u16 = 1 << 6;
    /// Enhanced trap 128 is supported.
    pub const IS_ENHANCED_TRAP128_SUPPORTED: u16 = 1 << 7;
    /// PartitionTop is supported.
    pub const IS_PARTITION_TOP_SUPPORTED: u16 = 1 << 8;
    /// Enhanced QoS arbiter is supported.
    pub const IS_ENHANCED_QOS_ARBITER_SUPPORTED: u16 = 1 << 9;
    /// NDR link speed is supported.
    pub const IS_LINK_SPEED_NDR_SUPPORTED: u16 = 1 << 10;
}

enum_with_unknown! {
    /// PortInfo.PortState (logical link state).
    #[derive(Default)]
    pub enum PortState(u8) {
        /// No state change (in Set requests).
        #[default]
        NoChange = 0,
        /// Down.
        Down = 1,
        /// Initialize.
        Initialize = 2,
        /// Armed.
        Armed = 3,
        /// Active.
        Active = 4,
    }
}

impl fmt::Display for PortState {
    /// As libibmad prints it: `NoChange`, `Down`, `Initialize`, `Armed`,
    /// `Active`, or `?(n)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PortState::NoChange => f.write_str("NoChange"),
            PortState::Down => f.write_str("Down"),
            PortState::Initialize => f.write_str("Initialize"),
            PortState::Armed => f.write_str("Armed"),
            PortState::Active => f.write_str("Active"),
            PortState::Unknown(n) => write!(f, "?({n})"),
        }
    }
}

enum_with_unknown! {
    /// PortInfo.PortPhysicalState.
    #[derive(Default)]
    pub enum PhysPortState(u8) {
        /// No state change (in Set requests).
        #[default]
        NoChange = 0,
        /// Sleep.
        Sleep = 1,
        /// Polling.
        Polling = 2,
        /// Disabled.
        Disabled = 3,
        /// PortConfigurationTraining.
        PortConfigurationTraining = 4,
        /// LinkUp.
        LinkUp = 5,
        /// LinkErrorRecovery.
        LinkErrorRecovery = 6,
        /// PhyTest.
        PhyTest = 7,
    }
}

impl fmt::Display for PhysPortState {
    /// As libibmad prints it (`LinkUp`, `Polling`, …), or `?(n)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            PhysPortState::NoChange => "NoChange",
            PhysPortState::Sleep => "Sleep",
            PhysPortState::Polling => "Polling",
            PhysPortState::Disabled => "Disabled",
            PhysPortState::PortConfigurationTraining => "PortConfigurationTraining",
            PhysPortState::LinkUp => "LinkUp",
            PhysPortState::LinkErrorRecovery => "LinkErrorRecovery",
            PhysPortState::PhyTest => "PhyTest",
            PhysPortState::Unknown(n) => return write!(f, "?({n})"),
        };
        f.write_str(s)
    }
}

enum_with_unknown! {
    /// PortInfo.LinkWidthActive: one width code. (The Enabled/Supported
    /// fields are bit masks of these codes.)
    pub enum LinkWidth(u8) {
        /// 1X (1 lane).
        X1 = 1,
        /// 4X (4 lanes).
        X4 = 2,
        /// 8X (8 lanes).
        X8 = 4,
        /// 12X (12 lanes).
        X12 = 8,
        /// 2X (2 lanes; IBA 1.4, HDR and later).
        X2 = 16,
    }
}

impl LinkWidth {
    /// Number of lanes, or `None` for an unknown code.
    pub fn lanes(self) -> Option<u8> {
        match self {
            LinkWidth::X1 => Some(1),
            LinkWidth::X2 => Some(2),
            LinkWidth::X4 => Some(4),
            LinkWidth::X8 => Some(8),
            LinkWidth::X12 => Some(12),
            LinkWidth::Unknown(_) => None,
        }
    }
}

impl Default for LinkWidth {
    fn default() -> Self {
        LinkWidth::Unknown(0)
    }
}

impl fmt::Display for LinkWidth {
    /// `1X`, `2X`, `4X`, `8X`, `12X`, or `undefined (n)` as libibmad prints
    /// it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.lanes() {
            Some(n) => write!(f, "{n}X"),
            None => write!(f, "undefined ({})", u8::from(*self)),
        }
    }
}

/// An active link speed, combined from LinkSpeedActive,
/// LinkSpeedExtActive and LinkSpeedExtActive2 — and, for FDR10, the Mellanox
/// ExtendedPortInfo ([`crate::attr::MlnxExtPortInfo`]; see
/// [`LinkSpeed::from_codes_mlnx`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LinkSpeed {
    /// SDR: 2.5 Gb/s per lane.
    Sdr,
    /// DDR: 5 Gb/s per lane.
    Ddr,
    /// QDR: 10 Gb/s per lane.
    Qdr,
    /// FDR10: 10.3125 Gb/s signalling per lane, 64b/66b (Mellanox ExtendedPortInfo; the port's
    /// PortInfo says QDR).
    Fdr10,
    /// FDR: 14.0625 Gb/s signalling per lane (LinkSpeedExtActive 1).
    Fdr,
    /// EDR: 25.78125 Gb/s signalling per lane (LinkSpeedExtActive 2).
    Edr,
    /// HDR: 53.125 Gb/s signalling per lane (LinkSpeedExtActive 4).
    Hdr,
    /// NDR: 106.25 Gb/s signalling per lane (LinkSpeedExtActive 8).
    Ndr,
    /// XDR: 212.5 Gb/s signalling per lane (LinkSpeedExtActive2 1).
    Xdr,
}

impl LinkSpeed {
    /// Decodes the active speed from the three PortInfo codes: a non-zero
    /// `ext2_active` wins, then a non-zero `ext_active`, then
    /// `speed_active`. `None` if the deciding code is not a single known
    /// speed.
    pub fn from_codes(speed_active: u8, ext_active: u8, ext2_active: u8) -> Option<LinkSpeed> {
        if ext2_active != 0 {
            return match ext2_active {
                1 => Some(LinkSpeed::Xdr),
                _ => None,
            };
        }
        if ext_active != 0 {
            return match ext_active {
                1 => Some(LinkSpeed::Fdr),
                2 => Some(LinkSpeed::Edr),
                4 => Some(LinkSpeed::Hdr),
                8 => Some(LinkSpeed::Ndr),
                _ => None,
            };
        }
        match speed_active {
            1 => Some(LinkSpeed::Sdr),
            2 => Some(LinkSpeed::Ddr),
            4 => Some(LinkSpeed::Qdr),
            _ => None,
        }
    }

    /// Like [`LinkSpeed::from_codes`], with the Mellanox ExtendedPortInfo LinkSpeedActive
    /// (`mlnx_active`) as infiniband-diags reads it: an extended speed wins, then FDR10 (bit 0
    /// of `mlnx_active`), then LinkSpeedActive.
    pub fn from_codes_mlnx(
        speed_active: u8,
        ext_active: u8,
        ext2_active: u8,
        mlnx_active: u8,
    ) -> Option<LinkSpeed> {
        if ext_active == 0 && ext2_active == 0 && mlnx_active & crate::attr::MLNX_SPEED_FDR10 != 0 {
            return Some(LinkSpeed::Fdr10);
        }
        LinkSpeed::from_codes(speed_active, ext_active, ext2_active)
    }

    /// Nominal data rate of one lane in Gb/s, as the kernel's sysfs `rate`
    /// and `ibstat` count it: 2.5, 5, 10, 14, 25, 50, 100, 200.
    pub fn lane_gbps(self) -> f64 {
        match self {
            LinkSpeed::Sdr => 2.5,
            LinkSpeed::Ddr => 5.0,
            LinkSpeed::Qdr | LinkSpeed::Fdr10 => 10.0,
            LinkSpeed::Fdr => 14.0,
            LinkSpeed::Edr => 25.0,
            LinkSpeed::Hdr => 50.0,
            LinkSpeed::Ndr => 100.0,
            LinkSpeed::Xdr => 200.0,
        }
    }

    /// Signalling rate of one lane in Gb/s, as libibmad prints the speed
    /// fields: 2.5, 5.0, 10.0, 14.0625, 25.78125, 53.125, 106.25, 212.5.
    pub fn signalling_gbps(self) -> f64 {
        match self {
            LinkSpeed::Sdr => 2.5,
            LinkSpeed::Ddr => 5.0,
            LinkSpeed::Qdr => 10.0,
            LinkSpeed::Fdr10 => 10.3125,
            LinkSpeed::Fdr => 14.0625,
            LinkSpeed::Edr => 25.78125,
            LinkSpeed::Hdr => 53.125,
            LinkSpeed::Ndr => 106.25,
            LinkSpeed::Xdr => 212.5,
        }
    }
}

impl fmt::Display for LinkSpeed {
    /// `SDR`, `DDR`, `QDR`, `FDR10`, `FDR`, `EDR`, `HDR`, `NDR` or `XDR`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LinkSpeed::Sdr => "SDR",
            LinkSpeed::Ddr => "DDR",
            LinkSpeed::Qdr => "QDR",
            LinkSpeed::Fdr10 => "FDR10",
            LinkSpeed::Fdr => "FDR",
            LinkSpeed::Edr => "EDR",
            LinkSpeed::Hdr => "HDR",
            LinkSpeed::Ndr => "NDR",
            LinkSpeed::Xdr => "XDR",
        })
    }
}

/// Nominal link rate in Gb/s: lanes × [`LinkSpeed::lane_gbps`], the number
/// `ibstat` prints as `Rate:`. Examples: 1X SDR → 2.5, 4X QDR → 40,
/// 4X FDR → 56, 4X EDR → 100, 4X HDR → 200, 2X NDR → 200, 12X QDR → 120.
/// `None` for an unknown width code.
pub fn rate_gbps(width: LinkWidth, speed: LinkSpeed) -> Option<f64> {
    width
        .lanes()
        .map(|lanes| f64::from(lanes) * speed.lane_gbps())
}

/// PortInfo, parsed: every field of the 64-byte attribute.
///
/// Sub-byte fields hold the value right-aligned (e.g. `lmc` is 0..=7);
/// `emit` masks each to its width. The `reserved_*` fields keep reserved
/// bits so `emit` reproduces the input; set them to 0 when building.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PortInfo {
    /// M_Key (bytes 0–7).
    pub m_key: u64,
    /// GID prefix (bytes 8–15).
    pub gid_prefix: u64,
    /// Base LID (bytes 16–17).
    pub lid: u16,
    /// LID of the master SM (bytes 18–19).
    pub master_sm_lid: u16,
    /// CapabilityMask (bytes 20–23); bits in [`cap`].
    pub capability_mask: u32,
    /// DiagCode (bytes 24–25).
    pub diag_code: u16,
    /// M_KeyLeasePeriod (bytes 26–27).
    pub m_key_lease_period: u16,
    /// LocalPortNum (byte 28): the port the SMP arrived on.
    pub local_port_num: u8,
    /// LinkWidthEnabled (byte 29): mask of [`LinkWidth`] codes (0 no
    /// change, 255 = set to LinkWidthSupported).
    pub link_width_enabled: u8,
    /// LinkWidthSupported (byte 30): mask of [`LinkWidth`] codes.
    pub link_width_supported: u8,
    /// LinkWidthActive (byte 31).
    pub link_width_active: LinkWidth,
    /// LinkSpeedSupported (byte 32, bits 7:4): mask (1 SDR, 2 DDR, 4 QDR).
    pub link_speed_supported: u8,
    /// PortState (byte 32, bits 3:0).
    pub port_state: PortState,
    /// PortPhysicalState (byte 33, bits 7:4).
    pub port_physical_state: PhysPortState,
    /// LinkDownDefaultState (byte 33, bits 3:0): 0 no change, 1 Sleep,
    /// 2 Polling.
    pub link_down_default_state: u8,
    /// M_KeyProtectBits (byte 34, bits 7:6).
    pub m_key_protect_bits: u8,
    /// Reserved (byte 34, bits 5:3).
    pub reserved_34: u8,
    /// LMC (byte 34, bits 2:0).
    pub lmc: u8,
    /// LinkSpeedActive (byte 35, bits 7:4): 1 SDR, 2 DDR, 4 QDR, 0 when an
    /// extended speed is active.
    pub link_speed_active: u8,
    /// LinkSpeedEnabled (byte 35, bits 3:0): mask.
    pub link_speed_enabled: u8,
    /// NeighborMTU (byte 36, bits 7:4): the active MTU.
    pub neighbor_mtu: Mtu,
    /// MasterSMSL (byte 36, bits 3:0).
    pub master_sm_sl: u8,
    /// VLCap (byte 37, bits 7:4): 1 VL0, 2 VL0–1, 3 VL0–3, 4 VL0–7,
    /// 5 VL0–14.
    pub vl_cap: u8,
    /// InitType (byte 37, bits 3:0).
    pub init_type: u8,
    /// VLHighLimit (byte 38).
    pub vl_high_limit: u8,
    /// VLArbitrationHighCap (byte 39).
    pub vl_arbitration_high_cap: u8,
    /// VLArbitrationLowCap (byte 40).
    pub vl_arbitration_low_cap: u8,
    /// InitTypeReply (byte 41, bits 7:4).
    pub init_type_reply: u8,
    /// MTUCap (byte 41, bits 3:0): the largest MTU supported.
    pub mtu_cap: Mtu,
    /// VLStallCount (byte 42, bits 7:5).
    pub vl_stall_count: u8,
    /// HOQLife (byte 42, bits 4:0).
    pub hoq_life: u8,
    /// OperationalVLs (byte 43, bits 7:4), coded like `vl_cap`.
    pub operational_vls: u8,
    /// PartitionEnforcementInbound (byte 43, bit 3).
    pub partition_enforcement_inbound: bool,
    /// PartitionEnforcementOutbound (byte 43, bit 2).
    pub partition_enforcement_outbound: bool,
    /// FilterRawInbound (byte 43, bit 1).
    pub filter_raw_inbound: bool,
    /// FilterRawOutbound (byte 43, bit 0).
    pub filter_raw_outbound: bool,
    /// M_KeyViolations (bytes 44–45).
    pub m_key_violations: u16,
    /// P_KeyViolations (bytes 46–47).
    pub p_key_violations: u16,
    /// Q_KeyViolations (bytes 48–49).
    pub q_key_violations: u16,
    /// GUIDCap (byte 50).
    pub guid_cap: u8,
    /// ClientReregister (byte 51, bit 7).
    pub client_reregister: bool,
    /// MulticastPKeyTrapSuppressionEnabled (byte 51, bits 6:5).
    pub multicast_pkey_trap_suppression_enabled: u8,
    /// SubnetTimeOut (byte 51, bits 4:0).
    pub subnet_timeout: u8,
    /// Reserved (byte 52, bits 7:5).
    pub reserved_52: u8,
    /// RespTimeValue (byte 52, bits 4:0).
    pub resp_time_value: u8,
    /// LocalPhyErrors threshold (byte 53, bits 7:4).
    pub local_phy_errors: u8,
    /// OverrunErrors threshold (byte 53, bits 3:0).
    pub overrun_errors: u8,
    /// MaxCreditHint (bytes 54–55).
    pub max_credit_hint: u16,
    /// Reserved (byte 56, bit 7).
    pub reserved_56: u8,
    /// LinkSpeedExtActive2 (byte 56, bits 6:5): 1 XDR.
    pub link_speed_ext_active2: u8,
    /// LinkSpeedExtSupported2 (byte 56, bits 4:3): mask, 1 XDR.
    pub link_speed_ext_supported2: u8,
    /// LinkSpeedExtEnabled2 (byte 56, bits 2:0): mask, 1 XDR.
    pub link_speed_ext_enabled2: u8,
    /// LinkRoundTripLatency (bytes 57–59, 24 bits).
    pub link_round_trip_latency: u32,
    /// CapabilityMask2 (bytes 60–61); bits in [`cap2`].
    pub capability_mask2: u16,
    /// LinkSpeedExtActive (byte 62, bits 7:4): 0 none, 1 FDR, 2 EDR,
    /// 4 HDR, 8 NDR.
    pub link_speed_ext_active: u8,
    /// LinkSpeedExtSupported (byte 62, bits 3:0): mask.
    pub link_speed_ext_supported: u8,
    /// Reserved (byte 63, bits 7:5).
    pub reserved_63: u8,
    /// LinkSpeedExtEnabled (byte 63, bits 4:0): mask (30 = extended
    /// speeds disabled).
    pub link_speed_ext_enabled: u8,
}

impl PortInfo {
    /// Size of PortInfo on the wire (the whole SMP data area).
    pub const LEN: usize = 64;

    /// Parses the first [`PortInfo::LEN`] bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<PortInfo> {
        let b = bytes::array::<{ Self::LEN }>(buf)?;
        let sup_state = b[field::SPEED_SUP_STATE];
        let phys = b[field::PHYS_DOWN_DEFAULT];
        let protect = b[field::PROTECT_LMC];
        let speed = b[field::SPEED_ACT_EN];
        let mtu = b[field::MTU_SMSL];
        let vlcap = b[field::VLCAP_INIT];
        let mtucap = b[field::INITREPLY_MTUCAP];
        let stall = b[field::STALL_HOQ];
        let opvls = b[field::OPVLS_FLAGS];
        let rereg = b[field::REREG_SUBNET_TO];
        let resp = b[field::RESP_TIME];
        let phy = b[field::PHY_OVERRUN];
        let ext2 = b[field::SPEED_EXT2];
        let ext = b[field::SPEED_EXT_ACT_SUP];
        let ext_en = b[field::SPEED_EXT_EN];
        Ok(PortInfo {
            m_key: get_u64(&b[field::M_KEY]),
            gid_prefix: get_u64(&b[field::GID_PREFIX]),
            lid: get_u16(&b[field::LID]),
            master_sm_lid: get_u16(&b[field::MASTER_SM_LID]),
            capability_mask: get_u32(&b[field::CAPABILITY_MASK]),
            diag_code: get_u16(&b[field::DIAG_CODE]),
            m_key_lease_period: get_u16(&b[field::M_KEY_LEASE_PERIOD]),
            local_port_num: b[field::LOCAL_PORT_NUM],
            link_width_enabled: b[field::LINK_WIDTH_ENABLED],
            link_width_supported: b[field::LINK_WIDTH_SUPPORTED],
            link_width_active: LinkWidth::from(b[field::LINK_WIDTH_ACTIVE]),
            link_speed_supported: bits(sup_state, 4, 4),
            port_state: PortState::from(bits(sup_state, 0, 4)),
            port_physical_state: PhysPortState::from(bits(phys, 4, 4)),
            link_down_default_state: bits(phys, 0, 4),
            m_key_protect_bits: bits(protect, 6, 2),
            reserved_34: bits(protect, 3, 3),
            lmc: bits(protect, 0, 3),
            link_speed_active: bits(speed, 4, 4),
            link_speed_enabled: bits(speed, 0, 4),
            neighbor_mtu: Mtu::from(bits(mtu, 4, 4)),
            master_sm_sl: bits(mtu, 0, 4),
            vl_cap: bits(vlcap, 4, 4),
            init_type: bits(vlcap, 0, 4),
            vl_high_limit: b[field::VL_HIGH_LIMIT],
            vl_arbitration_high_cap: b[field::VL_ARB_HIGH_CAP],
            vl_arbitration_low_cap: b[field::VL_ARB_LOW_CAP],
            init_type_reply: bits(mtucap, 4, 4),
            mtu_cap: Mtu::from(bits(mtucap, 0, 4)),
            vl_stall_count: bits(stall, 5, 3),
            hoq_life: bits(stall, 0, 5),
            operational_vls: bits(opvls, 4, 4),
            partition_enforcement_inbound: bits(opvls, 3, 1) != 0,
            partition_enforcement_outbound: bits(opvls, 2, 1) != 0,
            filter_raw_inbound: bits(opvls, 1, 1) != 0,
            filter_raw_outbound: bits(opvls, 0, 1) != 0,
            m_key_violations: get_u16(&b[field::M_KEY_VIOLATIONS]),
            p_key_violations: get_u16(&b[field::P_KEY_VIOLATIONS]),
            q_key_violations: get_u16(&b[field::Q_KEY_VIOLATIONS]),
            guid_cap: b[field::GUID_CAP],
            client_reregister: bits(rereg, 7, 1) != 0,
            multicast_pkey_trap_suppression_enabled: bits(rereg, 5, 2),
            subnet_timeout: bits(rereg, 0, 5),
            reserved_52: bits(resp, 5, 3),
            resp_time_value: bits(resp, 0, 5),
            local_phy_errors: bits(phy, 4, 4),
            overrun_errors: bits(phy, 0, 4),
            max_credit_hint: get_u16(&b[field::MAX_CREDIT_HINT]),
            reserved_56: bits(ext2, 7, 1),
            link_speed_ext_active2: bits(ext2, 5, 2),
            link_speed_ext_supported2: bits(ext2, 3, 2),
            link_speed_ext_enabled2: bits(ext2, 0, 3),
            link_round_trip_latency: get_u24(&b[field::LINK_ROUND_TRIP_LATENCY]),
            capability_mask2: get_u16(&b[field::CAPABILITY_MASK2]),
            link_speed_ext_active: bits(ext, 4, 4),
            link_speed_ext_supported: bits(ext, 0, 4),
            reserved_63: bits(ext_en, 5, 3),
            link_speed_ext_enabled: bits(ext_en, 0, 5),
        })
    }

    /// Bytes [`PortInfo::emit`] writes: [`PortInfo::LEN`].
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes all 64 bytes into the start of `buf`. Sub-byte fields are
    /// masked to their width; `link_round_trip_latency` to 24 bits.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`PortInfo::LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        let b = bytes::array_mut::<{ Self::LEN }>(buf);
        let flag = |v: bool, shift: u32| place(u8::from(v), shift, 1);
        set_u64(&mut b[field::M_KEY], self.m_key);
        set_u64(&mut b[field::GID_PREFIX], self.gid_prefix);
        set_u16(&mut b[field::LID], self.lid);
        set_u16(&mut b[field::MASTER_SM_LID], self.master_sm_lid);
        set_u32(&mut b[field::CAPABILITY_MASK], self.capability_mask);
        set_u16(&mut b[field::DIAG_CODE], self.diag_code);
        set_u16(&mut b[field::M_KEY_LEASE_PERIOD], self.m_key_lease_period);
        b[field::LOCAL_PORT_NUM] = self.local_port_num;
        b[field::LINK_WIDTH_ENABLED] = self.link_width_enabled;
        b[field::LINK_WIDTH_SUPPORTED] = self.link_width_supported;
        b[field::LINK_WIDTH_ACTIVE] = self.link_width_active.into();
        b[field::SPEED_SUP_STATE] =
            place(self.link_speed_supported, 4, 4) | place(self.port_state.into(), 0, 4);
        b[field::PHYS_DOWN_DEFAULT] = place(self.port_physical_state.into(), 4, 4)
            | place(self.link_down_default_state, 0, 4);
        b[field::PROTECT_LMC] = place(self.m_key_protect_bits, 6, 2)
            | place(self.reserved_34, 3, 3)
            | place(self.lmc, 0, 3);
        b[field::SPEED_ACT_EN] =
            place(self.link_speed_active, 4, 4) | place(self.link_speed_enabled, 0, 4);
        b[field::MTU_SMSL] = place(self.neighbor_mtu.into(), 4, 4) | place(self.master_sm_sl, 0, 4);
        b[field::VLCAP_INIT] = place(self.vl_cap, 4, 4) | place(self.init_type, 0, 4);
        b[field::VL_HIGH_LIMIT] = self.vl_high_limit;
        b[field::VL_ARB_HIGH_CAP] = self.vl_arbitration_high_cap;
        b[field::VL_ARB_LOW_CAP] = self.vl_arbitration_low_cap;
        b[field::INITREPLY_MTUCAP] =
            place(self.init_type_reply, 4, 4) | place(self.mtu_cap.into(), 0, 4);
        b[field::STALL_HOQ] = place(self.vl_stall_count, 5, 3) | place(self.hoq_life, 0, 5);
        b[field::OPVLS_FLAGS] = place(self.operational_vls, 4, 4)
            | flag(self.partition_enforcement_inbound, 3)
            | flag(self.partition_enforcement_outbound, 2)
            | flag(self.filter_raw_inbound, 1)
            | flag(self.filter_raw_outbound, 0);
        set_u16(&mut b[field::M_KEY_VIOLATIONS], self.m_key_violations);
        set_u16(&mut b[field::P_KEY_VIOLATIONS], self.p_key_violations);
        set_u16(&mut b[field::Q_KEY_VIOLATIONS], self.q_key_violations);
        b[field::GUID_CAP] = self.guid_cap;
        b[field::REREG_SUBNET_TO] = flag(self.client_reregister, 7)
            | place(self.multicast_pkey_trap_suppression_enabled, 5, 2)
            | place(self.subnet_timeout, 0, 5);
        b[field::RESP_TIME] = place(self.reserved_52, 5, 3) | place(self.resp_time_value, 0, 5);
        b[field::PHY_OVERRUN] =
            place(self.local_phy_errors, 4, 4) | place(self.overrun_errors, 0, 4);
        set_u16(&mut b[field::MAX_CREDIT_HINT], self.max_credit_hint);
        b[field::SPEED_EXT2] = place(self.reserved_56, 7, 1)
            | place(self.link_speed_ext_active2, 5, 2)
            | place(self.link_speed_ext_supported2, 3, 2)
            | place(self.link_speed_ext_enabled2, 0, 3);
        set_u24(
            &mut b[field::LINK_ROUND_TRIP_LATENCY],
            self.link_round_trip_latency,
        );
        set_u16(&mut b[field::CAPABILITY_MASK2], self.capability_mask2);
        b[field::SPEED_EXT_ACT_SUP] =
            place(self.link_speed_ext_active, 4, 4) | place(self.link_speed_ext_supported, 0, 4);
        b[field::SPEED_EXT_EN] =
            place(self.reserved_63, 5, 3) | place(self.link_speed_ext_enabled, 0, 5);
    }

    /// Whether every bit of `mask` is set in the CapabilityMask.
    pub fn has_capability(&self, mask: u32) -> bool {
        self.capability_mask & mask == mask
    }

    /// The active link speed. The extended fields count only when the
    /// CapabilityMask has [`cap::IS_EXTENDED_SPEEDS_SUPPORTED`] (as
    /// infiniband-diags does; before that bit they were reserved);
    /// LinkSpeedExtActive2 (XDR) is used whenever it is non-zero.
    pub fn link_speed(&self) -> Option<LinkSpeed> {
        let ext = if self.has_capability(cap::IS_EXTENDED_SPEEDS_SUPPORTED) {
            self.link_speed_ext_active
        } else {
            0
        };
        LinkSpeed::from_codes(self.link_speed_active, ext, self.link_speed_ext_active2)
    }

    /// Nominal rate of the active link in Gb/s ([`rate_gbps`] of
    /// `link_width_active` and [`PortInfo::link_speed`]), e.g. 40 for 4X
    /// QDR. `None` if the width or speed code is unknown.
    pub fn rate_gbps(&self) -> Option<f64> {
        rate_gbps(self.link_width_active, self.link_speed()?)
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::{check_offsets, check_round_trip, Case};

    /// PortInfo of an active 4X QDR HCA port as an SM would have left it:
    /// LID 2, SM LID 1, subnet prefix fe80::, MTU 4096, VL0–7.
    static HCA_PORT_BYTES: [u8; 64] = [
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // M_Key
        0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // GidPrefix
        0x00, 0x02, 0x00, 0x01, // LID 2, SM LID 1
        0x02, 0x51, 0x08, 0x68, // CapabilityMask
        0x00, 0x00, 0x00, 0x0f, // DiagCode, M_KeyLeasePeriod 15
        0x01, 0x03, 0x03, 0x02, // local port 1; width en 1X|4X, sup 1X|4X, active 4X
        0x74, // speed supported SDR|DDR|QDR, state Active
        0x52, // phys LinkUp, down-default Polling
        0x00, // protect 0, LMC 0
        0x47, // speed active QDR, enabled SDR|DDR|QDR
        0x50, // neighbor MTU 4096, SM SL 0
        0x44, // VLCap VL0-7, InitType 4
        0x00, 0x08, 0x08, // VLHighLimit, arb high cap 8, low cap 8
        0x05, // InitTypeReply 0, MTUCap 4096
        0x10, // VLStallCount 0, HOQLife 16
        0x4c, // OperVLs VL0-7, part enf in+out
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // M/P/Q_Key violations
        0x20, // GUIDCap 32
        0x12, // rereg 0, trap supp 0, subnet timeout 18
        0x10, // RespTimeValue 16
        0x88, // LocalPhyErrors 8, OverrunErrors 8
        0x00, 0x00, // MaxCreditHint
        0x00, // XDR fields
        0x00, 0x00, 0x00, // LinkRoundTripLatency
        0x00, 0x00, // CapabilityMask2
        0x00, 0x00, // LinkSpeedExt*
    ];

    #[test]
    fn test_deconstruct() {
        let pi = PortInfo::parse(&HCA_PORT_BYTES).unwrap();
        assert_eq!(pi.m_key, 0);
        assert_eq!(pi.gid_prefix, 0xfe80_0000_0000_0000);
        assert_eq!(pi.lid, 2);
        assert_eq!(pi.master_sm_lid, 1);
        assert_eq!(pi.capability_mask, 0x0251_0868);
        assert!(pi.has_capability(cap::IS_TRAP_SUPPORTED));
        assert!(!pi.has_capability(cap::IS_SM));
        assert_eq!(pi.m_key_lease_period, 15);
        assert_eq!(pi.local_port_num, 1);
        assert_eq!(pi.link_width_enabled, 3);
        assert_eq!(pi.link_width_supported, 3);
        assert_eq!(pi.link_width_active, LinkWidth::X4);
        assert_eq!(pi.link_speed_supported, 7);
        assert_eq!(pi.port_state, PortState::Active);
        assert_eq!(pi.port_physical_state, PhysPortState::LinkUp);
        assert_eq!(pi.link_down_default_state, 2);
        assert_eq!(pi.lmc, 0);
        assert_eq!(pi.link_speed_active, 4);
        assert_eq!(pi.link_speed_enabled, 7);
        assert_eq!(pi.neighbor_mtu, Mtu::Mtu4096);
        assert_eq!(pi.neighbor_mtu.bytes(), Some(4096));
        assert_eq!(pi.vl_cap, 4);
        assert_eq!(pi.init_type, 4);
        assert_eq!(pi.vl_arbitration_high_cap, 8);
        assert_eq!(pi.vl_arbitration_low_cap, 8);
        assert_eq!(pi.mtu_cap, Mtu::Mtu4096);
        assert_eq!(pi.hoq_life, 16);
        assert_eq!(pi.operational_vls, 4);
        assert!(pi.partition_enforcement_inbound);
        assert!(pi.partition_enforcement_outbound);
        assert!(!pi.filter_raw_inbound);
        assert!(!pi.filter_raw_outbound);
        assert_eq!(pi.guid_cap, 32);
        assert!(!pi.client_reregister);
        assert_eq!(pi.subnet_timeout, 18);
        assert_eq!(pi.resp_time_value, 16);
        assert_eq!(pi.local_phy_errors, 8);
        assert_eq!(pi.overrun_errors, 8);
        assert_eq!(pi.link_speed(), Some(LinkSpeed::Qdr));
        assert_eq!(pi.rate_gbps(), Some(40.0));
    }

    #[test]
    fn test_construct() {
        let pi = PortInfo {
            gid_prefix: 0xfe80_0000_0000_0000,
            lid: 2,
            master_sm_lid: 1,
            capability_mask: 0x0251_0868,
            m_key_lease_period: 15,
            local_port_num: 1,
            link_width_enabled: 3,
            link_width_supported: 3,
            link_width_active: LinkWidth::X4,
            link_speed_supported: 7,
            port_state: PortState::Active,
            port_physical_state: PhysPortState::LinkUp,
            link_down_default_state: 2,
            link_speed_active: 4,
            link_speed_enabled: 7,
            neighbor_mtu: Mtu::Mtu4096,
            vl_cap: 4,
            init_type: 4,
            vl_arbitration_high_cap: 8,
            vl_arbitration_low_cap: 8,
            mtu_cap: Mtu::Mtu4096,
            hoq_life: 16,
            operational_vls: 4,
            partition_enforcement_inbound: true,
            partition_enforcement_outbound: true,
            guid_cap: 32,
            subnet_timeout: 18,
            resp_time_value: 16,
            local_phy_errors: 8,
            overrun_errors: 8,
            ..PortInfo::default()
        };
        assert_eq!(pi.buffer_len(), 64);
        let mut out = [0xa5u8; 64];
        pi.emit(&mut out);
        assert_eq!(out, HCA_PORT_BYTES);
    }

    #[test]
    fn test_longer_buffer() {
        let mut longer = [0u8; 100];
        longer[..64].copy_from_slice(&HCA_PORT_BYTES);
        assert_eq!(PortInfo::parse(&longer), PortInfo::parse(&HCA_PORT_BYTES));
    }

    #[test]
    #[should_panic(expected = "need 64 bytes, got 63")]
    fn emit_short_buffer_panics() {
        PortInfo::default().emit(&mut [0u8; 63]);
    }

    #[test]
    fn test_impossible_len_and_round_trip() {
        check_round_trip(
            PortInfo::LEN,
            PortInfo::parse,
            PortInfo::emit,
            0xdead_beef_cafe_f00d,
        );
    }

    /// Sets one field to all ones and checks exactly which bits of the
    /// 64-byte attribute light up: verifies every offset against the IBA
    /// table (and libibmad's `fields.c`), that no two fields overlap, and
    /// that fields plus reserved bits cover all 512 bits.
    #[test]
    fn test_field_offsets() {
        // (name, setter to all-ones, first byte, byte mask list)
        #[rustfmt::skip]
        let cases: &[Case<'_, PortInfo>] = &[
            ("M_Key", |p| p.m_key = u64::MAX, 0, &[0xff; 8]),
            ("GidPrefix", |p| p.gid_prefix = u64::MAX, 8, &[0xff; 8]),
            ("LID", |p| p.lid = u16::MAX, 16, &[0xff; 2]),
            ("MasterSMLID", |p| p.master_sm_lid = u16::MAX, 18, &[0xff; 2]),
            ("CapabilityMask", |p| p.capability_mask = u32::MAX, 20, &[0xff; 4]),
            ("DiagCode", |p| p.diag_code = u16::MAX, 24, &[0xff; 2]),
            ("M_KeyLeasePeriod", |p| p.m_key_lease_period = u16::MAX, 26, &[0xff; 2]),
            ("LocalPortNum", |p| p.local_port_num = 0xff, 28, &[0xff]),
            ("LinkWidthEnabled", |p| p.link_width_enabled = 0xff, 29, &[0xff]),
            ("LinkWidthSupported", |p| p.link_width_supported = 0xff, 30, &[0xff]),
            ("LinkWidthActive", |p| p.link_width_active = LinkWidth::Unknown(0xff), 31, &[0xff]),
            ("LinkSpeedSupported", |p| p.link_speed_supported = 0xff, 32, &[0xf0]),
            ("PortState", |p| p.port_state = PortState::Unknown(0xff), 32, &[0x0f]),
            ("PortPhysicalState", |p| p.port_physical_state = PhysPortState::Unknown(0xff), 33, &[0xf0]),
            ("LinkDownDefaultState", |p| p.link_down_default_state = 0xff, 33, &[0x0f]),
            ("M_KeyProtectBits", |p| p.m_key_protect_bits = 0xff, 34, &[0xc0]),
            ("reserved_34", |p| p.reserved_34 = 0xff, 34, &[0x38]),
            ("LMC", |p| p.lmc = 0xff, 34, &[0x07]),
            ("LinkSpeedActive", |p| p.link_speed_active = 0xff, 35, &[0xf0]),
            ("LinkSpeedEnabled", |p| p.link_speed_enabled = 0xff, 35, &[0x0f]),
            ("NeighborMTU", |p| p.neighbor_mtu = Mtu::Unknown(0xff), 36, &[0xf0]),
            ("MasterSMSL", |p| p.master_sm_sl = 0xff, 36, &[0x0f]),
            ("VLCap", |p| p.vl_cap = 0xff, 37, &[0xf0]),
            ("InitType", |p| p.init_type = 0xff, 37, &[0x0f]),
            ("VLHighLimit", |p| p.vl_high_limit = 0xff, 38, &[0xff]),
            ("VLArbitrationHighCap", |p| p.vl_arbitration_high_cap = 0xff, 39, &[0xff]),
            ("VLArbitrationLowCap", |p| p.vl_arbitration_low_cap = 0xff, 40, &[0xff]),
            ("InitTypeReply", |p| p.init_type_reply = 0xff, 41, &[0xf0]),
            ("MTUCap", |p| p.mtu_cap = Mtu::Unknown(0xff), 41, &[0x0f]),
            ("VLStallCount", |p| p.vl_stall_count = 0xff, 42, &[0xe0]),
            ("HOQLife", |p| p.hoq_life = 0xff, 42, &[0x1f]),
            ("OperationalVLs", |p| p.operational_vls = 0xff, 43, &[0xf0]),
            ("PartitionEnforcementInbound", |p| p.partition_enforcement_inbound = true, 43, &[0x08]),
            ("PartitionEnforcementOutbound", |p| p.partition_enforcement_outbound = true, 43, &[0x04]),
            ("FilterRawInbound", |p| p.filter_raw_inbound = true, 43, &[0x02]),
            ("FilterRawOutbound", |p| p.filter_raw_outbound = true, 43, &[0x01]),
            ("M_KeyViolations", |p| p.m_key_violations = u16::MAX, 44, &[0xff; 2]),
            ("P_KeyViolations", |p| p.p_key_violations = u16::MAX, 46, &[0xff; 2]),
            ("Q_KeyViolations", |p| p.q_key_violations = u16::MAX, 48, &[0xff; 2]),
            ("GUIDCap", |p| p.guid_cap = 0xff, 50, &[0xff]),
            ("ClientReregister", |p| p.client_reregister = true, 51, &[0x80]),
            ("MulticastPKeyTrapSuppressionEnabled", |p| p.multicast_pkey_trap_suppression_enabled = 0xff, 51, &[0x60]),
            ("SubnetTimeOut", |p| p.subnet_timeout = 0xff, 51, &[0x1f]),
            ("reserved_52", |p| p.reserved_52 = 0xff, 52, &[0xe0]),
            ("RespTimeValue", |p| p.resp_time_value = 0xff, 52, &[0x1f]),
            ("LocalPhyErrors", |p| p.local_phy_errors = 0xff, 53, &[0xf0]),
            ("OverrunErrors", |p| p.overrun_errors = 0xff, 53, &[0x0f]),
            ("MaxCreditHint", |p| p.max_credit_hint = u16::MAX, 54, &[0xff; 2]),
            ("reserved_56", |p| p.reserved_56 = 0xff, 56, &[0x80]),
            ("LinkSpeedExtActive2", |p| p.link_speed_ext_active2 = 0xff, 56, &[0x60]),
            ("LinkSpeedExtSupported2", |p| p.link_speed_ext_supported2 = 0xff, 56, &[0x18]),
            ("LinkSpeedExtEnabled2", |p| p.link_speed_ext_enabled2 = 0xff, 56, &[0x07]),
            ("LinkRoundTripLatency", |p| p.link_round_trip_latency = u32::MAX, 57, &[0xff; 3]),
            ("CapabilityMask2", |p| p.capability_mask2 = u16::MAX, 60, &[0xff; 2]),
            ("LinkSpeedExtActive", |p| p.link_speed_ext_active = 0xff, 62, &[0xf0]),
            ("LinkSpeedExtSupported", |p| p.link_speed_ext_supported = 0xff, 62, &[0x0f]),
            ("reserved_63", |p| p.reserved_63 = 0xff, 63, &[0xe0]),
            ("LinkSpeedExtEnabled", |p| p.link_speed_ext_enabled = 0xff, 63, &[0x1f]),
        ];
        check_offsets(PortInfo::LEN, PortInfo::parse, PortInfo::emit, cases);
    }

    #[test]
    fn spot_check_offsets_against_spec() {
        // A few fields written with distinct values, checked against the
        // byte positions in IBA Table "PortInfo".
        let pi = PortInfo {
            lid: 0x1234,
            master_sm_lid: 0x5678,
            capability_mask: 0x9abc_def0,
            local_port_num: 0x21,
            port_state: PortState::Armed,
            lmc: 5,
            link_speed_ext_active: 2,
            link_speed_ext_enabled: 0x1e,
            capability_mask2: 0x0412,
            link_round_trip_latency: 0xab_cdef,
            ..PortInfo::default()
        };
        let mut b = [0u8; 64];
        pi.emit(&mut b);
        assert_eq!(b[16..18], [0x12, 0x34]); // LID
        assert_eq!(b[18..20], [0x56, 0x78]); // MasterSMLID
        assert_eq!(b[20..24], [0x9a, 0xbc, 0xde, 0xf0]); // CapabilityMask
        assert_eq!(b[28], 0x21); // LocalPortNum
        assert_eq!(b[32], 0x03); // PortState in the low nibble
        assert_eq!(b[34], 0x05); // LMC in the low 3 bits
        assert_eq!(b[57..60], [0xab, 0xcd, 0xef]); // LinkRoundTripLatency
        assert_eq!(b[60..62], [0x04, 0x12]); // CapabilityMask2
        assert_eq!(b[62], 0x20); // LinkSpeedExtActive high nibble
        assert_eq!(b[63], 0x1e); // LinkSpeedExtEnabled
    }

    #[test]
    fn link_speed_and_rate() {
        use LinkSpeed::*;
        assert_eq!(LinkSpeed::from_codes(1, 0, 0), Some(Sdr));
        assert_eq!(LinkSpeed::from_codes(2, 0, 0), Some(Ddr));
        assert_eq!(LinkSpeed::from_codes(4, 0, 0), Some(Qdr));
        assert_eq!(LinkSpeed::from_codes(0, 1, 0), Some(Fdr));
        assert_eq!(LinkSpeed::from_codes_mlnx(4, 0, 0, 1), Some(Fdr10));
        assert_eq!(LinkSpeed::from_codes_mlnx(4, 0, 0, 0), Some(Qdr));
        assert_eq!(
            LinkSpeed::from_codes_mlnx(4, 1, 0, 1),
            Some(Fdr),
            "an extended speed wins"
        );
        assert_eq!(Fdr10.to_string(), "FDR10");
        assert_eq!(rate_gbps(LinkWidth::X4, Fdr10), Some(40.0));
        assert_eq!(LinkSpeed::from_codes(4, 2, 0), Some(Edr));
        assert_eq!(LinkSpeed::from_codes(0, 4, 0), Some(Hdr));
        assert_eq!(LinkSpeed::from_codes(0, 8, 0), Some(Ndr));
        assert_eq!(LinkSpeed::from_codes(0, 8, 1), Some(Xdr));
        assert_eq!(LinkSpeed::from_codes(0, 0, 0), None);
        assert_eq!(LinkSpeed::from_codes(3, 0, 0), None);
        assert_eq!(LinkSpeed::from_codes(1, 3, 0), None);
        assert_eq!(LinkSpeed::from_codes(1, 0, 2), None);

        assert_eq!(rate_gbps(LinkWidth::X1, Sdr), Some(2.5));
        assert_eq!(rate_gbps(LinkWidth::X4, Sdr), Some(10.0));
        assert_eq!(rate_gbps(LinkWidth::X4, Ddr), Some(20.0));
        assert_eq!(rate_gbps(LinkWidth::X4, Qdr), Some(40.0));
        assert_eq!(rate_gbps(LinkWidth::X12, Qdr), Some(120.0));
        assert_eq!(rate_gbps(LinkWidth::X4, Fdr), Some(56.0));
        assert_eq!(rate_gbps(LinkWidth::X4, Edr), Some(100.0));
        assert_eq!(rate_gbps(LinkWidth::X4, Hdr), Some(200.0));
        assert_eq!(rate_gbps(LinkWidth::X2, Ndr), Some(200.0));
        assert_eq!(rate_gbps(LinkWidth::X4, Ndr), Some(400.0));
        assert_eq!(rate_gbps(LinkWidth::X4, Xdr), Some(800.0));
        assert_eq!(rate_gbps(LinkWidth::X8, Edr), Some(200.0));
        assert_eq!(rate_gbps(LinkWidth::Unknown(3), Sdr), None);
        assert_eq!(Hdr.signalling_gbps(), 53.125);
        assert_eq!(Fdr.to_string(), "FDR");

        // Extended speeds count only with IsExtendedSpeedsSupported.
        let mut pi = PortInfo {
            link_width_active: LinkWidth::X4,
            link_speed_active: 0,
            link_speed_ext_active: 2,
            ..PortInfo::default()
        };
        assert_eq!(pi.link_speed(), None);
        pi.capability_mask = cap::IS_EXTENDED_SPEEDS_SUPPORTED;
        assert_eq!(pi.link_speed(), Some(Edr));
        assert_eq!(pi.rate_gbps(), Some(100.0));
        pi.link_speed_ext_active2 = 1;
        assert_eq!(pi.rate_gbps(), Some(800.0));
    }

    #[test]
    fn enum_display() {
        assert_eq!(PortState::Active.to_string(), "Active");
        assert_eq!(PortState::Initialize.to_string(), "Initialize");
        assert_eq!(PortState::NoChange.to_string(), "NoChange");
        assert_eq!(PortState::from(9).to_string(), "?(9)");
        assert_eq!(PhysPortState::LinkUp.to_string(), "LinkUp");
        assert_eq!(
            PhysPortState::PortConfigurationTraining.to_string(),
            "PortConfigurationTraining"
        );
        assert_eq!(PhysPortState::from(7), PhysPortState::PhyTest);
        assert_eq!(PhysPortState::from(12).to_string(), "?(12)");
        assert_eq!(LinkWidth::X1.to_string(), "1X");
        assert_eq!(LinkWidth::X2.to_string(), "2X");
        assert_eq!(LinkWidth::X12.to_string(), "12X");
        assert_eq!(LinkWidth::from(3).to_string(), "undefined (3)");
        assert_eq!(LinkWidth::from(16), LinkWidth::X2);
        for v in 0..=u8::MAX {
            assert_eq!(u8::from(PortState::from(v)), v);
            assert_eq!(u8::from(PhysPortState::from(v)), v);
            assert_eq!(u8::from(LinkWidth::from(v)), v);
        }
    }
}
