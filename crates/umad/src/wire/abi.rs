//! Mirrors of the kernel's user-MAD ABI (`<rdma/ib_user_mad.h>`, ABI version 5), the one view
//! of the user-MAD header, and the one encoder of agent registrations.
//!
//! * The `#[repr(C)]` structs are the exact layouts the kernel reads and writes; the layout
//!   tests compare every size and field offset with the system C headers.
//! * Headers travel as bytes (they are followed by the MAD in one buffer), so they are read and
//!   written through the views [`UserMadHeader`] and [`MadAddrView`] (smoltcp style), whose
//!   offsets are written once, in [`field`], and checked against [`IbUserMadHdr`].
//!   A view made with `new_checked` (or [`UserMadHeader::from_prefix`]) never panics in an
//!   accessor or setter.
//! * [`register_agent`] builds both registration requests from one [`AgentRegistration`] and
//!   falls back from `REGISTER_AGENT2` to `REGISTER_AGENT` exactly as libibumad's
//!   `umad_register2` does; the caller supplies the two ioctls.

use std::io;

use crate::{Error, Result};

/// The kernel user-MAD ABI version this crate speaks (`IB_USER_MAD_ABI_VERSION`).
pub const ABI_VERSION: u32 = 5;
/// Size of the legacy header (`struct ib_user_mad_hdr_old`): the MAD starts at byte 56.
pub const HDR_LEN_OLD: usize = field::ADDR + field::addr::LEN_OLD;
/// Size of the P_Key-aware header (`struct ib_user_mad_hdr`): the MAD starts at byte 64.
pub const HDR_LEN: usize = field::ADDR + field::addr::LEN;
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

/// Byte offsets of the user-MAD header fields, the one place they are written.
///
/// The header (`struct ib_user_mad_hdr`, in C `ib_user_mad_t`) is five host-order words
/// followed by the address (`ib_mad_addr_t`), whose fields are in network order except
/// `pkey_index`. Both layouts share everything up to the flow label; only the 64-byte one has
/// `pkey_index` and the reserved bytes.
pub mod field {
    use core::ops::Range;
    /// Agent id (host order).
    pub const ID: Range<usize> = 0..4;
    /// Status: 0, or `ETIMEDOUT` for a send that got no response (host order).
    pub const STATUS: Range<usize> = 4..8;
    /// Send timeout in milliseconds (host order).
    pub const TIMEOUT_MS: Range<usize> = 8..12;
    /// Send retries (host order).
    pub const RETRIES: Range<usize> = 12..16;
    /// Header + MAD length of a received message (host order).
    pub const LENGTH: Range<usize> = 16..20;
    /// Where the address part (`ib_mad_addr_t`) starts.
    pub const ADDR: usize = LENGTH.end;

    /// Offsets inside the address part, relative to [`ADDR`].
    pub mod addr {
        use core::ops::Range;
        /// Remote QP number (network order).
        pub const QPN: Range<usize> = 0..4;
        /// Q_Key (network order).
        pub const QKEY: Range<usize> = 4..8;
        /// LID (network order).
        pub const LID: Range<usize> = 8..10;
        /// Service level.
        pub const SL: usize = 10;
        /// Source path bits.
        pub const PATH_BITS: usize = 11;
        /// Non-zero when a GRH is present.
        pub const GRH_PRESENT: usize = 12;
        /// SGID index.
        pub const GID_INDEX: usize = 13;
        /// GRH hop limit.
        pub const HOP_LIMIT: usize = 14;
        /// GRH traffic class.
        pub const TRAFFIC_CLASS: usize = 15;
        /// Remote GID (network order).
        pub const GID: Range<usize> = 16..32;
        /// GRH flow label (network order).
        pub const FLOW_LABEL: Range<usize> = 32..36;
        /// P_Key index (host order); only in the 64-byte layout.
        pub const PKEY_INDEX: Range<usize> = 36..38;
        /// Reserved; only in the 64-byte layout.
        pub const RESERVED: Range<usize> = 38..44;
        /// Length of the address part in the 64-byte layout (`sizeof(ib_mad_addr_t)`).
        pub const LEN: usize = RESERVED.end;
        /// Length of the address part in the 56-byte layout (it ends with the flow label).
        pub const LEN_OLD: usize = FLOW_LABEL.end;
    }
}

fn get_ne32(b: &[u8], r: core::ops::Range<usize>) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[r]);
    u32::from_ne_bytes(w)
}

