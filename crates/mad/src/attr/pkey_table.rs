//! P_KeyTable (SMP attribute 0x16, IBA Vol 1, 14.2.5.7): one 64-byte block
//! of 32 partition keys, plus P_Key helpers.
//!
//! Attribute modifier: bits 15:0 are the block number (block `n` holds
//! table entries `32n..32n+32`); on switches bits 31:16 are the port number
//! (see [`pkey_table_attr_mod`]). NodeInfo.PartitionCap (CAs, switch port 0)
//! or SwitchInfo.PartitionEnforcementCap (switch external ports) says how
//! many entries a port has.
//!
//! A P_Key is 16 bits: bit 15 is the membership type (1 = full member,
//! 0 = limited member), bits 14:0 the partition number ("base"). Base 0 is
//! invalid: 0x0000 and 0x8000 are never valid keys.

use crate::bytes::{self, get_u16, set_u16};
use crate::Result;

mod field {
    use crate::bytes::Field;

    /// The 32 P_Keys, 2 bytes each.
    pub(super) const PKEYS: Field = 0..64;
    /// Bytes per P_Key.
    pub(super) const PKEY_LEN: usize = 2;
}

/// Bit 15 of a P_Key: set for full membership, clear for limited.
pub const PKEY_FULL_MEMBER: u16 = 0x8000;

/// Bits 14:0 of a P_Key: the partition number.
pub const PKEY_BASE_MASK: u16 = 0x7fff;

/// The default partition key (full member of the default partition).
pub const DEFAULT_PKEY: u16 = 0xffff;

/// Whether `pkey` has the full-membership bit (0x8000) set.
pub const fn pkey_is_full_member(pkey: u16) -> bool {
    pkey & PKEY_FULL_MEMBER != 0
}

/// The partition number of `pkey` (the low 15 bits), without the
/// membership bit.
pub const fn pkey_base(pkey: u16) -> u16 {
    pkey & PKEY_BASE_MASK
}

/// Whether `pkey` is a valid key: its partition number is not 0.
pub const fn pkey_is_valid(pkey: u16) -> bool {
    pkey_base(pkey) != 0
}

/// Whether two P_Keys match for communication (IBA 10.9): same partition
/// number, valid, and at least one of them a full member.
pub const fn pkeys_match(a: u16, b: u16) -> bool {
    pkey_is_valid(a)
        && pkey_base(a) == pkey_base(b)
        && (pkey_is_full_member(a) || pkey_is_full_member(b))
}

/// The P_KeyTable attribute modifier for `block` of switch port `port`
/// (`port << 16 | block`); for CAs and routers the port bits are ignored
/// and should be 0.
pub const fn pkey_table_attr_mod(port: u16, block: u16) -> u32 {
    (port as u32) << 16 | block as u32
}

/// P_KeyTable, parsed: one block of [`PKeyTable::PKEYS_PER_BLOCK`] keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PKeyTable {
    /// The keys of this block; entry `i` is table index `block * 32 + i`.
    /// Unused entries are 0.
    pub pkeys: [u16; 32],
}

impl PKeyTable {
    /// Size of one P_KeyTable block on the wire (the whole SMP data area).
    pub const LEN: usize = field::PKEYS.end;

    /// P_Keys per block.
    pub const PKEYS_PER_BLOCK: usize = Self::LEN / field::PKEY_LEN;

