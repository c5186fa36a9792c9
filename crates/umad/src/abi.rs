//! Mirrors of the kernel's user-MAD ABI (`<rdma/ib_user_mad.h>`, ABI version 5).
//!
//! The `#[repr(C)]` structs are the exact layouts the kernel reads and writes; the layout tests
//! compare every size and field offset with the system C headers. Headers travel as bytes (they
//! are followed by the MAD in one buffer), so they are read and written through [`hdr`], whose
//! offsets are written once and checked against [`IbUserMadHdr`] with `offset_of!`.

/// The kernel user-MAD ABI version this crate speaks (`IB_USER_MAD_ABI_VERSION`).
pub const ABI_VERSION: u32 = 5;
/// Size of the legacy header (`struct ib_user_mad_hdr_old`): the MAD starts at byte 56.
pub const HDR_LEN_OLD: usize = 56;
/// Size of the P_Key-aware header (`struct ib_user_mad_hdr`): the MAD starts at byte 64.
pub const HDR_LEN: usize = 64;
/// Most agents one umad file descriptor can hold (`IB_UMAD_MAX_AGENTS`).
pub const MAX_AGENTS: usize = 32;
/// `IB_USER_MAD_USER_RMPP`: the agent does RMPP itself; the kernel passes segments through.
pub const USER_RMPP: u32 = 1;

/// ioctl magic of the RDMA subsystem (`RDMA_IOCTL_MAGIC`).
pub const IB_IOCTL_MAGIC: u32 = 0x1b;
/// `_IOWR(0x1b, 1, struct ib_user_mad_reg_req)`.
pub const IB_USER_MAD_REGISTER_AGENT: u64 = 0xC01C_1B01;
/// `_IOW(0x1b, 2, __u32)`.
pub const IB_USER_MAD_UNREGISTER_AGENT: u64 = 0x4004_1B02;
/// `_IO(0x1b, 3)`.
pub const IB_USER_MAD_ENABLE_PKEY: u64 = 0x0000_1B03;
/// `_IOWR(0x1b, 4, struct ib_user_mad_reg_req2)`.
pub const IB_USER_MAD_REGISTER_AGENT2: u64 = 0xC028_1B04;

/// The C `_IOC` encoding, so the literal constants above can be checked against it.
pub const fn ioc(dir: u32, ty: u32, nr: u32, size: u32) -> u64 {
    ((dir << 30) | (size << 16) | (ty << 8) | nr) as u64
}

/// `struct ib_user_mad_hdr_old` — the 56-byte header used until `IB_USER_MAD_ENABLE_PKEY`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct IbUserMadHdrOld {
    pub id: u32,
    pub status: u32,
    pub timeout_ms: u32,
    pub retries: u32,
    pub length: u32,
    /// Network order.
    pub qpn: u32,
    /// Network order.
    pub qkey: u32,
    /// Network order.
    pub lid: u16,
    pub sl: u8,
    pub path_bits: u8,
    pub grh_present: u8,
    pub gid_index: u8,
    pub hop_limit: u8,
    pub traffic_class: u8,
    pub gid: [u8; 16],
    /// Network order.
    pub flow_label: u32,
}

/// `struct ib_user_mad_hdr` — the 64-byte header with `pkey_index` (after `ENABLE_PKEY`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct IbUserMadHdr {
    pub id: u32,
    pub status: u32,
    pub timeout_ms: u32,
    pub retries: u32,
    pub length: u32,
    /// Network order.
    pub qpn: u32,
    /// Network order.
    pub qkey: u32,
    /// Network order.
    pub lid: u16,
    pub sl: u8,
    pub path_bits: u8,
    pub grh_present: u8,
    pub gid_index: u8,
    pub hop_limit: u8,
    pub traffic_class: u8,
    pub gid: [u8; 16],
    /// Network order.
    pub flow_label: u32,
    /// Host order.
    pub pkey_index: u16,
    pub reserved: [u8; 6],
}

/// `struct ib_user_mad_reg_req` — argument of `IB_USER_MAD_REGISTER_AGENT` (28 bytes, align 4).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct IbUserMadRegReq {
    /// Written by the kernel: the new agent id.
    pub id: u32,
    /// 128-bit method bitmap (`packed_ulong[2]` in C: same bytes on little endian).
    pub method_mask: [u32; 4],
    pub qpn: u8,
    pub mgmt_class: u8,
    pub mgmt_class_version: u8,
    /// Big-endian OUI bytes.
    pub oui: [u8; 3],
    pub rmpp_version: u8,
}

/// `struct ib_user_mad_reg_req2` — argument of `IB_USER_MAD_REGISTER_AGENT2` (40 bytes, align 8).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct IbUserMadRegReq2 {
    /// Written by the kernel: the new agent id.
    pub id: u32,
    pub qpn: u32,
    pub mgmt_class: u8,
    pub mgmt_class_version: u8,
    pub res: u16,
    /// On `EINVAL` the kernel writes the supported flags here.
    pub flags: u32,
    pub method_mask: [u64; 2],
    /// Host order, < 2^24.
    pub oui: u32,
    pub rmpp_version: u8,
    pub reserved: [u8; 3],
}

