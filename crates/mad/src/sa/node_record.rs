//! NodeRecord (SA attribute 0x11, IBA Vol 1, 15.2.5): 108 bytes (112
//! with padding in a GetTableResp).
//!
//! ```text
//!   0..2    LID
//!   2..4    reserved
//!   4..44   NodeInfo (40 bytes)
//!  44..108  NodeDescription (64 bytes)
//! ```

use crate::attr::{NodeDescription, NodeInfo};
use crate::bytes::{self, get_u16, set_u16};
use crate::Result;

mod field {
    use crate::bytes::Field;

    pub(super) const LID: Field = 0..2;
    pub(super) const RESERVED: Field = 2..4;
    pub(super) const NODE_INFO: Field = 4..44;
    pub(super) const NODE_DESC: Field = 44..108;
}

/// NodeRecord ComponentMask bits, in IBA order (opensm `IB_NR_COMPMASK_*`).
pub mod comp {
    /// LID.
    pub const LID: u64 = 1 << 0;
    /// Reserved.
    pub const RESERVED: u64 = 1 << 1;
    /// NodeInfo.BaseVersion.
    pub const BASE_VERSION: u64 = 1 << 2;
    /// NodeInfo.ClassVersion.
    pub const CLASS_VERSION: u64 = 1 << 3;
    /// NodeInfo.NodeType.
    pub const NODE_TYPE: u64 = 1 << 4;
    /// NodeInfo.NumPorts.
    pub const NUM_PORTS: u64 = 1 << 5;
    /// NodeInfo.SystemImageGUID.
    pub const SYSTEM_IMAGE_GUID: u64 = 1 << 6;
    /// NodeInfo.NodeGUID.
    pub const NODE_GUID: u64 = 1 << 7;
    /// NodeInfo.PortGUID.
    pub const PORT_GUID: u64 = 1 << 8;
    /// NodeInfo.PartitionCap.
    pub const PARTITION_CAP: u64 = 1 << 9;
    /// NodeInfo.DeviceID.
    pub const DEVICE_ID: u64 = 1 << 10;
    /// NodeInfo.Revision.
    pub const REVISION: u64 = 1 << 11;
    /// NodeInfo.LocalPortNum.
    pub const LOCAL_PORT_NUM: u64 = 1 << 12;
    /// NodeInfo.VendorID.
    pub const VENDOR_ID: u64 = 1 << 13;
    /// NodeDescription.
    pub const NODE_DESCRIPTION: u64 = 1 << 14;
}

/// NodeRecord, parsed: a node's NodeInfo and NodeDescription as the SA
/// knows them, keyed by the LID of the port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct NodeRecord {
    /// LID of the port (for switches: of port 0).
    pub lid: u16,
    /// Reserved (bytes 2–3), kept so `emit` reproduces the input.
    pub reserved: u16,
    /// The node's NodeInfo.
    pub node_info: NodeInfo,
    /// The node's NodeDescription.
    pub node_description: NodeDescription,
}

impl NodeRecord {
    /// Size of NodeRecord in the IBA table.
    pub const LEN: usize = field::NODE_DESC.end;