fn get_be32(b: &[u8], r: core::ops::Range<usize>) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[r]);
    u32::from_be_bytes(w)
}

fn short(what: &str, needed: usize, len: usize) -> Error {
    Error::InvalidArgument(format!("{what} needs {needed} bytes; the buffer has {len}"))
}

/// A view of the address part of a user-MAD header (`ib_mad_addr_t`): 44 bytes with the
/// P_Key index in the 64-byte layout, 36 bytes (up to the flow label) in the 56-byte one.
///
/// Getters return host-order values (network-order fields are converted); in the 56-byte
/// layout the P_Key index reads as 0 and setting it does nothing, as the kernel ignores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[doc(alias = "ib_mad_addr_t")]
pub struct MadAddrView<T: AsRef<[u8]>> {
    buffer: T,
    layout: HeaderLayout,
}

impl<T: AsRef<[u8]>> MadAddrView<T> {
    /// A view of a standalone `ib_mad_addr_t` (at least 44 bytes, with `pkey_index`).
    pub fn new_checked(buffer: T) -> Result<MadAddrView<T>> {
        MadAddrView::with_layout(buffer, HeaderLayout::WithPkey)
    }

    /// A view of the address part of a `layout` header (at least 36 or 44 bytes).
    pub fn with_layout(buffer: T, layout: HeaderLayout) -> Result<MadAddrView<T>> {
        let need = layout.addr_len();
        let len = buffer.as_ref().len();
        if len < need {
            return Err(short("a MAD address", need, len));
        }
        Ok(MadAddrView { buffer, layout })
    }

