//! PathRecord (SA attribute 0x35, IBA Vol 1, 15.2.5): 64 bytes.
//!
//! Offsets match libibmad's `fields.c` (`PathRec*`) and opensm's
//! `ib_path_rec_t`; bit 7 is the most significant bit of a byte.
//!
//! ```text
//!  0..8   ServiceID
//!  8..24  DGID
//! 24..40  SGID
//! 40..42  DLID
//! 42..44  SLID
//! 44..48  RawTraffic(31) reserved(30:28) FlowLabel(27:8) HopLimit(7:0)
//! 48      TClass
//! 49      Reversible(7) NumbPath(6:0)
//! 50..52  P_Key
//! 52..54  QoSClass(15:4) SL(3:0)
//! 54      MTUSelector(7:6) MTU(5:0)
//! 55      RateSelector(7:6) Rate(5:0)
//! 56      PacketLifeTimeSelector(7:6) PacketLifeTime(5:0)
//! 57      Preference
//! 58..64  reserved
//! ```

use crate::bytes::{self, bits, get_u16, get_u32, get_u64, place, set_u16, set_u32, set_u64};
use crate::types::{Gid, Mtu, Rate, Selector};
use crate::Result;

mod field {
    use crate::bytes::Field;

    pub(super) const SERVICE_ID: Field = 0..8;
    pub(super) const DGID: Field = 8..24;
    pub(super) const SGID: Field = 24..40;
    pub(super) const DLID: Field = 40..42;
    pub(super) const SLID: Field = 42..44;
    /// RawTraffic(31), reserved(30:28), FlowLabel(27:8), HopLimit(7:0).
    pub(super) const RAW_FLOW_HOP: Field = 44..48;
    pub(super) const TCLASS: usize = 48;
    /// Reversible(7), NumbPath(6:0).
    pub(super) const REVERSIBLE_NUMB_PATH: usize = 49;
    pub(super) const P_KEY: Field = 50..52;
    /// QoSClass(15:4), SL(3:0).
    pub(super) const QOS_SL: Field = 52..54;
    /// MTUSelector(7:6), MTU(5:0).
    pub(super) const MTU: usize = 54;
    /// RateSelector(7:6), Rate(5:0).
    pub(super) const RATE: usize = 55;
    /// PacketLifeTimeSelector(7:6), PacketLifeTime(5:0).
    pub(super) const PACKET_LIFE: usize = 56;
    pub(super) const PREFERENCE: usize = 57;
    pub(super) const RESERVED: Field = 58..64;
}

/// PathRecord ComponentMask bits, in IBA order (opensm `IB_PR_COMPMASK_*`,
/// the kernel's `IB_SA_PATH_REC_*`). ServiceID takes two components (it
/// replaced two 32-bit reserved fields); use [`comp::SERVICE_ID`] for both.
pub mod comp {
    /// ServiceID, upper 32 bits.
    pub const SERVICE_ID_MSB: u64 = 1 << 0;
    /// ServiceID, lower 32 bits.
    pub const SERVICE_ID_LSB: u64 = 1 << 1;
    /// ServiceID (both components).
    pub const SERVICE_ID: u64 = SERVICE_ID_MSB | SERVICE_ID_LSB;
    /// DGID.
    pub const DGID: u64 = 1 << 2;
    /// SGID.
    pub const SGID: u64 = 1 << 3;
    /// DLID.
    pub const DLID: u64 = 1 << 4;
    /// SLID.
    pub const SLID: u64 = 1 << 5;
    /// RawTraffic.
    pub const RAW_TRAFFIC: u64 = 1 << 6;
    /// Reserved (bits 30:28 of the word at byte 44).
    pub const RESERVED: u64 = 1 << 7;
    /// FlowLabel.
    pub const FLOW_LABEL: u64 = 1 << 8;
    /// HopLimit.
    pub const HOP_LIMIT: u64 = 1 << 9;
    /// TClass.
    pub const TCLASS: u64 = 1 << 10;
    /// Reversible.
    pub const REVERSIBLE: u64 = 1 << 11;
    /// NumbPath.
    pub const NUMB_PATH: u64 = 1 << 12;
    /// P_Key.
    pub const P_KEY: u64 = 1 << 13;
    /// QoSClass.
    pub const QOS_CLASS: u64 = 1 << 14;
    /// SL.
    pub const SL: u64 = 1 << 15;
    /// MTUSelector.
    pub const MTU_SELECTOR: u64 = 1 << 16;
    /// MTU.
    pub const MTU: u64 = 1 << 17;
    /// RateSelector.
    pub const RATE_SELECTOR: u64 = 1 << 18;
    /// Rate.
    pub const RATE: u64 = 1 << 19;
    /// PacketLifeTimeSelector.
    pub const PACKET_LIFE_TIME_SELECTOR: u64 = 1 << 20;
    /// PacketLifeTime.
    pub const PACKET_LIFE_TIME: u64 = 1 << 21;
    /// Preference.
    pub const PREFERENCE: u64 = 1 << 22;
}