    /// Parses the first [`PKeyTable::LEN`] bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<PKeyTable> {
        let b = bytes::array::<{ Self::LEN }>(buf)?;
        Ok(PKeyTable {
            pkeys: bytes::get_array(&b[field::PKEYS], get_u16),
        })
    }

    /// Bytes [`PKeyTable::emit`] writes: [`PKeyTable::LEN`].
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes all 64 bytes into the start of `buf`.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`PKeyTable::LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        let b = bytes::array_mut::<{ Self::LEN }>(buf);
        bytes::set_array(&mut b[field::PKEYS], &self.pkeys, set_u16);
    }

    /// The block number (attribute modifier bits 15:0) and the position
    /// within the block of table index `index`.
    pub fn block_for_index(index: u16) -> (u16, usize) {
        let per = Self::PKEYS_PER_BLOCK as u16;
        (index / per, usize::from(index % per))
    }

    /// The valid keys of this block ([`pkey_is_valid`]) with their position
    /// in the block.
    pub fn valid(&self) -> impl Iterator<Item = (usize, u16)> + '_ {
        self.pkeys
            .iter()
            .copied()
            .enumerate()
            .filter(|&(_, k)| pkey_is_valid(k))
    }

    /// The position of the first entry with the same partition number as
    /// `pkey` (membership bit ignored), if any.
    pub fn find_base(&self, pkey: u16) -> Option<usize> {
        if !pkey_is_valid(pkey) {
            return None;
        }
        self.pkeys
            .iter()
            .position(|&k| pkey_base(k) == pkey_base(pkey))
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::{check_round_trip, check_table_offsets, Table};

    /// Block 0 of a port's table: the default key, a limited member of
    /// partition 0x8001's base (0x0001), and a full member of 0x0012.
    static BLOCK_BYTES: [u8; 64] = {
        let mut b = [0u8; 64];
        b[0] = 0xff;
        b[1] = 0xff;
        b[2] = 0x00;
        b[3] = 0x01;
        b[6] = 0x80;
        b[7] = 0x12;
        b
    };

    #[test]
    fn test_deconstruct() {
        let t = PKeyTable::parse(&BLOCK_BYTES).unwrap();
        assert_eq!(t.pkeys[0], 0xffff);
        assert_eq!(t.pkeys[1], 0x0001);
        assert_eq!(t.pkeys[2], 0);
        assert_eq!(t.pkeys[3], 0x8012);
        assert_eq!(
            t.valid().collect::<Vec<_>>(),
            vec![(0, 0xffff), (1, 0x0001), (3, 0x8012)]
        );
        assert_eq!(t.find_base(0x7fff), Some(0));
        assert_eq!(t.find_base(0x8001), Some(1));
        assert_eq!(t.find_base(0x0012), Some(3));
        assert_eq!(t.find_base(0x0013), None);
        assert_eq!(t.find_base(0x8000), None);
    }

    #[test]
    fn test_construct() {
        let mut t = PKeyTable::default();
        t.pkeys[0] = DEFAULT_PKEY;
        t.pkeys[1] = 0x0001;
        t.pkeys[3] = 0x8012;
        assert_eq!(t.buffer_len(), 64);
        let mut out = [0xa5u8; 64];
        t.emit(&mut out);
        assert_eq!(out, BLOCK_BYTES);
    }

    #[test]
    #[should_panic(expected = "need 64 bytes, got 10")]
    fn emit_short_buffer_panics() {
        PKeyTable::default().emit(&mut [0u8; 10]);
    }

    #[test]
    fn test_impossible_len_and_round_trip() {
        check_round_trip(
            PKeyTable::LEN,
            PKeyTable::parse,
            PKeyTable::emit,
            0x9e4_0000_0000_0016,
        );
    }

    #[test]
    fn test_field_offsets() {
        check_table_offsets(
            PKeyTable::LEN,
            PKeyTable::parse,
            PKeyTable::emit,
            &[],
            Table {
                count: PKeyTable::PKEYS_PER_BLOCK,
                stride: 2,
                fields: &[("P_Key", |t, i| t.pkeys[i] = u16::MAX, 0, &[0xff; 2])],
            },
        );
    }

    #[test]
    fn pkey_helpers() {
        assert!(pkey_is_full_member(0xffff));
        assert!(!pkey_is_full_member(0x7fff));
        assert_eq!(pkey_base(0xffff), 0x7fff);
        assert_eq!(pkey_base(0x8001), 0x0001);
        assert!(!pkey_is_valid(0x0000));
        assert!(!pkey_is_valid(0x8000));
        assert!(pkey_is_valid(0x0001));
        assert!(pkeys_match(0xffff, 0x7fff));
        assert!(pkeys_match(0x7fff, 0xffff));
        assert!(pkeys_match(0x8001, 0x8001));
        assert!(!pkeys_match(0x7fff, 0x7fff)); // two limited members
        assert!(!pkeys_match(0x8001, 0x8002));
        assert!(!pkeys_match(0x8000, 0x8000));
        assert_eq!(pkey_table_attr_mod(3, 1), 0x0003_0001);
        assert_eq!(pkey_table_attr_mod(0, 0), 0);
        assert_eq!(PKeyTable::block_for_index(0), (0, 0));
        assert_eq!(PKeyTable::block_for_index(33), (1, 1));
    }
}
