//! SwitchInfo (SMP attribute 0x12, IBA Vol 1, 14.2.5.4): 20 bytes; the rest
//! of the 64-byte SMP data area is reserved.
//!
//! Layout (byte offsets; bit 7 is the most significant bit of a byte):
//!
//! ```text
//!  0..2   LinearFDBCap              11  LifeTimeValue(7:3) PortStateChange(2)
//!  2..4   RandomFDBCap                  OptimizedSLtoVLMappingProgramming(1:0)
//!  4..6   MulticastFDBCap           12..14 LIDsPerPort
//!  6..8   LinearFDBTop              14..16 PartitionEnforcementCap
//!  8      DefaultPort               16  InboundEnforcementCap(7) OutboundEnforcementCap(6)
//!  9      DefaultMulticastPrimaryPort   FilterRawInboundCap(5) FilterRawOutboundCap(4)
//! 10      DefaultMulticastNotPrimaryPort EnhancedPort0(3) reserved(2:0)
//!                                   17  reserved
//!                                   18..20 MulticastFDBTop
//! ```
//!
//! Offsets match libibmad's `fields.c` (`IB_SW_*_F`).

use crate::bytes::{self, bits, get_u16, place, set_u16};
use crate::Result;

mod field {
    use crate::bytes::Field;

    pub(super) const LINEAR_FDB_CAP: Field = 0..2;
    pub(super) const RANDOM_FDB_CAP: Field = 2..4;
    pub(super) const MULTICAST_FDB_CAP: Field = 4..6;
    pub(super) const LINEAR_FDB_TOP: Field = 6..8;
    pub(super) const DEFAULT_PORT: usize = 8;
    pub(super) const DEFAULT_MCAST_PRIMARY_PORT: usize = 9;
    pub(super) const DEFAULT_MCAST_NOT_PRIMARY_PORT: usize = 10;
    /// LifeTimeValue(7:3), PortStateChange(2),
    /// OptimizedSLtoVLMappingProgramming(1:0).
    pub(super) const LIFE_STATE_SL2VL: usize = 11;
    pub(super) const LIDS_PER_PORT: Field = 12..14;
    pub(super) const PARTITION_ENFORCEMENT_CAP: Field = 14..16;
    /// InboundEnforcementCap(7), OutboundEnforcementCap(6),
    /// FilterRawInboundCap(5), FilterRawOutboundCap(4), EnhancedPort0(3),
    /// reserved(2:0).
    pub(super) const FLAGS: usize = 16;
    pub(super) const RESERVED_17: usize = 17;
    pub(super) const MULTICAST_FDB_TOP: Field = 18..20;
}

/// SwitchInfo, parsed: every field of the 20-byte attribute.
///
/// Sub-byte fields hold the value right-aligned; `emit` masks each to its
/// width. The `reserved_*` fields keep reserved bits so `emit` reproduces
/// the input; set them to 0 when building.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SwitchInfo {
    /// LinearFDBCap (bytes 0–1): number of linear forwarding table entries
    /// supported.
    pub linear_fdb_cap: u16,
    /// RandomFDBCap (bytes 2–3): number of random forwarding table entries
    /// supported.
    pub random_fdb_cap: u16,
    /// MulticastFDBCap (bytes 4–5): number of multicast forwarding table
    /// entries supported.
    pub multicast_fdb_cap: u16,
    /// LinearFDBTop (bytes 6–7): highest valid LID in the linear forwarding
    /// table.
    pub linear_fdb_top: u16,
    /// DefaultPort (byte 8): port for unicast packets not in the random
    /// forwarding table.
    pub default_port: u8,
    /// DefaultMulticastPrimaryPort (byte 9).
    pub default_multicast_primary_port: u8,
    /// DefaultMulticastNotPrimaryPort (byte 10).
    pub default_multicast_not_primary_port: u8,
    /// LifeTimeValue (byte 11, bits 7:3): packet lifetime in the switch,
    /// 4.096 µs × 2^value.
    pub life_time_value: u8,
    /// PortStateChange (byte 11, bit 2): a port changed state; an SM clears
    /// it by writing 1.
    pub port_state_change: bool,
    /// OptimizedSLtoVLMappingProgramming (byte 11, bits 1:0).
    pub optimized_sl2vl_mapping_programming: u8,
    /// LIDsPerPort (bytes 12–13): LIDs per port in the random forwarding
    /// table.
    pub lids_per_port: u16,
    /// PartitionEnforcementCap (bytes 14–15): P_Key table entries per
    /// external port.
    pub partition_enforcement_cap: u16,
    /// InboundEnforcementCap (byte 16, bit 7).
    pub inbound_enforcement_cap: bool,
    /// OutboundEnforcementCap (byte 16, bit 6).
    pub outbound_enforcement_cap: bool,
    /// FilterRawInboundCap (byte 16, bit 5).
    pub filter_raw_inbound_cap: bool,
    /// FilterRawOutboundCap (byte 16, bit 4).
    pub filter_raw_outbound_cap: bool,
    /// EnhancedPort0 (byte 16, bit 3): port 0 is an enhanced switch port.
    pub enhanced_port0: bool,
    /// Reserved (byte 16, bits 2:0).
    pub reserved_16: u8,
    /// Reserved (byte 17).
    pub reserved_17: u8,
    /// MulticastFDBTop (bytes 18–19): highest valid MLID in the multicast
    /// forwarding table (valid when PortInfo.CapabilityMask has
    /// IsMulticastFDBTopSupported).
    pub multicast_fdb_top: u16,
}