/// Byte offsets of the user-MAD header fields (the same for both layouts up to `flow_label`).
pub mod hdr {
    use core::ops::Range;
    /// Agent id (host order).
    pub const ID: Range<usize> = 0..4;
    /// Status: 0, or `ETIMEDOUT` for a send that got no response (host order).
    pub const STATUS: Range<usize> = 4..8;
    /// Send timeout in milliseconds (host order).
    pub const TIMEOUT_MS: Range<usize> = 8..12;
    /// Send retries (host order).
    pub const RETRIES: Range<usize> = 12..16;
    /// Header + MAD length on receive (host order).
    pub const LENGTH: Range<usize> = 16..20;
    /// Remote QP number (network order).
    pub const QPN: Range<usize> = 20..24;
    /// Q_Key (network order).
    pub const QKEY: Range<usize> = 24..28;
    /// LID (network order).
    pub const LID: Range<usize> = 28..30;
    /// Service level.
    pub const SL: usize = 30;
    /// Source path bits.
    pub const PATH_BITS: usize = 31;
    /// Non-zero when a GRH is present.
    pub const GRH_PRESENT: usize = 32;
    /// SGID index.
    pub const GID_INDEX: usize = 33;
    /// GRH hop limit.
    pub const HOP_LIMIT: usize = 34;
    /// GRH traffic class.
    pub const TRAFFIC_CLASS: usize = 35;
    /// Remote GID (network order).
    pub const GID: Range<usize> = 36..52;
    /// GRH flow label (network order).
    pub const FLOW_LABEL: Range<usize> = 52..56;
    /// P_Key index (host order); only in the 64-byte layout.
    pub const PKEY_INDEX: Range<usize> = 56..58;
}

/// Which user-MAD header an fd uses: 56 bytes (legacy) or 64 bytes (with `pkey_index`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HeaderLayout {
    /// `struct ib_user_mad_hdr_old`, 56 bytes, no P_Key index.
    Old,
    /// `struct ib_user_mad_hdr`, 64 bytes.
    WithPkey,
}

impl HeaderLayout {
    /// Header length in bytes: where the MAD starts.
    pub const fn header_len(self) -> usize {
        match self {
            HeaderLayout::Old => HDR_LEN_OLD,
            HeaderLayout::WithPkey => HDR_LEN,
        }
    }

    /// The layout whose length is `len`, if any.
    pub const fn from_len(len: usize) -> Option<Self> {
        match len {
            HDR_LEN_OLD => Some(HeaderLayout::Old),
            HDR_LEN => Some(HeaderLayout::WithPkey),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::{align_of, offset_of, size_of};

    #[test]
    fn header_offsets_match_struct() {
        assert_eq!(offset_of!(IbUserMadHdr, id), hdr::ID.start);
        assert_eq!(offset_of!(IbUserMadHdr, status), hdr::STATUS.start);
        assert_eq!(offset_of!(IbUserMadHdr, timeout_ms), hdr::TIMEOUT_MS.start);
        assert_eq!(offset_of!(IbUserMadHdr, retries), hdr::RETRIES.start);
        assert_eq!(offset_of!(IbUserMadHdr, length), hdr::LENGTH.start);
        assert_eq!(offset_of!(IbUserMadHdr, qpn), hdr::QPN.start);
        assert_eq!(offset_of!(IbUserMadHdr, qkey), hdr::QKEY.start);
        assert_eq!(offset_of!(IbUserMadHdr, lid), hdr::LID.start);
        assert_eq!(offset_of!(IbUserMadHdr, sl), hdr::SL);
        assert_eq!(offset_of!(IbUserMadHdr, path_bits), hdr::PATH_BITS);
        assert_eq!(offset_of!(IbUserMadHdr, grh_present), hdr::GRH_PRESENT);
        assert_eq!(offset_of!(IbUserMadHdr, gid_index), hdr::GID_INDEX);
        assert_eq!(offset_of!(IbUserMadHdr, hop_limit), hdr::HOP_LIMIT);
        assert_eq!(offset_of!(IbUserMadHdr, traffic_class), hdr::TRAFFIC_CLASS);
        assert_eq!(offset_of!(IbUserMadHdr, gid), hdr::GID.start);
        assert_eq!(offset_of!(IbUserMadHdr, flow_label), hdr::FLOW_LABEL.start);
        assert_eq!(offset_of!(IbUserMadHdr, pkey_index), hdr::PKEY_INDEX.start);
        assert_eq!(size_of::<IbUserMadHdr>(), HDR_LEN);
        assert_eq!(size_of::<IbUserMadHdrOld>(), HDR_LEN_OLD);
        assert_eq!(align_of::<IbUserMadHdr>(), 4);
    }
}