    /// The layout this address belongs to.
    pub fn layout(&self) -> HeaderLayout {
        self.layout
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// Remote QP number.
    pub fn qpn(&self) -> u32 {
        get_be32(self.b(), field::addr::QPN)
    }

    /// Q_Key.
    pub fn qkey(&self) -> u32 {
        get_be32(self.b(), field::addr::QKEY)
    }

    /// Remote LID.
    pub fn lid(&self) -> u16 {
        let b = &self.b()[field::addr::LID];
        u16::from_be_bytes([b[0], b[1]])
    }

    /// Service level.
    pub fn sl(&self) -> u8 {
        self.b()[field::addr::SL]
    }

    /// Source path bits.
    pub fn path_bits(&self) -> u8 {
        self.b()[field::addr::PATH_BITS]
    }

    /// The GRH-present byte (non-zero: the GRH fields are valid).
    pub fn grh_present(&self) -> u8 {
        self.b()[field::addr::GRH_PRESENT]
    }

    /// SGID index.
    pub fn gid_index(&self) -> u8 {
        self.b()[field::addr::GID_INDEX]
    }

    /// GRH hop limit.
    pub fn hop_limit(&self) -> u8 {
        self.b()[field::addr::HOP_LIMIT]
    }

    /// GRH traffic class.
    pub fn traffic_class(&self) -> u8 {
        self.b()[field::addr::TRAFFIC_CLASS]
    }

    /// Remote GID, as its 16 wire bytes.
    pub fn gid(&self) -> [u8; 16] {
        let mut g = [0u8; 16];
        g.copy_from_slice(&self.b()[field::addr::GID]);
        g
    }

    /// GRH flow label.
    pub fn flow_label(&self) -> u32 {
        get_be32(self.b(), field::addr::FLOW_LABEL)
    }

    /// P_Key index (host order; 0 in the 56-byte layout).
    pub fn pkey_index(&self) -> u16 {
        match self.layout {
            HeaderLayout::WithPkey => {
                let b = &self.b()[field::addr::PKEY_INDEX];
                u16::from_ne_bytes([b[0], b[1]])
            }
            HeaderLayout::Old => 0,
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> MadAddrView<T> {
    fn m(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }

    /// Sets the remote QP number.
    pub fn set_qpn(&mut self, qpn: u32) {
        self.m()[field::addr::QPN].copy_from_slice(&qpn.to_be_bytes());
    }

    /// Sets the Q_Key.
    pub fn set_qkey(&mut self, qkey: u32) {
        self.m()[field::addr::QKEY].copy_from_slice(&qkey.to_be_bytes());
    }

    /// Sets the remote LID.
    pub fn set_lid(&mut self, lid: u16) {
        self.m()[field::addr::LID].copy_from_slice(&lid.to_be_bytes());
    }

    /// Sets the service level.
    pub fn set_sl(&mut self, sl: u8) {
        self.m()[field::addr::SL] = sl;
    }

    /// Sets the source path bits.
    pub fn set_path_bits(&mut self, bits: u8) {
        self.m()[field::addr::PATH_BITS] = bits;
    }

    /// Sets the GRH-present byte.
    pub fn set_grh_present(&mut self, present: u8) {
        self.m()[field::addr::GRH_PRESENT] = present;
    }

    /// Sets the SGID index.
    pub fn set_gid_index(&mut self, index: u8) {
        self.m()[field::addr::GID_INDEX] = index;
    }

    /// Sets the GRH hop limit.
    pub fn set_hop_limit(&mut self, hops: u8) {
        self.m()[field::addr::HOP_LIMIT] = hops;
    }

    /// Sets the GRH traffic class.
    pub fn set_traffic_class(&mut self, class: u8) {
        self.m()[field::addr::TRAFFIC_CLASS] = class;
    }

    /// Sets the remote GID (16 wire bytes).
    pub fn set_gid(&mut self, gid: &[u8; 16]) {
        self.m()[field::addr::GID].copy_from_slice(gid);
    }

    /// Sets the GRH flow label.
    pub fn set_flow_label(&mut self, label: u32) {
        self.m()[field::addr::FLOW_LABEL].copy_from_slice(&label.to_be_bytes());
    }

    /// Sets the P_Key index (host order); does nothing in the 56-byte layout.
    pub fn set_pkey_index(&mut self, index: u16) {
        if self.layout == HeaderLayout::WithPkey {
            self.m()[field::addr::PKEY_INDEX].copy_from_slice(&index.to_ne_bytes());
        }
    }
}

/// A view of a user-MAD buffer: the header (`struct ib_user_mad_hdr`, 56 or 64 bytes by
/// [`HeaderLayout`]) and the MAD after it.
///
/// The five header words are host order; the address is reached through [`addr`](Self::addr).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[doc(alias = "ib_user_mad_t")]
pub struct UserMadHeader<T: AsRef<[u8]>> {
    buffer: T,
    layout: HeaderLayout,
}

impl<T: AsRef<[u8]>> UserMadHeader<T> {
    /// A view of `buffer`, which must hold at least the `layout` header.
    pub fn new_checked(buffer: T, layout: HeaderLayout) -> Result<UserMadHeader<T>> {
        let need = layout.header_len();
        let len = buffer.as_ref().len();
        if len < need {
            return Err(short("a user-MAD header", need, len));
        }
        Ok(UserMadHeader { buffer, layout })
    }

    /// The header layout.
    pub fn layout(&self) -> HeaderLayout {
        self.layout
    }

    /// The header length: where the MAD starts.
    pub fn header_len(&self) -> usize {
        self.layout.header_len()
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// The agent id.
    pub fn agent_id(&self) -> u32 {
        get_ne32(self.b(), field::ID)
    }

    /// The status: 0, or `ETIMEDOUT` for a send that got no response.
    pub fn status(&self) -> u32 {
        get_ne32(self.b(), field::STATUS)
    }

    /// The send timeout in milliseconds.
    pub fn timeout_ms(&self) -> u32 {
        get_ne32(self.b(), field::TIMEOUT_MS)
    }

    /// The send retries.
    pub fn retries(&self) -> u32 {
        get_ne32(self.b(), field::RETRIES)
    }

    /// The length field: header + MAD bytes of a received message.
    pub fn length(&self) -> u32 {
        get_ne32(self.b(), field::LENGTH)
    }

    /// The address part.
    pub fn addr(&self) -> MadAddrView<&[u8]> {
        MadAddrView {
            buffer: &self.b()[field::ADDR..self.header_len()],
            layout: self.layout,
        }
    }

    /// The bytes after the header (the MAD).
    pub fn mad(&self) -> &[u8] {
        &self.b()[self.header_len()..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UserMadHeader<T> {
    fn put_ne32(&mut self, r: core::ops::Range<usize>, v: u32) {
        self.buffer.as_mut()[r].copy_from_slice(&v.to_ne_bytes());
    }

    /// Sets the agent id.
    pub fn set_agent_id(&mut self, id: u32) {
        self.put_ne32(field::ID, id);
    }

    /// Sets the status.
    pub fn set_status(&mut self, status: u32) {
        self.put_ne32(field::STATUS, status);
    }

    /// Sets the send timeout in milliseconds.
    pub fn set_timeout_ms(&mut self, ms: u32) {
        self.put_ne32(field::TIMEOUT_MS, ms);
    }

    /// Sets the send retries.
    pub fn set_retries(&mut self, retries: u32) {
        self.put_ne32(field::RETRIES, retries);
    }

    /// Sets the length field.
    pub fn set_length(&mut self, length: u32) {
        self.put_ne32(field::LENGTH, length);
    }

    /// The address part, writable.
    pub fn addr_mut(&mut self) -> MadAddrView<&mut [u8]> {
        let end = self.header_len();
        MadAddrView {
            buffer: &mut self.buffer.as_mut()[field::ADDR..end],
            layout: self.layout,
        }
    }

    /// The bytes after the header (the MAD), writable.
    pub fn mad_mut(&mut self) -> &mut [u8] {
        let h = self.header_len();
        &mut self.buffer.as_mut()[h..]
    }
}

impl UserMadHeader<[u8; HDR_LEN]> {
    /// A `layout` header copied from the first bytes of `prefix` (at most 64), the bytes it
    /// lacks read as 0: for callers that must not touch more of a buffer than they were given.
    pub fn from_prefix(prefix: &[u8], layout: HeaderLayout) -> UserMadHeader<[u8; HDR_LEN]> {
        let mut buffer = [0u8; HDR_LEN];
        let n = prefix.len().min(HDR_LEN);
        buffer[..n].copy_from_slice(&prefix[..n]);
        UserMadHeader { buffer, layout }
    }

    /// Copies the header's first `dst.len()` bytes (at most 64) back into `dst`.
    pub fn write_prefix(&self, dst: &mut [u8]) {
        let n = dst.len().min(HDR_LEN);
        dst[..n].copy_from_slice(&self.buffer[..n]);
    }
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

    /// Length of the address part (`ib_mad_addr_t`) in this layout.
    pub const fn addr_len(self) -> usize {
        self.header_len() - field::ADDR
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

/// What one agent registration asks for: the fields both registration ioctls carry, in one
/// value (libibumad's `umad_reg_attr` plus the QP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct AgentRegistration {
    /// The QP: 0 (SMI) or 1 (GSI).
    pub qpn: u32,
    /// Management class.
    pub class: u8,
    /// Class version.
    pub class_version: u8,
    /// Registration flags (`IB_USER_MAD_USER_RMPP`); only `REGISTER_AGENT2` carries them.
    pub flags: u32,
    /// 128-bit method bitmap, as the C `long[2]` / `__u64[2]` holds it.
    pub method_mask: [u64; 2],
    /// OUI (host order, low 24 bits used).
    pub oui: u32,
    /// RMPP version.
    pub rmpp_version: u8,
}

impl AgentRegistration {
    /// The `IB_USER_MAD_REGISTER_AGENT2` argument.
    pub fn req2(&self) -> IbUserMadRegReq2 {
        IbUserMadRegReq2 {
            qpn: self.qpn,
            mgmt_class: self.class,
            mgmt_class_version: self.class_version,
            flags: self.flags,
            method_mask: self.method_mask,
            oui: self.oui,
            rmpp_version: self.rmpp_version,
            ..IbUserMadRegReq2::default()
        }
    }

    /// The legacy `IB_USER_MAD_REGISTER_AGENT` argument (no flags): the OUI as three
    /// big-endian bytes, the method mask as the same bytes in four words.
    pub fn req(&self) -> IbUserMadRegReq {
        let [_, o0, o1, o2] = self.oui.to_be_bytes();
        let mut method_mask = [0u32; 4];
        for (i, w) in method_mask.iter_mut().enumerate() {
            let word = self.method_mask[i / 2].to_ne_bytes();
            let half = &word[(i % 2) * 4..(i % 2) * 4 + 4];
            *w = u32::from_ne_bytes([half[0], half[1], half[2], half[3]]);
        }
        IbUserMadRegReq {
            id: 0,
            method_mask,
            qpn: self.qpn as u8,
            mgmt_class: self.class,
            mgmt_class_version: self.class_version,
            oui: [o0, o1, o2],
            rmpp_version: self.rmpp_version,
        }
    }
}

/// Which ioctl registered an agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegisterIoctl {
    /// `IB_USER_MAD_REGISTER_AGENT2`.
    Agent2,
    /// The legacy `IB_USER_MAD_REGISTER_AGENT`, after `REGISTER_AGENT2` was refused.
    Agent,
}

/// How far the fallback to the legacy ioctl got after `REGISTER_AGENT2` failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fallback {
    /// `REGISTER_AGENT2` failed for another reason than missing support: no fallback.
    None,
    /// The kernel lacks `REGISTER_AGENT2` or refused the flags (`ENOTTY`/`EINVAL`), but the
    /// registration has flags, which the legacy ioctl cannot carry: not tried.
    FlagsNeedAgent2,
    /// The legacy ioctl was tried and failed too.
    Agent,
}

/// A failed [`register_agent`].
#[derive(Debug)]
pub struct RegisterFailure {
    /// The last ioctl's error.
    pub error: io::Error,
    /// What was tried after `REGISTER_AGENT2` failed.
    pub fallback: Fallback,
    /// The request's flags afterwards: the kernel's answer to `REGISTER_AGENT2`, or 0 once
    /// the fallback was considered (libibumad writes this back into `umad_reg_attr::flags`).
    pub flags: u32,
}

/// Registers an agent the way libibumad's `umad_register2` does: `REGISTER_AGENT2`
/// (`agent2`); if the kernel lacks it or refuses the flags (`ENOTTY`/`EINVAL`) and the
/// registration has no flags, the legacy `REGISTER_AGENT` (`agent`) with the same fields.
/// Returns the agent id the kernel wrote and which ioctl gave it.
///
/// Pure: the two ioctls are the caller's (the kernel transport's fd, the C ABI's port id, a
/// test double).
pub fn register_agent(
    reg: &AgentRegistration,
    agent2: impl FnOnce(&mut IbUserMadRegReq2) -> io::Result<()>,
    agent: impl FnOnce(&mut IbUserMadRegReq) -> io::Result<()>,
) -> Result<(u32, RegisterIoctl), RegisterFailure> {
    let mut req2 = reg.req2();
    let error = match agent2(&mut req2) {
        Ok(()) => return Ok((req2.id, RegisterIoctl::Agent2)),
        Err(e) => e,
    };
    if !matches!(error.raw_os_error(), Some(libc::ENOTTY | libc::EINVAL)) {
        return Err(RegisterFailure {
            error,
            fallback: Fallback::None,
            flags: req2.flags,
        });
    }
    if reg.flags != 0 {
        return Err(RegisterFailure {
            error,
            fallback: Fallback::FlagsNeedAgent2,
            flags: 0,
        });
    }
    let mut req = reg.req();
    match agent(&mut req) {
        Ok(()) => Ok((req.id, RegisterIoctl::Agent)),
        Err(error) => Err(RegisterFailure {
            error,
            fallback: Fallback::Agent,
            flags: 0,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::{align_of, offset_of, size_of};

    #[test]
    fn header_offsets_match_struct() {
        let a = |r: core::ops::Range<usize>| field::ADDR + r.start;
        assert_eq!(offset_of!(IbUserMadHdr, id), field::ID.start);
        assert_eq!(offset_of!(IbUserMadHdr, status), field::STATUS.start);
        assert_eq!(
            offset_of!(IbUserMadHdr, timeout_ms),
            field::TIMEOUT_MS.start
        );
        assert_eq!(offset_of!(IbUserMadHdr, retries), field::RETRIES.start);
        assert_eq!(offset_of!(IbUserMadHdr, length), field::LENGTH.start);
        assert_eq!(offset_of!(IbUserMadHdr, qpn), a(field::addr::QPN));
        assert_eq!(offset_of!(IbUserMadHdr, qkey), a(field::addr::QKEY));
        assert_eq!(offset_of!(IbUserMadHdr, lid), a(field::addr::LID));
        assert_eq!(offset_of!(IbUserMadHdr, sl), field::ADDR + field::addr::SL);
        assert_eq!(
            offset_of!(IbUserMadHdr, path_bits),
            field::ADDR + field::addr::PATH_BITS
        );
        assert_eq!(
            offset_of!(IbUserMadHdr, grh_present),
            field::ADDR + field::addr::GRH_PRESENT
        );
        assert_eq!(
            offset_of!(IbUserMadHdr, gid_index),
            field::ADDR + field::addr::GID_INDEX
        );
        assert_eq!(
            offset_of!(IbUserMadHdr, hop_limit),
            field::ADDR + field::addr::HOP_LIMIT
        );
        assert_eq!(
            offset_of!(IbUserMadHdr, traffic_class),
            field::ADDR + field::addr::TRAFFIC_CLASS
        );
        assert_eq!(offset_of!(IbUserMadHdr, gid), a(field::addr::GID));
        assert_eq!(
            offset_of!(IbUserMadHdr, flow_label),
            a(field::addr::FLOW_LABEL)
        );
        assert_eq!(
            offset_of!(IbUserMadHdr, pkey_index),
            a(field::addr::PKEY_INDEX)
        );
        assert_eq!(offset_of!(IbUserMadHdr, reserved), a(field::addr::RESERVED));
        assert_eq!(size_of::<IbUserMadHdr>(), HDR_LEN);
        assert_eq!(size_of::<IbUserMadHdrOld>(), HDR_LEN_OLD);
        assert_eq!((HDR_LEN_OLD, HDR_LEN), (56, 64));
        assert_eq!(align_of::<IbUserMadHdr>(), 4);
    }

    /// A 64-byte header as the kernel fills it on receive (x86_64, little endian).
    const RECEIVED: [u8; 64] = [
        3, 0, 0, 0, // id 3
        110, 0, 0, 0, // status ETIMEDOUT
        0xe8, 3, 0, 0, // timeout 1000
        2, 0, 0, 0, // retries 2
        0x40, 1, 0, 0, // length 320
        0, 0, 0, 1, // qpn 1
        0x80, 1, 0, 0, // qkey 0x80010000
        0x12, 0x34, // lid 0x1234
        5, 1, // sl 5, path bits 1
        1, 3, 64, 7, // grh present, gid index 3, hop limit 64, traffic class 7
        0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 1, // gid
        0, 1, 0x23, 0x45, // flow label 0x12345
        9, 0, // pkey index 9
        0, 0, 0, 0, 0, 0,
    ];

    #[test]
    fn header_view_reads_every_field() {
        let h = UserMadHeader::new_checked(&RECEIVED[..], HeaderLayout::WithPkey).unwrap();
        assert_eq!(
            (
                h.agent_id(),
                h.status(),
                h.timeout_ms(),
                h.retries(),
                h.length()
            ),
            (3, 110, 1000, 2, 320)
        );
        let a = h.addr();
        assert_eq!((a.qpn(), a.qkey(), a.lid()), (1, 0x8001_0000, 0x1234));
        assert_eq!((a.sl(), a.path_bits(), a.grh_present()), (5, 1, 1));
        assert_eq!(
            (a.gid_index(), a.hop_limit(), a.traffic_class()),
            (3, 64, 7)
        );
        assert_eq!(a.gid()[..2], [0xfe, 0x80]);
        assert_eq!((a.flow_label(), a.pkey_index()), (0x12345, 9));
        assert!(h.mad().is_empty());
        // The old layout ends at the flow label: no P_Key index.
        let old = UserMadHeader::new_checked(&RECEIVED[..56], HeaderLayout::Old).unwrap();
        assert_eq!(
            (old.addr().flow_label(), old.addr().pkey_index()),
            (0x12345, 0)
        );
        assert!(UserMadHeader::new_checked(&RECEIVED[..56], HeaderLayout::WithPkey).is_err());
        assert!(UserMadHeader::new_checked(&RECEIVED[..55], HeaderLayout::Old).is_err());
        assert!(MadAddrView::new_checked(&RECEIVED[20..63]).is_err());
        assert_eq!(
            MadAddrView::new_checked(&RECEIVED[20..])
                .unwrap()
                .pkey_index(),
            9
        );
    }

    #[test]
    fn header_view_writes_the_same_bytes() {
        let mut buf = [0xa5u8; 64 + 4];
        let mut h = UserMadHeader::new_checked(&mut buf[..], HeaderLayout::WithPkey).unwrap();
        h.set_agent_id(3);
        h.set_status(110);
        h.set_timeout_ms(1000);
        h.set_retries(2);
        h.set_length(320);
        let mut a = h.addr_mut();
        a.set_qpn(1);
        a.set_qkey(0x8001_0000);
        a.set_lid(0x1234);
        a.set_sl(5);
        a.set_path_bits(1);
        a.set_grh_present(1);
        a.set_gid_index(3);
        a.set_hop_limit(64);
        a.set_traffic_class(7);
        a.set_gid(&RECEIVED[36..52].try_into().unwrap());
        a.set_flow_label(0x12345);
        a.set_pkey_index(9);
        h.mad_mut().copy_from_slice(&[1, 2, 3, 4]);
        assert_eq!(&buf[..58], &RECEIVED[..58]);
        assert_eq!(&buf[58..64], &[0xa5; 6], "reserved bytes untouched");
        assert_eq!(&buf[64..], &[1, 2, 3, 4]);
        // Old layout: setting the P_Key index touches nothing (those bytes are the MAD).
        let mut old = [0u8; 60];
        let mut h = UserMadHeader::new_checked(&mut old[..], HeaderLayout::Old).unwrap();
        h.addr_mut().set_pkey_index(9);
        h.mad_mut()[0] = 0x81;
        assert_eq!(old[56..], [0x81, 0, 0, 0]);
    }

    #[test]
    fn prefixes_read_zero_beyond_and_write_back_only_their_bytes() {
        let h = UserMadHeader::from_prefix(&RECEIVED[..9], HeaderLayout::WithPkey);
        assert_eq!((h.agent_id(), h.status(), h.timeout_ms()), (3, 110, 0xe8));
        let mut dst = [0xffu8; 10];
        let mut h = UserMadHeader::from_prefix(&dst, HeaderLayout::Old);
        h.set_retries(7);
        h.set_timeout_ms(0);
        h.write_prefix(&mut dst);
        assert_eq!(dst, [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0]);
    }

    fn fail(code: i32) -> io::Result<()> {
        Err(io::Error::from_raw_os_error(code))
    }

    #[test]
    fn registration_requests() {
        let reg = AgentRegistration {
            qpn: 1,
            class: 0x4f,
            class_version: 1,
            flags: 0,
            method_mask: [0x8000_0000_0000_0002, 1],
            oui: 0x00_066a,
            rmpp_version: 1,
        };
        let r = reg.req();
        assert_eq!(r.oui, [0x00, 0x06, 0x6a]);
        assert_eq!(r.method_mask, [2, 0x8000_0000, 1, 0]);
        assert_eq!((r.qpn, r.mgmt_class, r.rmpp_version), (1, 0x4f, 1));
        let r2 = reg.req2();
        assert_eq!(
            (r2.oui, r2.method_mask, r2.qpn),
            (0x066a, reg.method_mask, 1)
        );
    }

    #[test]
    fn register_falls_back_like_umad_register2() {
        let reg = AgentRegistration {
            class: 0x81,
            class_version: 1,
            ..AgentRegistration::default()
        };
        let ok = |id| {
            move |r: &mut IbUserMadRegReq| {
                r.id = id;
                Ok(())
            }
        };
        // REGISTER_AGENT2 works: no fallback.
        let r = register_agent(
            &reg,
            |r| {
                r.id = 4;
                Ok(())
            },
            |_| panic!("legacy ioctl not expected"),
        );
        assert_eq!(r.unwrap(), (4, RegisterIoctl::Agent2));
        // Missing (ENOTTY) or refused (EINVAL, umad2sim): the legacy ioctl, without flags.
        for code in [libc::ENOTTY, libc::EINVAL] {
            let r = register_agent(&reg, |_| fail(code), ok(7));
            assert_eq!(r.unwrap(), (7, RegisterIoctl::Agent));
        }
        // Other errors: no fallback, the kernel's flags answer kept.
        let e = register_agent(
            &AgentRegistration { flags: 1, ..reg },
            |r| {
                r.flags = 5;
                fail(libc::EBADF)
            },
            |_| panic!("legacy ioctl not expected"),
        )
        .unwrap_err();
        assert_eq!((e.fallback, e.flags), (Fallback::None, 5));
        assert_eq!(e.error.raw_os_error(), Some(libc::EBADF));
        // Flags cannot go through the legacy ioctl; the answer's flags are zeroed.
        let e = register_agent(
            &AgentRegistration { flags: 1, ..reg },
            |r| {
                r.flags = 1;
                fail(libc::EINVAL)
            },
            |_| panic!("legacy ioctl not expected"),
        )
        .unwrap_err();
        assert_eq!((e.fallback, e.flags), (Fallback::FlagsNeedAgent2, 0));
        let e = register_agent(&reg, |_| fail(libc::EINVAL), |_| fail(libc::ENOMEM)).unwrap_err();
        assert_eq!(e.fallback, Fallback::Agent);
        assert_eq!(e.error.raw_os_error(), Some(libc::ENOMEM));
    }
}
