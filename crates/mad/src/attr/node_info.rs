//! NodeInfo (SMP attribute 0x11, IBA Vol 1, 14.2.5.3): 40 bytes.

use core::fmt;

use crate::bytes::{self, get_u16, get_u24, get_u32, get_u64, set_u16, set_u24, set_u32, set_u64};
use crate::Result;

mod field {
    use crate::bytes::Field;

    pub(super) const BASE_VERSION: usize = 0;
    pub(super) const CLASS_VERSION: usize = 1;
    pub(super) const NODE_TYPE: usize = 2;
    pub(super) const NUM_PORTS: usize = 3;
    pub(super) const SYSTEM_IMAGE_GUID: Field = 4..12;
    pub(super) const NODE_GUID: Field = 12..20;
    pub(super) const PORT_GUID: Field = 20..28;
    pub(super) const PARTITION_CAP: Field = 28..30;
    pub(super) const DEVICE_ID: Field = 30..32;
    pub(super) const REVISION: Field = 32..36;
    pub(super) const LOCAL_PORT_NUM: usize = 36;
    pub(super) const VENDOR_ID: Field = 37..40;
}

enum_with_unknown! {
    /// NodeInfo.NodeType.
    pub enum NodeType(u8) {
        /// Channel adapter (HCA or TCA).
        ChannelAdapter = 1,
        /// Switch.
        Switch = 2,
        /// Router.
        Router = 3,
    }
}

impl Default for NodeType {
    fn default() -> Self {
        NodeType::Unknown(0)
    }
}

impl fmt::Display for NodeType {
    /// As libibmad prints it: `Channel Adapter`, `Switch`, `Router`, or
    /// `?(n)?`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NodeType::ChannelAdapter => f.write_str("Channel Adapter"),
            NodeType::Switch => f.write_str("Switch"),
            NodeType::Router => f.write_str("Router"),
            NodeType::Unknown(n) => write!(f, "?({n})?"),
        }
    }
}

/// NodeInfo, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct NodeInfo {
    /// Base version of MADs supported (1).
    pub base_version: u8,
    /// Class version of subnet management supported (1).
    pub class_version: u8,
    /// Node type.
    pub node_type: NodeType,
    /// Number of physical ports.
    pub num_ports: u8,
    /// System image GUID.
    pub system_image_guid: u64,
    /// Node GUID.
    pub node_guid: u64,
    /// GUID of the port the SMP arrived on (switches: port 0's GUID).
    pub port_guid: u64,
    /// Number of P_Key table entries per port.
    pub partition_cap: u16,
    /// Vendor-assigned device ID.
    pub device_id: u16,
    /// Vendor-assigned device revision.
    pub revision: u32,
    /// Number of the port the SMP arrived on.
    pub local_port_num: u8,
    /// IEEE OUI of the vendor (24 bits).
    pub vendor_id: u32,
}

impl NodeInfo {
    /// Size of NodeInfo on the wire (the rest of the 64-byte SMP data area
    /// is reserved).
    pub const LEN: usize = 40;

