//! MCMemberRecord (SA attribute 0x38, IBA Vol 1, 15.2.5): 52 bytes (56
//! with padding in a GetTableResp).
//!
//! Offsets match libibmad's `fields.c` (`McastMem*`) and libibumad's
//! `umad_sa_mcm.h`; bit 7 is the most significant bit of a byte.
//!
//! ```text
//!  0..16  MGID
//! 16..32  PortGID
//! 32..36  Q_Key
//! 36..38  MLID
//! 38      MTUSelector(7:6) MTU(5:0)
//! 39      TClass
//! 40..42  P_Key
//! 42      RateSelector(7:6) Rate(5:0)
//! 43      PacketLifeTimeSelector(7:6) PacketLifeTime(5:0)
//! 44..48  SL(31:28) FlowLabel(27:8) HopLimit(7:0)
//! 48      Scope(7:4) JoinState(3:0)
//! 49      ProxyJoin(7) reserved(6:0)
//! 50..52  reserved
//! ```

use crate::bytes::{self, bits, get_u16, get_u32, place, set_u16, set_u32};
use crate::types::{Gid, Mtu, Rate, Selector};
use crate::Result;

mod field {
    use crate::bytes::Field;

    pub(super) const MGID: Field = 0..16;
    pub(super) const PORT_GID: Field = 16..32;
    pub(super) const Q_KEY: Field = 32..36;
    pub(super) const MLID: Field = 36..38;
    /// MTUSelector(7:6), MTU(5:0).
    pub(super) const MTU: usize = 38;
    pub(super) const TCLASS: usize = 39;
    pub(super) const P_KEY: Field = 40..42;
    /// RateSelector(7:6), Rate(5:0).
    pub(super) const RATE: usize = 42;
    /// PacketLifeTimeSelector(7:6), PacketLifeTime(5:0).
    pub(super) const PACKET_LIFE: usize = 43;
    /// SL(31:28), FlowLabel(27:8), HopLimit(7:0).
    pub(super) const SL_FLOW_HOP: Field = 44..48;
    /// Scope(7:4), JoinState(3:0).
    pub(super) const SCOPE_STATE: usize = 48;
    /// ProxyJoin(7), reserved(6:0).
    pub(super) const PROXY_JOIN: usize = 49;
    pub(super) const RESERVED: Field = 50..52;
}

/// MCMemberRecord ComponentMask bits, in IBA order (libibumad
/// `UMAD_SA_MCM_COMP_MASK_*`, opensm `IB_MCR_COMPMASK_*`).
pub mod comp {
    /// MGID.
    pub const MGID: u64 = 1 << 0;
    /// PortGID.
    pub const PORT_GID: u64 = 1 << 1;
    /// Q_Key.
    pub const Q_KEY: u64 = 1 << 2;
    /// MLID.
    pub const MLID: u64 = 1 << 3;
    /// MTUSelector.
    pub const MTU_SELECTOR: u64 = 1 << 4;
    /// MTU.
    pub const MTU: u64 = 1 << 5;
    /// TClass.
    pub const TCLASS: u64 = 1 << 6;
    /// P_Key.
    pub const P_KEY: u64 = 1 << 7;
    /// RateSelector.
    pub const RATE_SELECTOR: u64 = 1 << 8;
    /// Rate.
    pub const RATE: u64 = 1 << 9;
    /// PacketLifeTimeSelector.
    pub const PACKET_LIFE_TIME_SELECTOR: u64 = 1 << 10;
    /// PacketLifeTime.
    pub const PACKET_LIFE_TIME: u64 = 1 << 11;
    /// SL.
    pub const SL: u64 = 1 << 12;
    /// FlowLabel.
    pub const FLOW_LABEL: u64 = 1 << 13;
    /// HopLimit.
    pub const HOP_LIMIT: u64 = 1 << 14;
    /// Scope.
    pub const SCOPE: u64 = 1 << 15;
    /// JoinState.
    pub const JOIN_STATE: u64 = 1 << 16;
    /// ProxyJoin.
    pub const PROXY_JOIN: u64 = 1 << 17;
}

