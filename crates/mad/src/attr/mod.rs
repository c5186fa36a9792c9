//! Attribute layouts carried in MAD data areas.
//!
//! Each attribute is a Repr with `parse(&[u8])`, `emit(&mut [u8])` and
//! `buffer_len()`. `parse` takes the attribute bytes (for SMPs the 64-byte
//! SMP data area, [`crate::Smp::data`]; for PerfMgt the data area at MAD
//! offset 64, [`crate::perf::data`]); longer buffers are fine, shorter ones
//! are [`crate::Error::Truncated`]. `emit` writes exactly `buffer_len()`
//! bytes and leaves the rest of the buffer alone. `parse` then `emit`
//! reproduces every byte of the attribute, reserved bits included.

mod class_port_info;
mod guid_info;
mod lft;
mod mft;
mod mlnx_ext_port_info;
mod node_desc;
mod node_info;
mod notice;
mod pkey_table;
mod port_counter_sets;
mod port_counters;
mod port_counters_ext;
mod port_data_sl;
mod port_info;
mod port_samples_control;
mod sl2vl;
mod sm_info;
mod switch_info;
mod vl_arb;

pub use class_port_info::{cap as class_cap, ClassPortInfo};
pub use guid_info::GuidInfo;
pub use lft::LinearForwardingTable;
pub use mft::{mft_attr_mod, MulticastForwardingTable, MULTICAST_LID_BASE};
pub use mlnx_ext_port_info::{MlnxExtPortInfo, MLNX_SPEED_FDR10};
pub use node_desc::NodeDescription;
pub use node_info::{NodeInfo, NodeType};
pub use notice::{LocalChanges, Notice, NoticeType, ProducerType, TrapNumber};
pub use pkey_table::{
    pkey_base, pkey_is_full_member, pkey_is_valid, pkey_table_attr_mod, pkeys_match, PKeyTable,
    DEFAULT_PKEY, PKEY_BASE_MASK, PKEY_FULL_MEMBER,
};
pub use port_counter_sets::{
    PortFlowCtlCounters, PortOpRcvCounters, PortRcvErrorDetails, PortSamplesResult, PortVlOpData,
    PortVlOpPackets, PortVlXmitFlowCtlUpdateErrors, PortVlXmitWaitCounters, PortXmitDiscardDetails,
};
pub use port_counters::PortCounters;
pub use port_counters_ext::PortCountersExt;
pub use port_data_sl::{PortDataSl, PortRcvDataSl, PortXmitDataSl};
pub use port_info::{
    cap, cap2, rate_gbps, LinkSpeed, LinkWidth, PhysPortState, PortInfo, PortState,
};
pub use port_samples_control::{samples_counter, PortSamplesControl};
pub use sl2vl::{sl2vl_attr_mod, SlToVlTable};
pub use sm_info::{SmControl, SmInfo, SmState};
pub use switch_info::SwitchInfo;
pub use vl_arb::{vl_arb_attr_mod, VlArbBlock, VlArbEntry, VlArbTable};

/// Attribute IDs of the subnet management class (0x01/0x81), plus the IDs
/// common to all classes (IBA 13.4.8.1, 14.2.5).
pub mod id {
    /// ClassPortInfo (common to all classes).
    pub const CLASS_PORT_INFO: u16 = 0x0001;
    /// Notice (traps; common to all classes).
    pub const NOTICE: u16 = 0x0002;
    /// InformInfo (common to all classes).
    pub const INFORM_INFO: u16 = 0x0003;
    /// NodeDescription.
    pub const NODE_DESC: u16 = 0x0010;
    /// NodeInfo.
    pub const NODE_INFO: u16 = 0x0011;
    /// SwitchInfo.
    pub const SWITCH_INFO: u16 = 0x0012;
    /// GUIDInfo.
    pub const GUID_INFO: u16 = 0x0014;
    /// PortInfo.
    pub const PORT_INFO: u16 = 0x0015;
    /// P_KeyTable.
    pub const PKEY_TABLE: u16 = 0x0016;
    /// SLtoVLMappingTable.
    pub const SL2VL: u16 = 0x0017;
    /// VLArbitrationTable.
    pub const VL_ARB: u16 = 0x0018;
    /// LinearForwardingTable.
    pub const LFT: u16 = 0x0019;
    /// RandomForwardingTable.
    pub const RFT: u16 = 0x001a;
    /// MulticastForwardingTable.
    pub const MFT: u16 = 0x001b;
    /// LinkSpeedWidthPairsTable.
    pub const LINK_SPEED_WIDTH_PAIRS: u16 = 0x001c;
    /// VendorSpecificMadsTable.
    pub const VENDOR_MADS_TABLE: u16 = 0x001d;
    /// HierarchyInfo.
    pub const HIERARCHY_INFO: u16 = 0x001e;
    /// SMInfo.
    pub const SM_INFO: u16 = 0x0020;
    /// VendorDiag.
    pub const VENDOR_DIAG: u16 = 0x0030;
    /// LedInfo.
    pub const LED_INFO: u16 = 0x0031;
    /// CableInfo.
    pub const CABLE_INFO: u16 = 0x0032;
    /// PortInfoExtended.
    pub const PORT_INFO_EXT: u16 = 0x0033;
    /// Mellanox ExtendedPortInfo (vendor attribute).
    pub const MLNX_EXT_PORT_INFO: u16 = 0xff90;
}

/// An attribute Repr that travels in one MAD's data area, with the attribute ID it is
/// requested by: what generic code (a typed `Get`/`Set`) needs to know about it.
///
/// SMP attributes (class 0x01/0x81) live in the 64-byte SMP data area
/// ([`crate::Smp::data`]); PerfMgt attributes at MAD offset 64 ([`crate::perf::data`]).
pub trait Attribute: Sized {
    /// The AttributeID that requests it.
    const ID: u16;
    /// Parses the attribute from the start of `buf` (longer buffers are fine).
    fn parse(buf: &[u8]) -> crate::Result<Self>;
    /// Writes the attribute to the start of `buf`.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`Attribute::buffer_len`].
    fn emit(&self, buf: &mut [u8]);
    /// How many bytes [`Attribute::emit`] writes.
    fn buffer_len(&self) -> usize;
}

macro_rules! attribute {
    ($($ty:ty => $id:expr),* $(,)?) => {$(
        impl Attribute for $ty {
            const ID: u16 = $id;
            fn parse(buf: &[u8]) -> crate::Result<Self> {
                <$ty>::parse(buf)
            }
            fn emit(&self, buf: &mut [u8]) {
                <$ty>::emit(self, buf)
            }
            fn buffer_len(&self) -> usize {
                <$ty>::buffer_len(self)
            }
        }
    )*};
}

attribute! {
    ClassPortInfo => id::CLASS_PORT_INFO,
    NodeDescription => id::NODE_DESC,
    NodeInfo => id::NODE_INFO,
    SwitchInfo => id::SWITCH_INFO,
    GuidInfo => id::GUID_INFO,
    PortInfo => id::PORT_INFO,
    PKeyTable => id::PKEY_TABLE,
    SlToVlTable => id::SL2VL,
    VlArbTable => id::VL_ARB,
    LinearForwardingTable => id::LFT,
    MulticastForwardingTable => id::MFT,
    SmInfo => id::SM_INFO,
    MlnxExtPortInfo => id::MLNX_EXT_PORT_INFO,
    PortCounters => crate::perf::attr_id::PORT_COUNTERS,
    PortCountersExt => crate::perf::attr_id::PORT_COUNTERS_EXT,
    PortSamplesControl => crate::perf::attr_id::PORT_SAMPLES_CONTROL,
}