/// PathRecord, parsed.
///
/// Sub-byte fields hold the value right-aligned; `emit` masks each to its
/// width (a `Mtu`/`Rate` code to 6 bits, a selector to 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PathRecord {
    /// ServiceID (bytes 0–7; reserved before IBA 1.2).
    pub service_id: u64,
    /// Destination GID.
    pub dgid: Gid,
    /// Source GID.
    pub sgid: Gid,
    /// Destination LID.
    pub dlid: u16,
    /// Source LID.
    pub slid: u16,
    /// RawTraffic (byte 44, bit 7): the path is for raw packets.
    pub raw_traffic: bool,
    /// Reserved (byte 44, bits 6:4), kept so `emit` reproduces the input.
    pub reserved_44: u8,
    /// FlowLabel (20 bits).
    pub flow_label: u32,
    /// HopLimit.
    pub hop_limit: u8,
    /// TClass.
    pub tclass: u8,
    /// Reversible (byte 49, bit 7).
    pub reversible: bool,
    /// NumbPath (byte 49, bits 6:0): in a query, the most paths to return.
    pub numb_path: u8,
    /// P_Key.
    pub p_key: u16,
    /// QoSClass (12 bits).
    pub qos_class: u16,
    /// SL (4 bits).
    pub sl: u8,
    /// MTUSelector.
    pub mtu_selector: Selector,
    /// MTU (6-bit code).
    pub mtu: Mtu,
    /// RateSelector.
    pub rate_selector: Selector,
    /// Rate (6-bit code).
    pub rate: Rate,
    /// PacketLifeTimeSelector.
    pub packet_life_time_selector: Selector,
    /// PacketLifeTime (6 bits; 4.096 µs × 2^value).
    pub packet_life_time: u8,
    /// Preference (0 = most preferred).
    pub preference: u8,
    /// Reserved (bytes 58–63), kept so `emit` reproduces the input.
    pub reserved_58: [u8; 6],
}

impl PathRecord {
    /// Size of PathRecord in the IBA table.
    pub const LEN: usize = field::RESERVED.end;

    /// Parses the first [`PathRecord::LEN`] bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<PathRecord> {
        let b = bytes::array::<{ Self::LEN }>(buf)?;
        let word = get_u32(&b[field::RAW_FLOW_HOP]);
        let rev = b[field::REVERSIBLE_NUMB_PATH];
        let qos_sl = get_u16(&b[field::QOS_SL]);
        let mut reserved_58 = [0u8; 6];
        reserved_58.copy_from_slice(&b[field::RESERVED]);
        Ok(PathRecord {
            service_id: get_u64(&b[field::SERVICE_ID]),
            dgid: Gid::parse(&b[field::DGID])?,
            sgid: Gid::parse(&b[field::SGID])?,
            dlid: get_u16(&b[field::DLID]),
            slid: get_u16(&b[field::SLID]),
            raw_traffic: word >> 31 != 0,
            // Masked to 3 bits, so the cast is lossless.
            reserved_44: ((word >> 28) & 0x7) as u8,
            flow_label: (word >> 8) & 0xf_ffff,
            hop_limit: word.to_be_bytes()[3],
            tclass: b[field::TCLASS],
            reversible: bits(rev, 7, 1) != 0,
            numb_path: bits(rev, 0, 7),
            p_key: get_u16(&b[field::P_KEY]),
            qos_class: qos_sl >> 4,
            sl: qos_sl.to_be_bytes()[1] & 0x0f,
            mtu_selector: Selector::from(bits(b[field::MTU], 6, 2)),
            mtu: Mtu::from(bits(b[field::MTU], 0, 6)),
            rate_selector: Selector::from(bits(b[field::RATE], 6, 2)),
            rate: Rate::from(bits(b[field::RATE], 0, 6)),
            packet_life_time_selector: Selector::from(bits(b[field::PACKET_LIFE], 6, 2)),
            packet_life_time: bits(b[field::PACKET_LIFE], 0, 6),
            preference: b[field::PREFERENCE],
            reserved_58,
        })
    }

    /// Bytes [`PathRecord::emit`] writes: [`PathRecord::LEN`].
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes the first [`PathRecord::LEN`] bytes of `buf`, masking each
    /// sub-byte field to its width.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`PathRecord::LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        let b = bytes::array_mut::<{ Self::LEN }>(buf);
        set_u64(&mut b[field::SERVICE_ID], self.service_id);
        self.dgid.emit(&mut b[field::DGID]);
        self.sgid.emit(&mut b[field::SGID]);
        set_u16(&mut b[field::DLID], self.dlid);
        set_u16(&mut b[field::SLID], self.slid);
        let word = (u32::from(self.raw_traffic) << 31)
            | (u32::from(self.reserved_44 & 0x7) << 28)
            | ((self.flow_label & 0xf_ffff) << 8)
            | u32::from(self.hop_limit);
        set_u32(&mut b[field::RAW_FLOW_HOP], word);
        b[field::TCLASS] = self.tclass;
        b[field::REVERSIBLE_NUMB_PATH] =
            place(u8::from(self.reversible), 7, 1) | place(self.numb_path, 0, 7);
        set_u16(&mut b[field::P_KEY], self.p_key);
        set_u16(
            &mut b[field::QOS_SL],
            ((self.qos_class & 0x0fff) << 4) | u16::from(self.sl & 0x0f),
        );
        b[field::MTU] = place(self.mtu_selector.into(), 6, 2) | place(self.mtu.into(), 0, 6);
        b[field::RATE] = place(self.rate_selector.into(), 6, 2) | place(self.rate.into(), 0, 6);
        b[field::PACKET_LIFE] =
            place(self.packet_life_time_selector.into(), 6, 2) | place(self.packet_life_time, 0, 6);
        b[field::PREFERENCE] = self.preference;
        b[field::RESERVED].copy_from_slice(&self.reserved_58);
    }
}