/// JoinState bits (`umad_sa_mcm.h`).
pub mod join_state {
    /// Full member.
    pub const FULL_MEMBER: u8 = 0x1;
    /// Non member.
    pub const NON_MEMBER: u8 = 0x2;
    /// Send-only non member.
    pub const SEND_ONLY_NON_MEMBER: u8 = 0x4;
    /// Send-only full member.
    pub const SEND_ONLY_FULL_MEMBER: u8 = 0x8;
}

/// Multicast address scopes (`umad_sa_mcm.h`).
pub mod scope {
    /// Link local.
    pub const LINK_LOCAL: u8 = 0x2;
    /// Site local.
    pub const SITE_LOCAL: u8 = 0x5;
    /// Organization local.
    pub const ORG_LOCAL: u8 = 0x8;
    /// Global.
    pub const GLOBAL: u8 = 0xe;
}

/// MCMemberRecord, parsed: a port's membership in a multicast group (or,
/// with an empty PortGID, the group itself).
///
/// Sub-byte fields hold the value right-aligned; `emit` masks each to its
/// width.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct McMemberRecord {
    /// Multicast GID of the group.
    pub mgid: Gid,
    /// GID of the member port.
    pub port_gid: Gid,
    /// Q_Key of the group.
    pub q_key: u32,
    /// Multicast LID of the group.
    pub mlid: u16,
    /// MTUSelector.
    pub mtu_selector: Selector,
    /// MTU (6-bit code).
    pub mtu: Mtu,
    /// TClass.
    pub tclass: u8,
    /// P_Key.
    pub p_key: u16,
    /// RateSelector.
    pub rate_selector: Selector,
    /// Rate (6-bit code).
    pub rate: Rate,
    /// PacketLifeTimeSelector.
    pub packet_life_time_selector: Selector,
    /// PacketLifeTime (6 bits).
    pub packet_life_time: u8,
    /// SL (4 bits).
    pub sl: u8,
    /// FlowLabel (20 bits).
    pub flow_label: u32,
    /// HopLimit.
    pub hop_limit: u8,
    /// Scope (4 bits); see [`scope`].
    pub scope: u8,
    /// JoinState (4 bits); see [`join_state`].
    pub join_state: u8,
    /// ProxyJoin (byte 49, bit 7).
    pub proxy_join: bool,
    /// Reserved (byte 49, bits 6:0), kept so `emit` reproduces the input.
    pub reserved_49: u8,
    /// Reserved (bytes 50–51), kept so `emit` reproduces the input.
    pub reserved_50: u16,
}

impl McMemberRecord {
    /// Size of MCMemberRecord in the IBA table.
    pub const LEN: usize = field::RESERVED.end;

    /// Parses the first [`McMemberRecord::LEN`] bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<McMemberRecord> {
        let b = bytes::array::<{ Self::LEN }>(buf)?;
        let sfh = get_u32(&b[field::SL_FLOW_HOP]);
        let ss = b[field::SCOPE_STATE];
        let pj = b[field::PROXY_JOIN];
        Ok(McMemberRecord {
            mgid: Gid::parse(&b[field::MGID])?,
            port_gid: Gid::parse(&b[field::PORT_GID])?,
            q_key: get_u32(&b[field::Q_KEY]),
            mlid: get_u16(&b[field::MLID]),
            mtu_selector: Selector::from(bits(b[field::MTU], 6, 2)),
            mtu: Mtu::from(bits(b[field::MTU], 0, 6)),
            tclass: b[field::TCLASS],
            p_key: get_u16(&b[field::P_KEY]),
            rate_selector: Selector::from(bits(b[field::RATE], 6, 2)),
            rate: Rate::from(bits(b[field::RATE], 0, 6)),
            packet_life_time_selector: Selector::from(bits(b[field::PACKET_LIFE], 6, 2)),
            packet_life_time: bits(b[field::PACKET_LIFE], 0, 6),
            sl: bits(sfh.to_be_bytes()[0], 4, 4),
            flow_label: (sfh >> 8) & 0xf_ffff,
            hop_limit: sfh.to_be_bytes()[3],
            scope: bits(ss, 4, 4),
            join_state: bits(ss, 0, 4),
            proxy_join: bits(pj, 7, 1) != 0,
            reserved_49: bits(pj, 0, 7),
            reserved_50: get_u16(&b[field::RESERVED]),
        })
    }

    /// Bytes [`McMemberRecord::emit`] writes: [`McMemberRecord::LEN`].
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes the first [`McMemberRecord::LEN`] bytes of `buf`, masking
    /// each sub-byte field to its width.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`McMemberRecord::LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        let b = bytes::array_mut::<{ Self::LEN }>(buf);
        self.mgid.emit(&mut b[field::MGID]);
        self.port_gid.emit(&mut b[field::PORT_GID]);
        set_u32(&mut b[field::Q_KEY], self.q_key);
        set_u16(&mut b[field::MLID], self.mlid);
        b[field::MTU] = place(self.mtu_selector.into(), 6, 2) | place(self.mtu.into(), 0, 6);
        b[field::TCLASS] = self.tclass;
        set_u16(&mut b[field::P_KEY], self.p_key);
        b[field::RATE] = place(self.rate_selector.into(), 6, 2) | place(self.rate.into(), 0, 6);
        b[field::PACKET_LIFE] =
            place(self.packet_life_time_selector.into(), 6, 2) | place(self.packet_life_time, 0, 6);
        let sfh = (u32::from(self.sl & 0x0f) << 28)
            | ((self.flow_label & 0xf_ffff) << 8)
            | u32::from(self.hop_limit);
        set_u32(&mut b[field::SL_FLOW_HOP], sfh);
        b[field::SCOPE_STATE] = place(self.scope, 4, 4) | place(self.join_state, 0, 4);
        b[field::PROXY_JOIN] =
            place(u8::from(self.proxy_join), 7, 1) | place(self.reserved_49, 0, 7);
        set_u16(&mut b[field::RESERVED], self.reserved_50);
    }
}