impl SwitchInfo {
    /// Size of SwitchInfo on the wire (the rest of the 64-byte SMP data area
    /// is reserved).
    pub const LEN: usize = field::MULTICAST_FDB_TOP.end;

    /// Parses the first [`SwitchInfo::LEN`] bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<SwitchInfo> {
        let b = bytes::array::<{ Self::LEN }>(buf)?;
        let life = b[field::LIFE_STATE_SL2VL];
        let flags = b[field::FLAGS];
        Ok(SwitchInfo {
            linear_fdb_cap: get_u16(&b[field::LINEAR_FDB_CAP]),
            random_fdb_cap: get_u16(&b[field::RANDOM_FDB_CAP]),
            multicast_fdb_cap: get_u16(&b[field::MULTICAST_FDB_CAP]),
            linear_fdb_top: get_u16(&b[field::LINEAR_FDB_TOP]),
            default_port: b[field::DEFAULT_PORT],
            default_multicast_primary_port: b[field::DEFAULT_MCAST_PRIMARY_PORT],
            default_multicast_not_primary_port: b[field::DEFAULT_MCAST_NOT_PRIMARY_PORT],
            life_time_value: bits(life, 3, 5),
            port_state_change: bits(life, 2, 1) != 0,
            optimized_sl2vl_mapping_programming: bits(life, 0, 2),
            lids_per_port: get_u16(&b[field::LIDS_PER_PORT]),
            partition_enforcement_cap: get_u16(&b[field::PARTITION_ENFORCEMENT_CAP]),
            inbound_enforcement_cap: bits(flags, 7, 1) != 0,
            outbound_enforcement_cap: bits(flags, 6, 1) != 0,
            filter_raw_inbound_cap: bits(flags, 5, 1) != 0,
            filter_raw_outbound_cap: bits(flags, 4, 1) != 0,
            enhanced_port0: bits(flags, 3, 1) != 0,
            reserved_16: bits(flags, 0, 3),
            reserved_17: b[field::RESERVED_17],
            multicast_fdb_top: get_u16(&b[field::MULTICAST_FDB_TOP]),
        })
    }

    /// Bytes [`SwitchInfo::emit`] writes: [`SwitchInfo::LEN`].
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes the first [`SwitchInfo::LEN`] bytes of `buf`. Sub-byte fields
    /// are masked to their width.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`SwitchInfo::LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        let b = bytes::array_mut::<{ Self::LEN }>(buf);
        let flag = |v: bool, shift: u32| place(u8::from(v), shift, 1);
        set_u16(&mut b[field::LINEAR_FDB_CAP], self.linear_fdb_cap);
        set_u16(&mut b[field::RANDOM_FDB_CAP], self.random_fdb_cap);
        set_u16(&mut b[field::MULTICAST_FDB_CAP], self.multicast_fdb_cap);
        set_u16(&mut b[field::LINEAR_FDB_TOP], self.linear_fdb_top);
        b[field::DEFAULT_PORT] = self.default_port;
        b[field::DEFAULT_MCAST_PRIMARY_PORT] = self.default_multicast_primary_port;
        b[field::DEFAULT_MCAST_NOT_PRIMARY_PORT] = self.default_multicast_not_primary_port;
        b[field::LIFE_STATE_SL2VL] = place(self.life_time_value, 3, 5)
            | flag(self.port_state_change, 2)
            | place(self.optimized_sl2vl_mapping_programming, 0, 2);
        set_u16(&mut b[field::LIDS_PER_PORT], self.lids_per_port);
        set_u16(
            &mut b[field::PARTITION_ENFORCEMENT_CAP],
            self.partition_enforcement_cap,
        );
        b[field::FLAGS] = flag(self.inbound_enforcement_cap, 7)
            | flag(self.outbound_enforcement_cap, 6)
            | flag(self.filter_raw_inbound_cap, 5)
            | flag(self.filter_raw_outbound_cap, 4)
            | flag(self.enhanced_port0, 3)
            | place(self.reserved_16, 0, 3);
        b[field::RESERVED_17] = self.reserved_17;
        set_u16(&mut b[field::MULTICAST_FDB_TOP], self.multicast_fdb_top);
    }

    /// Number of 64-entry LinearForwardingTable blocks in use:
    /// `LinearFDBTop / 64 + 1` (what `ibroute` reads).
    pub fn linear_fdb_blocks(&self) -> u16 {
        self.linear_fdb_top / 64 + 1
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::{check_offsets, check_round_trip, Case};

    /// SwitchInfo of a 36-port switch after OpenSM configured it: LFT cap
    /// 48K, MFT cap 4K, LinearFDBTop 0x0010, lifetime 18, enforcement caps
    /// set, MulticastFDBTop 0xc000.
    static SWITCH_BYTES: [u8; 64] = {
        let mut b = [0u8; 64];
        b[0] = 0xc0; // LinearFDBCap 49152
        b[4] = 0x10; // MulticastFDBCap 4096
        b[7] = 0x10; // LinearFDBTop 16
        b[11] = (18 << 3) | 0x04 | 0x01; // lifetime 18, state change, opt sl2vl 1
        b[13] = 0x01; // LIDsPerPort 1
        b[15] = 0x20; // PartitionEnforcementCap 32
        b[16] = 0xf8; // in/out enforcement, filter raw in/out, enhanced port 0
        b[18] = 0xc0; // MulticastFDBTop 0xc000
        b
    };

    fn expected() -> SwitchInfo {
        SwitchInfo {
            linear_fdb_cap: 49152,
            multicast_fdb_cap: 4096,
            linear_fdb_top: 16,
            life_time_value: 18,
            port_state_change: true,
            optimized_sl2vl_mapping_programming: 1,
            lids_per_port: 1,
            partition_enforcement_cap: 32,
            inbound_enforcement_cap: true,
            outbound_enforcement_cap: true,
            filter_raw_inbound_cap: true,
            filter_raw_outbound_cap: true,
            enhanced_port0: true,
            multicast_fdb_top: 0xc000,
            ..SwitchInfo::default()
        }
    }

    #[test]
    fn test_deconstruct() {
        let si = SwitchInfo::parse(&SWITCH_BYTES).unwrap();
        assert_eq!(si.linear_fdb_cap, 49152);
        assert_eq!(si.random_fdb_cap, 0);
        assert_eq!(si.multicast_fdb_cap, 4096);
        assert_eq!(si.linear_fdb_top, 16);
        assert_eq!(si.default_port, 0);
        assert_eq!(si.life_time_value, 18);
        assert!(si.port_state_change);
        assert_eq!(si.optimized_sl2vl_mapping_programming, 1);
        assert_eq!(si.lids_per_port, 1);
        assert_eq!(si.partition_enforcement_cap, 32);
        assert!(si.inbound_enforcement_cap);
        assert!(si.outbound_enforcement_cap);
        assert!(si.filter_raw_inbound_cap);
        assert!(si.filter_raw_outbound_cap);
        assert!(si.enhanced_port0);
        assert_eq!(si.reserved_16, 0);
        assert_eq!(si.multicast_fdb_top, 0xc000);
        assert_eq!(si.linear_fdb_blocks(), 1);
        assert_eq!(si, expected());
    }

    #[test]
    fn test_construct() {
        let si = expected();
        assert_eq!(si.buffer_len(), 20);
        let mut out = [0u8; 64];
        si.emit(&mut out);
        assert_eq!(out, SWITCH_BYTES);
        // Emit leaves bytes past LEN alone.
        let mut out = [0xa5u8; 64];
        si.emit(&mut out);
        assert_eq!(out[..20], SWITCH_BYTES[..20]);
        assert!(out[20..].iter().all(|&b| b == 0xa5));
    }

    #[test]
    #[should_panic(expected = "need 20 bytes, got 19")]
    fn emit_short_buffer_panics() {
        SwitchInfo::default().emit(&mut [0u8; 19]);
    }

    #[test]
    fn test_impossible_len_and_round_trip() {
        check_round_trip(
            SwitchInfo::LEN,
            SwitchInfo::parse,
            SwitchInfo::emit,
            0x5717_c41f_0000_0012,
        );
    }

    /// Sets one field to all ones and checks exactly which bits light up,
    /// against the IBA SwitchInfo table (and libibmad's `fields.c`); fields
    /// must not overlap and together with the reserved bits cover all 160.
    #[test]
    fn test_field_offsets() {
        #[rustfmt::skip]
        let cases: &[Case<'_, SwitchInfo>] = &[
            ("LinearFDBCap", |s| s.linear_fdb_cap = u16::MAX, 0, &[0xff; 2]),
            ("RandomFDBCap", |s| s.random_fdb_cap = u16::MAX, 2, &[0xff; 2]),
            ("MulticastFDBCap", |s| s.multicast_fdb_cap = u16::MAX, 4, &[0xff; 2]),
            ("LinearFDBTop", |s| s.linear_fdb_top = u16::MAX, 6, &[0xff; 2]),
            ("DefaultPort", |s| s.default_port = 0xff, 8, &[0xff]),
            ("DefaultMulticastPrimaryPort", |s| s.default_multicast_primary_port = 0xff, 9, &[0xff]),
            ("DefaultMulticastNotPrimaryPort", |s| s.default_multicast_not_primary_port = 0xff, 10, &[0xff]),
            ("LifeTimeValue", |s| s.life_time_value = 0xff, 11, &[0xf8]),
            ("PortStateChange", |s| s.port_state_change = true, 11, &[0x04]),
            ("OptimizedSLtoVLMappingProgramming", |s| s.optimized_sl2vl_mapping_programming = 0xff, 11, &[0x03]),
            ("LIDsPerPort", |s| s.lids_per_port = u16::MAX, 12, &[0xff; 2]),
            ("PartitionEnforcementCap", |s| s.partition_enforcement_cap = u16::MAX, 14, &[0xff; 2]),
            ("InboundEnforcementCap", |s| s.inbound_enforcement_cap = true, 16, &[0x80]),
            ("OutboundEnforcementCap", |s| s.outbound_enforcement_cap = true, 16, &[0x40]),
            ("FilterRawInboundCap", |s| s.filter_raw_inbound_cap = true, 16, &[0x20]),
            ("FilterRawOutboundCap", |s| s.filter_raw_outbound_cap = true, 16, &[0x10]),
            ("EnhancedPort0", |s| s.enhanced_port0 = true, 16, &[0x08]),
            ("reserved_16", |s| s.reserved_16 = 0xff, 16, &[0x07]),
            ("reserved_17", |s| s.reserved_17 = 0xff, 17, &[0xff]),
            ("MulticastFDBTop", |s| s.multicast_fdb_top = u16::MAX, 18, &[0xff; 2]),
        ];
        check_offsets(SwitchInfo::LEN, SwitchInfo::parse, SwitchInfo::emit, cases);
    }
}
