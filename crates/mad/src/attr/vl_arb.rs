//! VLArbitrationTable (SMP attribute 0x18, IBA Vol 1, 14.2.5.9): one
//! 64-byte block of 32 {VL, weight} entries.
//!
//! ```text
//!  entry i (bytes 2i, 2i+1): reserved(7:4) VL(3:0) | Weight(7:0)
//! ```
//!
//! Attribute modifier: bits 31:16 select the block ([`VlArbBlock`]), bits
//! 7:0 the port on switches; see [`vl_arb_attr_mod`]. PortInfo's
//! VLArbitrationLowCap/HighCap say how many entries each table has.

use core::fmt;

use crate::bytes::{self, bits, place};
use crate::Result;

mod field {
    use crate::bytes::Field;

    /// The 32 entries, 2 bytes each.
    pub(super) const ENTRIES: Field = 0..64;
    /// Bytes per entry.
    pub(super) const ENTRY_LEN: usize = 2;
    /// Within an entry: reserved(7:4), VL(3:0).
    pub(super) const VL: usize = 0;
    /// Within an entry: the weight.
    pub(super) const WEIGHT: usize = 1;
}

enum_with_unknown! {
    /// Which 32 entries a VLArbitrationTable block holds (attribute
    /// modifier bits 31:16).
    pub enum VlArbBlock(u16) {
        /// Low-priority table, entries 0–31.
        LowLower = 1,
        /// Low-priority table, entries 32–63.
        LowUpper = 2,
        /// High-priority table, entries 0–31.
        HighLower = 3,
        /// High-priority table, entries 32–63.
        HighUpper = 4,
    }
}

impl fmt::Display for VlArbBlock {
    /// `Low 0-31`, `Low 32-63`, `High 0-31`, `High 32-63`, or `?(n)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VlArbBlock::LowLower => f.write_str("Low 0-31"),
            VlArbBlock::LowUpper => f.write_str("Low 32-63"),
            VlArbBlock::HighLower => f.write_str("High 0-31"),
            VlArbBlock::HighUpper => f.write_str("High 32-63"),
            VlArbBlock::Unknown(n) => write!(f, "?({n})"),
        }
    }
}

/// The VLArbitrationTable attribute modifier for `block` of switch port
/// `port` (`block << 16 | port`); CAs and routers ignore the port.
pub fn vl_arb_attr_mod(block: VlArbBlock, port: u8) -> u32 {
    u32::from(u16::from(block)) << 16 | u32::from(port)
}

/// One VLArbitrationTable entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct VlArbEntry {
    /// Reserved (bits 7:4 of the first byte), kept for round trips.
    pub reserved: u8,
    /// The virtual lane (4 bits).
    pub vl: u8,
    /// Units of 64 bytes the VL may send in turn; 0 skips the entry.
    pub weight: u8,
}

/// VLArbitrationTable, parsed: one block of
/// [`VlArbTable::ENTRIES_PER_BLOCK`] entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct VlArbTable {
    /// The entries of this block.
    pub entries: [VlArbEntry; 32],
}

impl VlArbTable {
    /// Size of one VLArbitrationTable block on the wire (the whole SMP
    /// data area).
    pub const LEN: usize = field::ENTRIES.end;

    /// Entries per block.
    pub const ENTRIES_PER_BLOCK: usize = Self::LEN / field::ENTRY_LEN;

