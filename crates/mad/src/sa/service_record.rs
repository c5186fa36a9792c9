//! ServiceRecord (SA attribute 0x31, IBA Vol 1, 15.2.5): 176 bytes.
//!
//! ```text
//!   0..8    ServiceID
//!   8..24   ServiceGID
//!  24..26   ServiceP_Key
//!  26..28   reserved
//!  28..32   ServiceLease (seconds; 0xffffffff = forever)
//!  32..48   ServiceKey
//!  48..112  ServiceName (64 bytes, NUL-padded UTF-8)
//! 112..128  ServiceData8  (16 × 8 bits)
//! 128..144  ServiceData16 (8 × 16 bits)
//! 144..160  ServiceData32 (4 × 32 bits)
//! 160..176  ServiceData64 (2 × 64 bits)
//! ```

use std::borrow::Cow;

use crate::bytes::{self, get_u16, get_u32, get_u64, set_u16, set_u32, set_u64};
use crate::types::Gid;
use crate::Result;

mod field {
    use crate::bytes::Field;

    pub(super) const SERVICE_ID: Field = 0..8;
    pub(super) const SERVICE_GID: Field = 8..24;
    pub(super) const SERVICE_P_KEY: Field = 24..26;
    pub(super) const RESERVED: Field = 26..28;
    pub(super) const SERVICE_LEASE: Field = 28..32;
    pub(super) const SERVICE_KEY: Field = 32..48;
    pub(super) const SERVICE_NAME: Field = 48..112;
    pub(super) const SERVICE_DATA8: Field = 112..128;
    pub(super) const SERVICE_DATA16: Field = 128..144;
    pub(super) const SERVICE_DATA32: Field = 144..160;
    pub(super) const SERVICE_DATA64: Field = 160..176;
}

/// ServiceRecord ComponentMask bits, in IBA order (opensm
/// `IB_SR_COMPMASK_*`): one bit per field, and one per element of the
/// ServiceData arrays.
pub mod comp {
    /// ServiceID.
    pub const SERVICE_ID: u64 = 1 << 0;
    /// ServiceGID.
    pub const SERVICE_GID: u64 = 1 << 1;
    /// ServiceP_Key.
    pub const SERVICE_P_KEY: u64 = 1 << 2;
    /// Reserved.
    pub const RESERVED: u64 = 1 << 3;
    /// ServiceLease.
    pub const SERVICE_LEASE: u64 = 1 << 4;
    /// ServiceKey.
    pub const SERVICE_KEY: u64 = 1 << 5;
    /// ServiceName.
    pub const SERVICE_NAME: u64 = 1 << 6;
    /// ServiceData8\[i\] is `SERVICE_DATA8[i]` (bits 7–22).
    pub const SERVICE_DATA8: [u64; 16] = run(7);
    /// ServiceData16\[i\] is `SERVICE_DATA16[i]` (bits 23–30).
    pub const SERVICE_DATA16: [u64; 8] = run(23);
    /// ServiceData32\[i\] is `SERVICE_DATA32[i]` (bits 31–34).
    pub const SERVICE_DATA32: [u64; 4] = run(31);
    /// ServiceData64\[i\] is `SERVICE_DATA64[i]` (bits 35–36).
    pub const SERVICE_DATA64: [u64; 2] = run(35);

    /// `N` consecutive component bits starting at bit `first`.
    const fn run<const N: usize>(first: u32) -> [u64; N] {
        let mut bits = [0u64; N];
        let mut i = 0;
        while i < N {
            bits[i] = 1 << (first + i as u32);
            i += 1;
        }
        bits
    }
}

/// ServiceRecord, parsed: a service registered with the SA.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ServiceRecord {
    /// ServiceID.
    pub service_id: u64,
    /// GID of the port providing the service.
    pub service_gid: Gid,
    /// P_Key to use with the service.
    pub service_p_key: u16,
    /// Reserved (bytes 26–27), kept so `emit` reproduces the input.
    pub reserved: u16,
    /// Lease in seconds (0xffffffff: never expires).
    pub service_lease: u32,
    /// ServiceKey (opaque to the SA).
    pub service_key: [u8; 16],
    /// ServiceName, raw 64 bytes (NUL-padded UTF-8); see
    /// [`ServiceRecord::name`].
    pub service_name: [u8; 64],
    /// ServiceData8.
    pub service_data8: [u8; 16],
    /// ServiceData16.
    pub service_data16: [u16; 8],
    /// ServiceData32.
    pub service_data32: [u32; 4],
    /// ServiceData64.
    pub service_data64: [u64; 2],
}

impl Default for ServiceRecord {
    fn default() -> Self {
        ServiceRecord {
            service_id: 0,
            service_gid: Gid::default(),
            service_p_key: 0,
            reserved: 0,
            service_lease: 0,
            service_key: [0; 16],
            service_name: [0; 64],
            service_data8: [0; 16],
            service_data16: [0; 8],
            service_data32: [0; 4],
            service_data64: [0; 2],
        }
    }
}