    /// Parses the first [`NodeRecord::LEN`] bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<NodeRecord> {
        let b = bytes::array::<{ Self::LEN }>(buf)?;
        Ok(NodeRecord {
            lid: get_u16(&b[field::LID]),
            reserved: get_u16(&b[field::RESERVED]),
            node_info: NodeInfo::parse(&b[field::NODE_INFO])?,
            node_description: NodeDescription::parse(&b[field::NODE_DESC])?,
        })
    }

    /// Bytes [`NodeRecord::emit`] writes: [`NodeRecord::LEN`].
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes the first [`NodeRecord::LEN`] bytes of `buf`.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`NodeRecord::LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        let b = bytes::array_mut::<{ Self::LEN }>(buf);
        set_u16(&mut b[field::LID], self.lid);
        set_u16(&mut b[field::RESERVED], self.reserved);
        self.node_info.emit(&mut b[field::NODE_INFO]);
        self.node_description.emit(&mut b[field::NODE_DESC]);
    }
}

impl_sa_record!(NodeRecord, super::attr_id::NODE_RECORD);

#[cfg(test)]
mod test {
    use super::*;
    use crate::attr::NodeType;
    use crate::test_util::{check_comp_mask, check_offsets, check_round_trip, Case};

    /// NodeRecord of ibsim's `Hca1` (LID 2, GUID 0x20000000000001,
    /// one port) as opensm returns it; device/vendor IDs are illustrative.
    static HCA_BYTES: [u8; 108] = {
        let mut b = [0u8; 108];
        b[1] = 0x02; // LID 2
        b[4] = 1; // base version
        b[5] = 1; // class version
        b[6] = 1; // channel adapter
        b[7] = 1; // one port
        b[13] = 0x20; // system image GUID 0x0000000000200000 (bytes 8..16)
        b[16] = 0x00; // node GUID 0x0002000000000001 (bytes 16..24)
        b[17] = 0x02;
        b[23] = 0x01;
        b[25] = 0x02; // port GUID 0x0002000000000002 (bytes 24..32)
        b[31] = 0x02;
        b[33] = 64; // partition cap 64
        b[34] = 0x67; // device ID 0x6732
        b[35] = 0x32;
        b[39] = 0xa0; // revision 0xa0
        b[40] = 1; // local port 1
        b[42] = 0x02; // vendor ID 0x0002c9
        b[43] = 0xc9;
        let desc = *b"Hca1 HCA-1";
        let mut i = 0;
        while i < desc.len() {
            b[44 + i] = desc[i];
            i += 1;
        }
        b
    };

    fn expected() -> NodeRecord {
        NodeRecord {
            lid: 2,
            reserved: 0,
            node_info: NodeInfo {
                base_version: 1,
                class_version: 1,
                node_type: NodeType::ChannelAdapter,
                num_ports: 1,
                system_image_guid: 0x20_0000,
                node_guid: 0x0002_0000_0000_0001,
                port_guid: 0x0002_0000_0000_0002,
                partition_cap: 64,
                device_id: 0x6732,
                revision: 0xa0,
                local_port_num: 1,
                vendor_id: 0x0002c9,
            },
            node_description: NodeDescription::new("Hca1 HCA-1"),
        }
    }

    #[test]
    fn test_deconstruct() {
        let nr = NodeRecord::parse(&HCA_BYTES).unwrap();
        assert_eq!(nr, expected());
        assert_eq!(nr.node_description.as_str(), "Hca1 HCA-1");
    }

    #[test]
    fn test_construct() {
        let mut out = [0xa5u8; 112];
        expected().emit(&mut out);
        assert_eq!(out[..108], HCA_BYTES);
        assert_eq!(out[108..], [0xa5; 4]);
        assert_eq!(expected().buffer_len(), 108);
    }

    #[test]
    fn test_impossible_len_and_round_trip() {
        check_round_trip(NodeRecord::LEN, NodeRecord::parse, NodeRecord::emit, 11);
    }

    #[test]
    fn test_field_offsets() {
        #[rustfmt::skip]
        let cases: &[Case<'_, NodeRecord>] = &[
            ("LID", |r| r.lid = u16::MAX, 0, &[0xff; 2]),
            ("reserved", |r| r.reserved = u16::MAX, 2, &[0xff; 2]),
            ("NodeInfo", |r| r.node_info = NodeInfo::parse(&[0xff; 40]).unwrap(), 4, &[0xff; 40]),
            ("NodeDescription", |r| r.node_description = NodeDescription::from_raw([0xff; 64]), 44, &[0xff; 64]),
        ];
        check_offsets(NodeRecord::LEN, NodeRecord::parse, NodeRecord::emit, cases);
        // NodeInfo sits at byte 4: NodeGUID alone lights bytes 16..24.
        let mut r = NodeRecord::default();
        r.node_info.node_guid = u64::MAX;
        let mut out = [0u8; 108];
        r.emit(&mut out);
        assert!(out[16..24].iter().all(|&b| b == 0xff));
        assert_eq!(out.iter().filter(|&&b| b != 0).count(), 8);
    }

    #[test]
    fn test_comp_mask() {
        check_comp_mask(&[
            ("LID", comp::LID),
            ("Reserved", comp::RESERVED),
            ("BaseVersion", comp::BASE_VERSION),
            ("ClassVersion", comp::CLASS_VERSION),
            ("NodeType", comp::NODE_TYPE),
            ("NumPorts", comp::NUM_PORTS),
            ("SystemImageGUID", comp::SYSTEM_IMAGE_GUID),
            ("NodeGUID", comp::NODE_GUID),
            ("PortGUID", comp::PORT_GUID),
            ("PartitionCap", comp::PARTITION_CAP),
            ("DeviceID", comp::DEVICE_ID),
            ("Revision", comp::REVISION),
            ("LocalPortNum", comp::LOCAL_PORT_NUM),
            ("VendorID", comp::VENDOR_ID),
            ("NodeDescription", comp::NODE_DESCRIPTION),
        ]);
    }
}