    /// Parses the first [`VlArbTable::LEN`] bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<VlArbTable> {
        let b = bytes::array::<{ Self::LEN }>(buf)?;
        let mut entries = [VlArbEntry::default(); 32];
        for (e, chunk) in entries
            .iter_mut()
            .zip(b[field::ENTRIES].chunks_exact(field::ENTRY_LEN))
        {
            *e = VlArbEntry {
                reserved: bits(chunk[field::VL], 4, 4),
                vl: bits(chunk[field::VL], 0, 4),
                weight: chunk[field::WEIGHT],
            };
        }
        Ok(VlArbTable { entries })
    }

    /// Bytes [`VlArbTable::emit`] writes: [`VlArbTable::LEN`].
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes all 64 bytes into the start of `buf`; `vl` and `reserved`
    /// are masked to 4 bits.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`VlArbTable::LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        let b = bytes::array_mut::<{ Self::LEN }>(buf);
        for (e, chunk) in self
            .entries
            .iter()
            .zip(b[field::ENTRIES].chunks_exact_mut(field::ENTRY_LEN))
        {
            chunk[field::VL] = place(e.reserved, 4, 4) | place(e.vl, 0, 4);
            chunk[field::WEIGHT] = e.weight;
        }
    }

    /// The entries with a non-zero weight, with their position in the
    /// block.
    pub fn active(&self) -> impl Iterator<Item = (usize, VlArbEntry)> + '_ {
        self.entries
            .iter()
            .copied()
            .enumerate()
            .filter(|(_, e)| e.weight != 0)
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::{check_round_trip, check_table_offsets, Table};

    /// Low-priority block 1 of a VL0–3 port: VL n weight 64 for n < 4,
    /// then one entry for VL 7 weight 255.
    static BLOCK_BYTES: [u8; 64] = {
        let mut b = [0u8; 64];
        b[0] = 0;
        b[1] = 64;
        b[2] = 1;
        b[3] = 64;
        b[4] = 2;
        b[5] = 64;
        b[6] = 3;
        b[7] = 64;
        b[8] = 7;
        b[9] = 255;
        b
    };

    #[test]
    fn test_deconstruct() {
        let t = VlArbTable::parse(&BLOCK_BYTES).unwrap();
        for i in 0..4 {
            assert_eq!(
                t.entries[i],
                VlArbEntry {
                    reserved: 0,
                    vl: i as u8,
                    weight: 64
                }
            );
        }
        assert_eq!(t.entries[4].vl, 7);
        assert_eq!(t.entries[4].weight, 255);
        assert_eq!(t.entries[5], VlArbEntry::default());
        assert_eq!(t.active().count(), 5);
    }

    #[test]
    fn test_construct() {
        let mut t = VlArbTable::default();
        for (i, e) in t.entries.iter_mut().take(4).enumerate() {
            e.vl = i as u8;
            e.weight = 64;
        }
        t.entries[4] = VlArbEntry {
            reserved: 0,
            vl: 7,
            weight: 255,
        };
        assert_eq!(t.buffer_len(), 64);
        let mut out = [0xa5u8; 64];
        t.emit(&mut out);
        assert_eq!(out, BLOCK_BYTES);
    }

    #[test]
    #[should_panic(expected = "need 64 bytes, got 0")]
    fn emit_short_buffer_panics() {
        VlArbTable::default().emit(&mut []);
    }

    #[test]
    fn test_impossible_len_and_round_trip() {
        check_round_trip(
            VlArbTable::LEN,
            VlArbTable::parse,
            VlArbTable::emit,
            0x71a6_0000_0000_0018,
        );
    }

    #[test]
    fn test_field_offsets() {
        check_table_offsets(
            VlArbTable::LEN,
            VlArbTable::parse,
            VlArbTable::emit,
            &[],
            Table {
                count: VlArbTable::ENTRIES_PER_BLOCK,
                stride: 2,
                fields: &[
                    ("reserved", |t, i| t.entries[i].reserved = 0xff, 0, &[0xf0]),
                    ("VL", |t, i| t.entries[i].vl = 0xff, 0, &[0x0f]),
                    ("Weight", |t, i| t.entries[i].weight = 0xff, 1, &[0xff]),
                ],
            },
        );
    }

    #[test]
    fn attr_mod_and_block() {
        assert_eq!(vl_arb_attr_mod(VlArbBlock::LowLower, 0), 0x0001_0000);
        assert_eq!(vl_arb_attr_mod(VlArbBlock::HighUpper, 7), 0x0004_0007);
        assert_eq!(VlArbBlock::from(3), VlArbBlock::HighLower);
        assert_eq!(VlArbBlock::HighLower.to_string(), "High 0-31");
        assert_eq!(VlArbBlock::LowUpper.to_string(), "Low 32-63");
        assert_eq!(VlArbBlock::from(9).to_string(), "?(9)");
        for v in 0..=8u16 {
            assert_eq!(u16::from(VlArbBlock::from(v)), v);
        }
    }
}