impl_sa_record!(McMemberRecord, super::attr_id::MCMEMBER_RECORD);

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::{check_comp_mask, check_offsets, check_round_trip, Case};

    /// The IPoIB broadcast group of P_Key 0xffff
    /// (ff12:401b:ffff::ffff:ffff), full member port fe80::2:c903:0:1:
    /// Q_Key 0x0b1b, MLID 0xc000, MTU =2048, rate =10 Gb/s, life =14,
    /// link-local scope.
    static RECORD_BYTES: [u8; 52] = [
        0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, // MGID
        0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xc9, 0x03, 0, 0, 0, 0x01, // PortGID
        0x00, 0x00, 0x0b, 0x1b, // Q_Key
        0xc0, 0x00, // MLID
        0x84, 0x00, // MTU =2048, TClass 0
        0xff, 0xff, // P_Key
        0x83, 0x8e, // rate =10G, life =14
        0x00, 0x00, 0x00, 0x00, // SL 0, FlowLabel 0, HopLimit 0
        0x21, 0x00, // scope link-local, full member; ProxyJoin 0
        0x00, 0x00, // reserved
    ];

    fn expected() -> McMemberRecord {
        McMemberRecord {
            mgid: Gid([
                0xff, 0x12, 0x40, 0x1b, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
            ]),
            port_gid: Gid::new(0xfe80_0000_0000_0000, 0x0002_c903_0000_0001),
            q_key: 0x0b1b,
            mlid: 0xc000,
            mtu_selector: Selector::Exactly,
            mtu: Mtu::Mtu2048,
            p_key: 0xffff,
            rate_selector: Selector::Exactly,
            rate: Rate::Gbps10,
            packet_life_time_selector: Selector::Exactly,
            packet_life_time: 14,
            scope: scope::LINK_LOCAL,
            join_state: join_state::FULL_MEMBER,
            ..McMemberRecord::default()
        }
    }

    #[test]
    fn test_deconstruct() {
        let r = McMemberRecord::parse(&RECORD_BYTES).unwrap();
        assert_eq!(r, expected());
        assert_eq!(r.mgid.to_string(), "ff12:401b:ffff::ffff:ffff");
    }

    #[test]
    fn test_construct() {
        let mut out = [0xa5u8; 56];
        expected().emit(&mut out);
        assert_eq!(out[..52], RECORD_BYTES);
        assert_eq!(out[52..], [0xa5; 4]);
        assert_eq!(expected().buffer_len(), 52);
    }

    #[test]
    fn test_sl_flow_hop_and_scope_state() {
        // As umad_sa_mcm.h packs them: (sl << 28) | (flow << 8) | hop;
        // scope in the high nibble, state in the low; ProxyJoin bit 7.
        let r = McMemberRecord {
            sl: 0xa,
            flow_label: 0x1_2345,
            hop_limit: 0x67,
            scope: scope::GLOBAL,
            join_state: join_state::SEND_ONLY_FULL_MEMBER,
            proxy_join: true,
            ..McMemberRecord::default()
        };
        let mut b = [0u8; 52];
        r.emit(&mut b);
        assert_eq!(b[44..48], [0xa1, 0x23, 0x45, 0x67]);
        assert_eq!(b[48..50], [0xe8, 0x80]);
        assert_eq!(McMemberRecord::parse(&b), Ok(r));
    }

    #[test]
    fn test_impossible_len_and_round_trip() {
        check_round_trip(
            McMemberRecord::LEN,
            McMemberRecord::parse,
            McMemberRecord::emit,
            38,
        );
    }

    #[test]
    fn test_field_offsets() {
        #[rustfmt::skip]
        let cases: &[Case<'_, McMemberRecord>] = &[
            ("MGID", |r| r.mgid = Gid([0xff; 16]), 0, &[0xff; 16]),
            ("PortGID", |r| r.port_gid = Gid([0xff; 16]), 16, &[0xff; 16]),
            ("Q_Key", |r| r.q_key = u32::MAX, 32, &[0xff; 4]),
            ("MLID", |r| r.mlid = u16::MAX, 36, &[0xff; 2]),
            ("MTUSelector", |r| r.mtu_selector = Selector::Unknown(0xff), 38, &[0xc0]),
            ("MTU", |r| r.mtu = Mtu::Unknown(0xff), 38, &[0x3f]),
            ("TClass", |r| r.tclass = 0xff, 39, &[0xff]),
            ("P_Key", |r| r.p_key = u16::MAX, 40, &[0xff; 2]),
            ("RateSelector", |r| r.rate_selector = Selector::Unknown(0xff), 42, &[0xc0]),
            ("Rate", |r| r.rate = Rate::Unknown(0xff), 42, &[0x3f]),
            ("PacketLifeTimeSelector", |r| r.packet_life_time_selector = Selector::Unknown(0xff), 43, &[0xc0]),
            ("PacketLifeTime", |r| r.packet_life_time = 0xff, 43, &[0x3f]),
            ("SL", |r| r.sl = 0xff, 44, &[0xf0]),
            ("FlowLabel", |r| r.flow_label = u32::MAX, 44, &[0x0f, 0xff, 0xff]),
            ("HopLimit", |r| r.hop_limit = 0xff, 47, &[0xff]),
            ("Scope", |r| r.scope = 0xff, 48, &[0xf0]),
            ("JoinState", |r| r.join_state = 0xff, 48, &[0x0f]),
            ("ProxyJoin", |r| r.proxy_join = true, 49, &[0x80]),
            ("reserved_49", |r| r.reserved_49 = 0xff, 49, &[0x7f]),
            ("reserved_50", |r| r.reserved_50 = u16::MAX, 50, &[0xff; 2]),
        ];
        check_offsets(
            McMemberRecord::LEN,
            McMemberRecord::parse,
            McMemberRecord::emit,
            cases,
        );
    }

    #[test]
    fn test_comp_mask() {
        #[rustfmt::skip]
        let bits = [
            ("MGID", comp::MGID), ("PortGID", comp::PORT_GID), ("Q_Key", comp::Q_KEY),
            ("MLID", comp::MLID), ("MTUSelector", comp::MTU_SELECTOR), ("MTU", comp::MTU),
            ("TClass", comp::TCLASS), ("P_Key", comp::P_KEY),
            ("RateSelector", comp::RATE_SELECTOR), ("Rate", comp::RATE),
            ("PacketLifeTimeSelector", comp::PACKET_LIFE_TIME_SELECTOR),
            ("PacketLifeTime", comp::PACKET_LIFE_TIME), ("SL", comp::SL),
            ("FlowLabel", comp::FLOW_LABEL), ("HopLimit", comp::HOP_LIMIT),
            ("Scope", comp::SCOPE), ("JoinState", comp::JOIN_STATE),
            ("ProxyJoin", comp::PROXY_JOIN),
        ];
        check_comp_mask(&bits);
    }
}