impl ServiceRecord {
    /// Size of ServiceRecord in the IBA table.
    pub const LEN: usize = field::SERVICE_DATA64.end;

    /// Parses the first [`ServiceRecord::LEN`] bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<ServiceRecord> {
        let b = bytes::array::<{ Self::LEN }>(buf)?;
        Ok(ServiceRecord {
            service_id: get_u64(&b[field::SERVICE_ID]),
            service_gid: Gid::parse(&b[field::SERVICE_GID])?,
            service_p_key: get_u16(&b[field::SERVICE_P_KEY]),
            reserved: get_u16(&b[field::RESERVED]),
            service_lease: get_u32(&b[field::SERVICE_LEASE]),
            service_key: *bytes::array::<16>(&b[field::SERVICE_KEY])?,
            service_name: *bytes::array::<64>(&b[field::SERVICE_NAME])?,
            service_data8: *bytes::array::<16>(&b[field::SERVICE_DATA8])?,
            service_data16: bytes::get_array(&b[field::SERVICE_DATA16], get_u16),
            service_data32: bytes::get_array(&b[field::SERVICE_DATA32], get_u32),
            service_data64: bytes::get_array(&b[field::SERVICE_DATA64], get_u64),
        })
    }

    /// Bytes [`ServiceRecord::emit`] writes: [`ServiceRecord::LEN`].
    pub const fn buffer_len(&self) -> usize {
        Self::LEN
    }

    /// Writes the first [`ServiceRecord::LEN`] bytes of `buf`.
    ///
    /// # Panics
    ///
    /// If `buf` is shorter than [`ServiceRecord::LEN`].
    pub fn emit(&self, buf: &mut [u8]) {
        let b = bytes::array_mut::<{ Self::LEN }>(buf);
        set_u64(&mut b[field::SERVICE_ID], self.service_id);
        self.service_gid.emit(&mut b[field::SERVICE_GID]);
        set_u16(&mut b[field::SERVICE_P_KEY], self.service_p_key);
        set_u16(&mut b[field::RESERVED], self.reserved);
        set_u32(&mut b[field::SERVICE_LEASE], self.service_lease);
        b[field::SERVICE_KEY].copy_from_slice(&self.service_key);
        b[field::SERVICE_NAME].copy_from_slice(&self.service_name);
        b[field::SERVICE_DATA8].copy_from_slice(&self.service_data8);
        bytes::set_array(&mut b[field::SERVICE_DATA16], &self.service_data16, set_u16);
        bytes::set_array(&mut b[field::SERVICE_DATA32], &self.service_data32, set_u32);
        bytes::set_array(&mut b[field::SERVICE_DATA64], &self.service_data64, set_u64);
    }

    /// ServiceName up to the first NUL, with invalid UTF-8 replaced by
    /// U+FFFD.
    pub fn name(&self) -> Cow<'_, str> {
        let end = self.service_name.iter().position(|&b| b == 0).unwrap_or(64);
        String::from_utf8_lossy(&self.service_name[..end])
    }

    /// Sets ServiceName to `text`, truncated to 64 bytes at a character
    /// boundary and NUL-padded.
    pub fn set_name(&mut self, text: &str) {
        let mut end = text.len().min(64);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        self.service_name = [0; 64];
        self.service_name[..end].copy_from_slice(&text.as_bytes()[..end]);
    }
}