    /// Parses the first [`NodeInfo::LEN`] bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<NodeInfo> {
        let b = bytes::array::<{ Self::LEN }>(buf)?;
        Ok(NodeInfo {
            base_version: b[field::BASE_VERSION],
            class_version: b[field::CLASS_VERSION],
            node_type: NodeType::from(b[field::NODE_TYPE]),
            num_ports: b[field::NUM_PORTS],
            system_image_guid: get_u64(&b[field::SYSTEM_IMAGE_GUID]),
            node_guid: get_u64(&b[field::NODE_GUID]),
            port_guid: get_u64(&b[field::PORT_GUID]),
            partition_cap: get_u16(&b[field::PARTITION_CAP]),
            device_id: get_u16(&b[field::DEVICE_ID]),
            revision: get_u32(&b[field::REVISION]),
            local_port_num: b[field::LOCAL_PORT_NUM],
            vendor_id: get_u24(&b[field::VENDOR_ID]),
        })
    }

    /// Bytes [`NodeInfo::emit`] writes: [`NodeInfo::LEN`].
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes the first [`NodeInfo::LEN`] bytes of `buf`. `vendor_id` is
    /// truncated to 24 bits.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`NodeInfo::LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        let b = bytes::array_mut::<{ Self::LEN }>(buf);
        b[field::BASE_VERSION] = self.base_version;
        b[field::CLASS_VERSION] = self.class_version;
        b[field::NODE_TYPE] = self.node_type.into();
        b[field::NUM_PORTS] = self.num_ports;
        set_u64(&mut b[field::SYSTEM_IMAGE_GUID], self.system_image_guid);
        set_u64(&mut b[field::NODE_GUID], self.node_guid);
        set_u64(&mut b[field::PORT_GUID], self.port_guid);
        set_u16(&mut b[field::PARTITION_CAP], self.partition_cap);
        set_u16(&mut b[field::DEVICE_ID], self.device_id);
        set_u32(&mut b[field::REVISION], self.revision);
        b[field::LOCAL_PORT_NUM] = self.local_port_num;
        set_u24(&mut b[field::VENDOR_ID], self.vendor_id);
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::{check_offsets, check_round_trip, Case};

    /// Modelled on ibsim's `Switch1` answering a DR NodeInfo on port 1
    /// (type 2, 8 ports, GUID 0x200000); device/vendor IDs are illustrative.
    static SWITCH_BYTES: [u8; 64] = {
        let mut b = [0u8; 64];
        b[0] = 1; // base version
        b[1] = 1; // class version
        b[2] = 2; // switch
        b[3] = 8; // ports
                  // system image guid 0x0000000000200000
        b[9] = 0x20;
        // node guid 0x0000000000200000
        b[17] = 0x20;
        // port guid 0x0000000000200000
        b[25] = 0x20;
        // partition cap 64
        b[29] = 64;
        // device id 0xb924
        b[30] = 0xb9;
        b[31] = 0x24;
        // revision 0x000000a0
        b[35] = 0xa0;
        // local port 1
        b[36] = 1;
        // vendor id 0x0002c9
        b[38] = 0x02;
        b[39] = 0xc9;
        b
    };

    #[test]
    fn test_deconstruct() {
        let ni = NodeInfo::parse(&SWITCH_BYTES).unwrap();
        assert_eq!(ni.base_version, 1);
        assert_eq!(ni.class_version, 1);
        assert_eq!(ni.node_type, NodeType::Switch);
        assert_eq!(ni.num_ports, 8);
        assert_eq!(ni.system_image_guid, 0x20_0000);
        assert_eq!(ni.node_guid, 0x20_0000);
        assert_eq!(ni.port_guid, 0x20_0000);
        assert_eq!(ni.partition_cap, 64);
        assert_eq!(ni.device_id, 0xb924);
        assert_eq!(ni.revision, 0xa0);
        assert_eq!(ni.local_port_num, 1);
        assert_eq!(ni.vendor_id, 0x0002c9);
    }

    #[test]
    fn test_construct() {
        let ni = NodeInfo {
            base_version: 1,
            class_version: 1,
            node_type: NodeType::Switch,
            num_ports: 8,
            system_image_guid: 0x20_0000,
            node_guid: 0x20_0000,
            port_guid: 0x20_0000,
            partition_cap: 64,
            device_id: 0xb924,
            revision: 0xa0,
            local_port_num: 1,
            vendor_id: 0x0002c9,
        };
        assert_eq!(ni.buffer_len(), 40);
        let mut out = [0u8; 64];
        ni.emit(&mut out);
        assert_eq!(out, SWITCH_BYTES);

        // Emit leaves bytes past LEN alone.
        let mut out = [0xa5u8; 64];
        ni.emit(&mut out);
        assert_eq!(out[..40], SWITCH_BYTES[..40]);
        assert!(out[40..].iter().all(|&b| b == 0xa5));
    }

    #[test]
    #[should_panic(expected = "need 40 bytes, got 39")]
    fn emit_short_buffer_panics() {
        NodeInfo::default().emit(&mut [0u8; 39]);
    }

    #[test]
    fn test_field_offsets() {
        #[rustfmt::skip]
        let cases: &[Case<'_, NodeInfo>] = &[
            ("BaseVersion", |n| n.base_version = 0xff, 0, &[0xff]),
            ("ClassVersion", |n| n.class_version = 0xff, 1, &[0xff]),
            ("NodeType", |n| n.node_type = NodeType::Unknown(0xff), 2, &[0xff]),
            ("NumPorts", |n| n.num_ports = 0xff, 3, &[0xff]),
            ("SystemImageGUID", |n| n.system_image_guid = u64::MAX, 4, &[0xff; 8]),
            ("NodeGUID", |n| n.node_guid = u64::MAX, 12, &[0xff; 8]),
            ("PortGUID", |n| n.port_guid = u64::MAX, 20, &[0xff; 8]),
            ("PartitionCap", |n| n.partition_cap = u16::MAX, 28, &[0xff; 2]),
            ("DeviceID", |n| n.device_id = u16::MAX, 30, &[0xff; 2]),
            ("Revision", |n| n.revision = u32::MAX, 32, &[0xff; 4]),
            ("LocalPortNum", |n| n.local_port_num = 0xff, 36, &[0xff]),
            ("VendorID", |n| n.vendor_id = u32::MAX, 37, &[0xff; 3]),
        ];
        check_offsets(NodeInfo::LEN, NodeInfo::parse, NodeInfo::emit, cases);
    }

    #[test]
    fn test_impossible_len_and_round_trip() {
        check_round_trip(
            NodeInfo::LEN,
            NodeInfo::parse,
            NodeInfo::emit,
            0x5eed_0000_0000_0001,
        );
        assert!(NodeInfo::parse(&SWITCH_BYTES[..40]).is_ok());
    }

    #[test]
    fn node_type_display() {
        assert_eq!(NodeType::ChannelAdapter.to_string(), "Channel Adapter");
        assert_eq!(NodeType::Switch.to_string(), "Switch");
        assert_eq!(NodeType::Router.to_string(), "Router");
        assert_eq!(NodeType::from(9).to_string(), "?(9)?");
        for v in 0..=u8::MAX {
            assert_eq!(u8::from(NodeType::from(v)), v);
        }
    }
}
