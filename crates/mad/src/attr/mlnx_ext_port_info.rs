//! Mellanox ExtendedPortInfo (vendor SMP attribute 0xFF90): where FDR10 lives.
//!
//! FDR10 (10.3125 Gb/s per lane, 64b/66b coding: the data rate of QDR with FDR's coding) is
//! not an IBA speed: a port running it reports QDR in PortInfo.LinkSpeedActive, and bit 0 of
//! this attribute's LinkSpeedActive says "actually FDR10". ibsim answers Get and Set of it.
//! Only the first 16 bytes carry fields; the rest of the SMP data is reserved.
//!
//! ```text
//!  byte  3: StateChangeEnable     byte  7: LinkSpeedSupported
//!  byte 11: LinkSpeedEnabled      byte 15: LinkSpeedActive      (bit 0 = FDR10)
//! ```

use crate::bytes;
use crate::Result;

mod field {
    use crate::bytes::Field;

    pub(super) const RESERVED_0: Field = 0..3;
    pub(super) const STATE_CHANGE_ENABLE: usize = 3;
    pub(super) const RESERVED_4: Field = 4..7;
    pub(super) const LINK_SPEED_SUPPORTED: usize = 7;
    pub(super) const RESERVED_8: Field = 8..11;
    pub(super) const LINK_SPEED_ENABLED: usize = 11;
    pub(super) const RESERVED_12: Field = 12..15;
    pub(super) const LINK_SPEED_ACTIVE: usize = 15;
}

/// The LinkSpeed* bit meaning FDR10.
pub const MLNX_SPEED_FDR10: u8 = 0x01;

/// Mellanox ExtendedPortInfo, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MlnxExtPortInfo {
    /// Bytes 0..3 (reserved).
    pub reserved_0: [u8; 3],
    /// StateChangeEnable.
    pub state_change_enable: u8,
    /// Bytes 4..7 (reserved).
    pub reserved_4: [u8; 3],
    /// LinkSpeedSupported (bit 0: FDR10).
    pub link_speed_supported: u8,
    /// Bytes 8..11 (reserved).
    pub reserved_8: [u8; 3],
    /// LinkSpeedEnabled (bit 0: FDR10).
    pub link_speed_enabled: u8,
    /// Bytes 12..15 (reserved).
    pub reserved_12: [u8; 3],
    /// LinkSpeedActive (bit 0: FDR10).
    pub link_speed_active: u8,
}

impl MlnxExtPortInfo {
    /// Bytes holding fields (the rest of the 64-byte SMP data area is reserved).
    pub const LEN: usize = field::LINK_SPEED_ACTIVE + 1;

    /// Parses the first [`MlnxExtPortInfo::LEN`] bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<MlnxExtPortInfo> {
        let b = bytes::array::<{ Self::LEN }>(buf)?;
        let three = |r: bytes::Field| [b[r.start], b[r.start + 1], b[r.start + 2]];
        Ok(MlnxExtPortInfo {
            reserved_0: three(field::RESERVED_0),
            state_change_enable: b[field::STATE_CHANGE_ENABLE],
            reserved_4: three(field::RESERVED_4),
            link_speed_supported: b[field::LINK_SPEED_SUPPORTED],
            reserved_8: three(field::RESERVED_8),
            link_speed_enabled: b[field::LINK_SPEED_ENABLED],
            reserved_12: three(field::RESERVED_12),
            link_speed_active: b[field::LINK_SPEED_ACTIVE],
        })
    }

    /// Bytes [`MlnxExtPortInfo::emit`] writes: [`MlnxExtPortInfo::LEN`].
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes the first [`MlnxExtPortInfo::LEN`] bytes of `buf`.
    ///
    /// # Panics
    /// If `buf` is shorter than [`MlnxExtPortInfo::LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        let b = bytes::array_mut::<{ Self::LEN }>(buf);
        b[field::RESERVED_0].copy_from_slice(&self.reserved_0);
        b[field::STATE_CHANGE_ENABLE] = self.state_change_enable;
        b[field::RESERVED_4].copy_from_slice(&self.reserved_4);
        b[field::LINK_SPEED_SUPPORTED] = self.link_speed_supported;
        b[field::RESERVED_8].copy_from_slice(&self.reserved_8);
        b[field::LINK_SPEED_ENABLED] = self.link_speed_enabled;
        b[field::RESERVED_12].copy_from_slice(&self.reserved_12);
        b[field::LINK_SPEED_ACTIVE] = self.link_speed_active;
    }

    /// Whether the link runs FDR10.
    pub fn fdr10_active(&self) -> bool {
        self.link_speed_active & MLNX_SPEED_FDR10 != 0
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::{check_offsets, check_round_trip, Case};

    #[test]
    fn test_deconstruct() {
        let mut b = [0u8; 64];
        b[3] = 1;
        b[7] = 1;
        b[11] = 1;
        b[15] = 1;
        let e = MlnxExtPortInfo::parse(&b).unwrap();
        assert_eq!(
            (
                e.state_change_enable,
                e.link_speed_supported,
                e.link_speed_enabled
            ),
            (1, 1, 1)
        );
        assert!(e.fdr10_active());
        assert!(!MlnxExtPortInfo::parse(&[0u8; 16]).unwrap().fdr10_active());
    }

    #[test]
    fn test_impossible_len_and_round_trip() {
        check_round_trip(
            MlnxExtPortInfo::LEN,
            MlnxExtPortInfo::parse,
            MlnxExtPortInfo::emit,
            0xff90_0000_0000_ff90,
        );
    }

    #[test]
    fn test_field_offsets() {
        #[rustfmt::skip]
        let cases: &[Case<'_, MlnxExtPortInfo>] = &[
            ("reserved 0..3", |e| e.reserved_0 = [0xff; 3], 0, &[0xff; 3]),
            ("StateChangeEnable", |e| e.state_change_enable = 0xff, 3, &[0xff]),
            ("reserved 4..7", |e| e.reserved_4 = [0xff; 3], 4, &[0xff; 3]),
            ("LinkSpeedSupported", |e| e.link_speed_supported = 0xff, 7, &[0xff]),
            ("reserved 8..11", |e| e.reserved_8 = [0xff; 3], 8, &[0xff; 3]),
            ("LinkSpeedEnabled", |e| e.link_speed_enabled = 0xff, 11, &[0xff]),
            ("reserved 12..15", |e| e.reserved_12 = [0xff; 3], 12, &[0xff; 3]),
            ("LinkSpeedActive", |e| e.link_speed_active = 0xff, 15, &[0xff]),
        ];
        check_offsets(
            MlnxExtPortInfo::LEN,
            MlnxExtPortInfo::parse,
            MlnxExtPortInfo::emit,
            cases,
        );
    }
}