impl_sa_record!(PathRecord, super::attr_id::PATH_RECORD);

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::{check_comp_mask, check_offsets, check_round_trip, Case};

    /// A PathRecord from LID 1 to LID 2 on the default subnet: P_Key
    /// 0xffff, SL 0, MTU exactly 2048, rate exactly 40 Gb/s, packet life
    /// time exactly 18, reversible, hop limit 0, one path.
    static PATH_BYTES: [u8; 64] = [
        0, 0, 0, 0, 0, 0, 0, 0, // ServiceID
        0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xc9, 0x03, 0, 0, 0, 0x02, // DGID
        0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xc9, 0x03, 0, 0, 0, 0x01, // SGID
        0x00, 0x02, 0x00, 0x01, // DLID 2, SLID 1
        0x00, 0x00, 0x00, 0x00, // RawTraffic 0, FlowLabel 0, HopLimit 0
        0x00, 0x81, // TClass 0, Reversible 1 + NumbPath 1
        0xff, 0xff, // P_Key
        0x00, 0x00, // QoSClass 0, SL 0
        0x84, 0x87, 0x92, // MTU =2048, rate =40G, life =18
        0x00, // Preference
        0, 0, 0, 0, 0, 0, // reserved
    ];

    fn expected() -> PathRecord {
        PathRecord {
            dgid: Gid::new(0xfe80_0000_0000_0000, 0x0002_c903_0000_0002),
            sgid: Gid::new(0xfe80_0000_0000_0000, 0x0002_c903_0000_0001),
            dlid: 2,
            slid: 1,
            reversible: true,
            numb_path: 1,
            p_key: 0xffff,
            mtu_selector: Selector::Exactly,
            mtu: Mtu::Mtu2048,
            rate_selector: Selector::Exactly,
            rate: Rate::Gbps40,
            packet_life_time_selector: Selector::Exactly,
            packet_life_time: 18,
            ..PathRecord::default()
        }
    }

    #[test]
    fn test_deconstruct() {
        let pr = PathRecord::parse(&PATH_BYTES).unwrap();
        assert_eq!(pr, expected());
        assert_eq!(pr.mtu.bytes(), Some(2048));
        assert_eq!(pr.rate.gbps(), Some(40.0));
        assert_eq!(pr.sgid.to_string(), "fe80::2:c903:0:1");
    }

    #[test]
    fn test_construct() {
        let mut out = [0xa5u8; 64];
        expected().emit(&mut out);
        assert_eq!(out, PATH_BYTES);
        assert_eq!(expected().buffer_len(), 64);
    }

    #[test]
    fn test_spec_values() {
        // Distinct values in every field, checked against the byte and bit
        // positions of the IBA table (and fields.c: NumbPath at bit 393,
        // SL at bit 428).
        let pr = PathRecord {
            service_id: 0x1122_3344_5566_7788,
            dlid: 0xabcd,
            slid: 0x1234,
            raw_traffic: true,
            flow_label: 0xf_1234,
            hop_limit: 0x40,
            tclass: 0x5a,
            numb_path: 0x7f,
            qos_class: 0xabc,
            sl: 0xd,
            mtu_selector: Selector::LessThan,
            mtu: Mtu::Mtu4096,
            rate_selector: Selector::Largest,
            rate: Rate::Gbps100,
            packet_life_time_selector: Selector::GreaterThan,
            packet_life_time: 0x3f,
            preference: 7,
            ..PathRecord::default()
        };
        let mut b = [0u8; 64];
        pr.emit(&mut b);
        assert_eq!(b[0..8], [0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]);
        assert_eq!(b[40..44], [0xab, 0xcd, 0x12, 0x34]);
        assert_eq!(b[44..48], [0x8f, 0x12, 0x34, 0x40]);
        assert_eq!(b[48..50], [0x5a, 0x7f]);
        assert_eq!(b[52..54], [0xab, 0xcd]);
        assert_eq!(b[54..58], [0x45, 0xd0, 0x3f, 0x07]);
        assert_eq!(PathRecord::parse(&b), Ok(pr));
    }

    #[test]
    fn test_impossible_len_and_round_trip() {
        check_round_trip(PathRecord::LEN, PathRecord::parse, PathRecord::emit, 35);
    }

    #[test]
    fn test_field_offsets() {
        #[rustfmt::skip]
        let cases: &[Case<'_, PathRecord>] = &[
            ("ServiceID", |r| r.service_id = u64::MAX, 0, &[0xff; 8]),
            ("DGID", |r| r.dgid = Gid([0xff; 16]), 8, &[0xff; 16]),
            ("SGID", |r| r.sgid = Gid([0xff; 16]), 24, &[0xff; 16]),
            ("DLID", |r| r.dlid = u16::MAX, 40, &[0xff; 2]),
            ("SLID", |r| r.slid = u16::MAX, 42, &[0xff; 2]),
            ("RawTraffic", |r| r.raw_traffic = true, 44, &[0x80]),
            ("reserved_44", |r| r.reserved_44 = 0xff, 44, &[0x70]),
            ("FlowLabel", |r| r.flow_label = u32::MAX, 44, &[0x0f, 0xff, 0xff]),
            ("HopLimit", |r| r.hop_limit = 0xff, 47, &[0xff]),
            ("TClass", |r| r.tclass = 0xff, 48, &[0xff]),
            ("Reversible", |r| r.reversible = true, 49, &[0x80]),
            ("NumbPath", |r| r.numb_path = 0xff, 49, &[0x7f]),
            ("P_Key", |r| r.p_key = u16::MAX, 50, &[0xff; 2]),
            ("QoSClass", |r| r.qos_class = u16::MAX, 52, &[0xff, 0xf0]),
            ("SL", |r| r.sl = 0xff, 53, &[0x0f]),
            ("MTUSelector", |r| r.mtu_selector = Selector::Unknown(0xff), 54, &[0xc0]),
            ("MTU", |r| r.mtu = Mtu::Unknown(0xff), 54, &[0x3f]),
            ("RateSelector", |r| r.rate_selector = Selector::Unknown(0xff), 55, &[0xc0]),
            ("Rate", |r| r.rate = Rate::Unknown(0xff), 55, &[0x3f]),
            ("PacketLifeTimeSelector", |r| r.packet_life_time_selector = Selector::Unknown(0xff), 56, &[0xc0]),
            ("PacketLifeTime", |r| r.packet_life_time = 0xff, 56, &[0x3f]),
            ("Preference", |r| r.preference = 0xff, 57, &[0xff]),
            ("reserved_58", |r| r.reserved_58 = [0xff; 6], 58, &[0xff; 6]),
        ];
        check_offsets(PathRecord::LEN, PathRecord::parse, PathRecord::emit, cases);
    }

    #[test]
    fn test_comp_mask() {
        #[rustfmt::skip]
        let bits = [
            ("ServiceID (MSB)", comp::SERVICE_ID_MSB), ("ServiceID (LSB)", comp::SERVICE_ID_LSB),
            ("DGID", comp::DGID), ("SGID", comp::SGID), ("DLID", comp::DLID), ("SLID", comp::SLID),
            ("RawTraffic", comp::RAW_TRAFFIC), ("Reserved", comp::RESERVED),
            ("FlowLabel", comp::FLOW_LABEL), ("HopLimit", comp::HOP_LIMIT),
            ("TClass", comp::TCLASS), ("Reversible", comp::REVERSIBLE),
            ("NumbPath", comp::NUMB_PATH), ("P_Key", comp::P_KEY),
            ("QoSClass", comp::QOS_CLASS), ("SL", comp::SL),
            ("MTUSelector", comp::MTU_SELECTOR), ("MTU", comp::MTU),
            ("RateSelector", comp::RATE_SELECTOR), ("Rate", comp::RATE),
            ("PacketLifeTimeSelector", comp::PACKET_LIFE_TIME_SELECTOR),
            ("PacketLifeTime", comp::PACKET_LIFE_TIME), ("Preference", comp::PREFERENCE),
        ];
        check_comp_mask(&bits);
        assert_eq!(comp::SERVICE_ID, 0x3);
    }
}