impl_sa_record!(ServiceRecord, super::attr_id::SERVICE_RECORD);

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_util::{check_comp_mask, check_offsets, check_round_trip, Case};

    /// A service "DAPL" (ServiceID 0x1000117500000001) on LID 2's port,
    /// lease forever, with one value in each ServiceData array.
    static RECORD_BYTES: [u8; 176] = {
        let mut b = [0u8; 176];
        let id = 0x1000_1175_0000_0001u64.to_be_bytes();
        let mut i = 0;
        while i < 8 {
            b[i] = id[i];
            i += 1;
        }
        b[8] = 0xfe; // ServiceGID fe80::2:c903:0:2
        b[9] = 0x80;
        b[17] = 0x02;
        b[18] = 0xc9;
        b[19] = 0x03;
        b[23] = 0x02;
        b[24] = 0xff; // P_Key 0xffff
        b[25] = 0xff;
        b[28] = 0xff; // lease forever
        b[29] = 0xff;
        b[30] = 0xff;
        b[31] = 0xff;
        b[47] = 0x42; // ServiceKey ...42
        b[48] = b'D'; // ServiceName
        b[49] = b'A';
        b[50] = b'P';
        b[51] = b'L';
        b[112] = 0x11; // ServiceData8[0]
        b[142] = 0x22; // ServiceData16[7] = 0x2233
        b[143] = 0x33;
        b[144] = 0x44; // ServiceData32[0] = 0x44000055
        b[147] = 0x55;
        b[175] = 0x66; // ServiceData64[1] = 0x66
        b
    };

    fn expected() -> ServiceRecord {
        let mut r = ServiceRecord {
            service_id: 0x1000_1175_0000_0001,
            service_gid: Gid::new(0xfe80_0000_0000_0000, 0x0002_c903_0000_0002),
            service_p_key: 0xffff,
            service_lease: u32::MAX,
            ..ServiceRecord::default()
        };
        r.service_key[15] = 0x42;
        r.set_name("DAPL");
        r.service_data8[0] = 0x11;
        r.service_data16[7] = 0x2233;
        r.service_data32[0] = 0x4400_0055;
        r.service_data64[1] = 0x66;
        r
    }

    #[test]
    fn test_deconstruct() {
        let r = ServiceRecord::parse(&RECORD_BYTES).unwrap();
        assert_eq!(r, expected());
        assert_eq!(r.name(), "DAPL");
    }

    #[test]
    fn test_construct() {
        let mut out = [0xa5u8; 176];
        expected().emit(&mut out);
        assert_eq!(out, RECORD_BYTES);
        assert_eq!(expected().buffer_len(), 176);
    }

    #[test]
    fn test_name() {
        let mut r = ServiceRecord::default();
        assert_eq!(r.name(), "");
        r.set_name(&"é".repeat(40)); // 80 bytes, boundary at 64
        assert_eq!(r.name().len(), 64);
        r.set_name(&format!("x{}", "é".repeat(40))); // boundary at 63
        assert_eq!(r.name().len(), 63);
        r.service_name[0] = 0xff;
        assert!(r.name().starts_with('\u{fffd}'));
    }

    #[test]
    fn test_impossible_len_and_round_trip() {
        check_round_trip(
            ServiceRecord::LEN,
            ServiceRecord::parse,
            ServiceRecord::emit,
            31,
        );
    }

    #[test]
    fn test_field_offsets() {
        #[rustfmt::skip]
        let cases: &[Case<'_, ServiceRecord>] = &[
            ("ServiceID", |r| r.service_id = u64::MAX, 0, &[0xff; 8]),
            ("ServiceGID", |r| r.service_gid = Gid([0xff; 16]), 8, &[0xff; 16]),
            ("ServiceP_Key", |r| r.service_p_key = u16::MAX, 24, &[0xff; 2]),
            ("reserved", |r| r.reserved = u16::MAX, 26, &[0xff; 2]),
            ("ServiceLease", |r| r.service_lease = u32::MAX, 28, &[0xff; 4]),
            ("ServiceKey", |r| r.service_key = [0xff; 16], 32, &[0xff; 16]),
            ("ServiceName", |r| r.service_name = [0xff; 64], 48, &[0xff; 64]),
            ("ServiceData8", |r| r.service_data8 = [0xff; 16], 112, &[0xff; 16]),
            ("ServiceData16[0]", |r| r.service_data16[0] = u16::MAX, 128, &[0xff; 2]),
            ("ServiceData16[1..]", |r| r.service_data16[1..].fill(u16::MAX), 130, &[0xff; 14]),
            ("ServiceData32[0]", |r| r.service_data32[0] = u32::MAX, 144, &[0xff; 4]),
            ("ServiceData32[1..]", |r| r.service_data32[1..].fill(u32::MAX), 148, &[0xff; 12]),
            ("ServiceData64[0]", |r| r.service_data64[0] = u64::MAX, 160, &[0xff; 8]),
            ("ServiceData64[1]", |r| r.service_data64[1] = u64::MAX, 168, &[0xff; 8]),
        ];
        check_offsets(
            ServiceRecord::LEN,
            ServiceRecord::parse,
            ServiceRecord::emit,
            cases,
        );
    }

    #[test]
    fn test_comp_mask() {
        let mut bits = vec![
            ("ServiceID", comp::SERVICE_ID),
            ("ServiceGID", comp::SERVICE_GID),
            ("ServiceP_Key", comp::SERVICE_P_KEY),
            ("Reserved", comp::RESERVED),
            ("ServiceLease", comp::SERVICE_LEASE),
            ("ServiceKey", comp::SERVICE_KEY),
            ("ServiceName", comp::SERVICE_NAME),
        ];
        bits.extend(comp::SERVICE_DATA8.iter().map(|&b| ("ServiceData8", b)));
        bits.extend(comp::SERVICE_DATA16.iter().map(|&b| ("ServiceData16", b)));
        bits.extend(comp::SERVICE_DATA32.iter().map(|&b| ("ServiceData32", b)));
        bits.extend(comp::SERVICE_DATA64.iter().map(|&b| ("ServiceData64", b)));
        assert_eq!(bits.len(), 37);
        check_comp_mask(&bits);
        assert_eq!(comp::SERVICE_DATA8[0], 1 << 7);
        assert_eq!(comp::SERVICE_DATA16[0], 1 << 23);
        assert_eq!(comp::SERVICE_DATA32[1], 1 << 32);
        assert_eq!(comp::SERVICE_DATA64[1], 1 << 36);
    }
}
