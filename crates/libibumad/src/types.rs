//! `#[repr(C)]` mirrors of the structures in `<infiniband/umad.h>` (x86_64 layouts), with the
//! C names, so that C callers and this library agree byte for byte.
//!
//! The unit tests below pin every size, alignment and field offset to the values of the C
//! headers (rdma-core HEAD; identical in Debian's 44.0 except for [`umad_ca_pair`], which 44.0
//! lacks).
#![allow(non_camel_case_types)]

use core::ffi::{c_char, c_int, c_uint};

/// `UMAD_CA_NAME_LEN`: size of the CA-name fields, NUL included.
pub const UMAD_CA_NAME_LEN: usize = 20;
/// `UMAD_CA_MAX_PORTS`: entries of `umad_ca_t::ports` (port numbers 0–9).
pub const UMAD_CA_MAX_PORTS: usize = 10;
/// `UMAD_MAX_PORTS` (HEAD): the umad device ids looked at (`umad0` … `umad191`), and the number
/// of pairs `umad_get_smi_gsi_pair_by_ca_name` considers.
pub const UMAD_MAX_PORTS: u32 = 192;
/// `UMAD_USER_RMPP`: the agent does RMPP itself (flag of `umad_reg_attr::flags`).
pub const UMAD_USER_RMPP: u32 = 1;

/// `union umad_gid`: a GID as 16 bytes, 8 big-endian 16-bit words, or prefix + interface id
/// (size 16, alignment 4).
#[repr(C, packed(4))]
#[derive(Clone, Copy)]
pub union umad_gid {
    /// The 16 bytes, network order.
    pub raw: [u8; 16],
    /// Eight big-endian 16-bit words.
    pub raw_be16: [u16; 8],
    /// Subnet prefix and interface id, both big-endian.
    pub global: umad_gid_global,
}

/// The `global` view of [`umad_gid`].
#[repr(C, packed(4))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct umad_gid_global {
    /// Subnet prefix (big-endian).
    pub subnet_prefix: u64,
    /// Interface id, i.e. the port GUID (big-endian).
    pub interface_id: u64,
}

/// `ib_mad_addr_t` (`struct ib_mad_addr`): the address part of the user-MAD header
/// (size 44, alignment 4). Multi-byte fields are big-endian except `pkey_index`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ib_mad_addr_t {
    /// Remote QP number (big-endian).
    pub qpn: u32,
    /// Q_Key (big-endian).
    pub qkey: u32,
    /// Remote LID (big-endian).
    pub lid: u16,
    /// Service level.
    pub sl: u8,
    /// Source path bits.
    pub path_bits: u8,
    /// Non-zero when the GRH fields are valid.
    pub grh_present: u8,
    /// SGID index.
    pub gid_index: u8,
    /// GRH hop limit.
    pub hop_limit: u8,
    /// GRH traffic class.
    pub traffic_class: u8,
    /// Remote GID, network order (in C a union with `union umad_gid ib_gid`).
    pub gid: [u8; 16],
    /// GRH flow label (big-endian).
    pub flow_label: u32,
    /// P_Key index (host order; only meaningful with the 64-byte header).
    pub pkey_index: u16,
    /// Reserved.
    pub reserved: [u8; 6],
}

/// `ib_user_mad_t` (`struct ib_user_mad`): the header before the MAD in every buffer passed to
/// `umad_send`/`umad_recv` (size 64, alignment 4; the MAD follows at `data`, or at offset 56
/// with the old header layout).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ib_user_mad_t {
    /// Agent id (host order).
    pub agent_id: u32,
    /// 0, or `ETIMEDOUT` for a send that got no response.
    pub status: u32,
    /// Send timeout in milliseconds.
    pub timeout_ms: u32,
    /// Send retries.
    pub retries: u32,
    /// Header + MAD length of a received MAD.
    pub length: u32,
    /// The address.
    pub addr: ib_mad_addr_t,
}

/// `umad_port_t` (`struct umad_port`): one port as sysfs describes it (size 112, alignment 8).
#[repr(C)]
#[derive(Debug)]
pub struct umad_port_t {
    /// CA name, NUL-terminated.
    pub ca_name: [c_char; UMAD_CA_NAME_LEN],
    /// Port number.
    pub portnum: c_int,
    /// Base LID.
    pub base_lid: c_uint,
    /// LID mask count.
    pub lmc: c_uint,
    /// SM LID.
    pub sm_lid: c_uint,
    /// SM SL.
    pub sm_sl: c_uint,
    /// Port state (4 = ACTIVE).
    pub state: c_uint,
    /// Physical port state (5 = LinkUp).
    pub phys_state: c_uint,
    /// Integer part of the rate in Gb/s.
    pub rate: c_uint,
    /// Capability mask (big-endian).
    pub capmask: u32,
    /// GID prefix (big-endian).
    pub gid_prefix: u64,
    /// Port GUID (big-endian).
    pub port_guid: u64,
    /// Entries in `pkeys`.
    pub pkeys_size: c_uint,
    /// P_Key table (host order), allocated with `calloc`; freed by `umad_release_port`.
    pub pkeys: *mut u16,
    /// Link layer, NUL-terminated (`"InfiniBand"`, `"Ethernet"`, `"IB"` if unknown).
    pub link_layer: [c_char; UMAD_CA_NAME_LEN],
}

/// `umad_ca_t` (`struct umad_ca`): a CA and its ports (size 208, alignment 8).
#[repr(C)]
#[derive(Debug)]
pub struct umad_ca_t {
    /// CA name, NUL-terminated.
    pub ca_name: [c_char; UMAD_CA_NAME_LEN],
    /// Node type (1 CA, 2 switch, 3 router).
    pub node_type: c_uint,
    /// The highest port number (not a count).
    pub numports: c_int,
    /// Firmware version, NUL-terminated.
    pub fw_ver: [c_char; 20],
    /// Device type (`hca_type`), NUL-terminated.
    pub ca_type: [c_char; 40],
    /// Hardware revision (`hw_rev`), NUL-terminated.
    pub hw_ver: [c_char; 20],
    /// Node GUID (big-endian).
    pub node_guid: u64,
    /// System image GUID (big-endian).
    pub system_guid: u64,
    /// Ports by number, `NULL` where absent; allocated with `calloc`, freed by
    /// `umad_release_ca`.
    pub ports: [*mut umad_port_t; UMAD_CA_MAX_PORTS],
}

/// `struct umad_device_node`: one entry of `umad_get_ca_device_list` (size 16, alignment 8).
/// Each node is one `calloc` block with the name stored right after the node.
#[repr(C)]
#[derive(Debug)]
pub struct umad_device_node {
    /// The next node, or `NULL`.
    pub next: *mut umad_device_node,
    /// The CA name (points into the same allocation).
    pub ca_name: *const c_char,
}

/// `struct umad_reg_attr`: argument of `umad_register2` (size 32, alignment 8).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct umad_reg_attr {
    /// Management class.
    pub mgmt_class: u8,
    /// Class version.
    pub mgmt_class_version: u8,
    /// Registration flags ([`UMAD_USER_RMPP`]).
    pub flags: u32,
    /// 128-bit method bitmap.
    pub method_mask: [u64; 2],
    /// OUI (host order, 24 bits) for vendor classes 0x30–0x4f.
    pub oui: u32,
    /// RMPP version (0 or 1).
    pub rmpp_version: u8,
}

/// `struct umad_ca_pair` (HEAD): the SMI and GSI devices of one port GUID (size 48,
/// alignment 4).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct umad_ca_pair {
    /// The SMI device, NUL-terminated (empty if none).
    pub smi_name: [c_char; UMAD_CA_NAME_LEN],
    /// Preferred port on the SMI device.
    pub smi_preferred_port: u32,
    /// The GSI device, NUL-terminated (empty if none).
    pub gsi_name: [c_char; UMAD_CA_NAME_LEN],
    /// Preferred port on the GSI device.
    pub gsi_preferred_port: u32,
}

#[cfg(test)]
#[allow(unsafe_code)] // the tests call the C ABI as C does
mod tests {
    use super::*;
    use core::mem::{align_of, offset_of, size_of};

    #[test]
    fn umad_gid_layout() {
        assert_eq!(size_of::<umad_gid>(), 16);
        assert_eq!(align_of::<umad_gid>(), 4);
        assert_eq!(size_of::<umad_gid_global>(), 16);
        assert_eq!(offset_of!(umad_gid_global, subnet_prefix), 0);
        assert_eq!(offset_of!(umad_gid_global, interface_id), 8);
    }

    #[test]
    fn ib_mad_addr_layout() {
        assert_eq!(size_of::<ib_mad_addr_t>(), 44);
        assert_eq!(align_of::<ib_mad_addr_t>(), 4);
        assert_eq!(offset_of!(ib_mad_addr_t, qpn), 0);
        assert_eq!(offset_of!(ib_mad_addr_t, qkey), 4);
        assert_eq!(offset_of!(ib_mad_addr_t, lid), 8);
        assert_eq!(offset_of!(ib_mad_addr_t, sl), 10);
        assert_eq!(offset_of!(ib_mad_addr_t, path_bits), 11);
        assert_eq!(offset_of!(ib_mad_addr_t, grh_present), 12);
        assert_eq!(offset_of!(ib_mad_addr_t, gid_index), 13);
        assert_eq!(offset_of!(ib_mad_addr_t, hop_limit), 14);
        assert_eq!(offset_of!(ib_mad_addr_t, traffic_class), 15);
        assert_eq!(offset_of!(ib_mad_addr_t, gid), 16);
        assert_eq!(offset_of!(ib_mad_addr_t, flow_label), 32);
        assert_eq!(offset_of!(ib_mad_addr_t, pkey_index), 36);
        assert_eq!(offset_of!(ib_mad_addr_t, reserved), 38);
    }

    #[test]
    fn ib_user_mad_layout() {
        assert_eq!(size_of::<ib_user_mad_t>(), 64);
        assert_eq!(align_of::<ib_user_mad_t>(), 4);
        assert_eq!(offset_of!(ib_user_mad_t, agent_id), 0);
        assert_eq!(offset_of!(ib_user_mad_t, status), 4);
        assert_eq!(offset_of!(ib_user_mad_t, timeout_ms), 8);
        assert_eq!(offset_of!(ib_user_mad_t, retries), 12);
        assert_eq!(offset_of!(ib_user_mad_t, length), 16);
        assert_eq!(offset_of!(ib_user_mad_t, addr), 20);
    }

    /// The C mirrors agree with the one header view the crate reads and writes through.
    #[test]
    fn mirrors_agree_with_the_header_view() {
        use umad::abi::field;
        assert_eq!(offset_of!(ib_user_mad_t, agent_id), field::ID.start);
        assert_eq!(offset_of!(ib_user_mad_t, status), field::STATUS.start);
        assert_eq!(
            offset_of!(ib_user_mad_t, timeout_ms),
            field::TIMEOUT_MS.start
        );
        assert_eq!(offset_of!(ib_user_mad_t, retries), field::RETRIES.start);
        assert_eq!(offset_of!(ib_user_mad_t, length), field::LENGTH.start);
        assert_eq!(offset_of!(ib_user_mad_t, addr), field::ADDR);
        assert_eq!(size_of::<ib_user_mad_t>(), umad::abi::HDR_LEN);
        assert_eq!(size_of::<ib_mad_addr_t>(), field::addr::LEN);
        assert_eq!(offset_of!(ib_mad_addr_t, qpn), field::addr::QPN.start);
        assert_eq!(offset_of!(ib_mad_addr_t, qkey), field::addr::QKEY.start);
        assert_eq!(offset_of!(ib_mad_addr_t, lid), field::addr::LID.start);
        assert_eq!(offset_of!(ib_mad_addr_t, sl), field::addr::SL);
        assert_eq!(offset_of!(ib_mad_addr_t, path_bits), field::addr::PATH_BITS);
        assert_eq!(
            offset_of!(ib_mad_addr_t, grh_present),
            field::addr::GRH_PRESENT
        );
        assert_eq!(offset_of!(ib_mad_addr_t, gid_index), field::addr::GID_INDEX);
        assert_eq!(offset_of!(ib_mad_addr_t, hop_limit), field::addr::HOP_LIMIT);
        assert_eq!(
            offset_of!(ib_mad_addr_t, traffic_class),
            field::addr::TRAFFIC_CLASS
        );
        assert_eq!(offset_of!(ib_mad_addr_t, gid), field::addr::GID.start);
        assert_eq!(
            offset_of!(ib_mad_addr_t, flow_label),
            field::addr::FLOW_LABEL.start
        );
        assert_eq!(
            offset_of!(ib_mad_addr_t, pkey_index),
            field::addr::PKEY_INDEX.start
        );
        assert_eq!(
            offset_of!(ib_mad_addr_t, reserved),
            field::addr::RESERVED.start
        );
    }

    #[test]
    fn umad_port_layout() {
        assert_eq!(size_of::<umad_port_t>(), 112);
        assert_eq!(align_of::<umad_port_t>(), 8);
        assert_eq!(offset_of!(umad_port_t, ca_name), 0);
        assert_eq!(offset_of!(umad_port_t, portnum), 20);
        assert_eq!(offset_of!(umad_port_t, base_lid), 24);
        assert_eq!(offset_of!(umad_port_t, lmc), 28);
        assert_eq!(offset_of!(umad_port_t, sm_lid), 32);
        assert_eq!(offset_of!(umad_port_t, sm_sl), 36);
        assert_eq!(offset_of!(umad_port_t, state), 40);
        assert_eq!(offset_of!(umad_port_t, phys_state), 44);
        assert_eq!(offset_of!(umad_port_t, rate), 48);
        assert_eq!(offset_of!(umad_port_t, capmask), 52);
        assert_eq!(offset_of!(umad_port_t, gid_prefix), 56);
        assert_eq!(offset_of!(umad_port_t, port_guid), 64);
        assert_eq!(offset_of!(umad_port_t, pkeys_size), 72);
        assert_eq!(offset_of!(umad_port_t, pkeys), 80);
        assert_eq!(offset_of!(umad_port_t, link_layer), 88);
    }

    #[test]
    fn umad_ca_layout() {
        assert_eq!(size_of::<umad_ca_t>(), 208);
        assert_eq!(align_of::<umad_ca_t>(), 8);
        assert_eq!(offset_of!(umad_ca_t, ca_name), 0);
        assert_eq!(offset_of!(umad_ca_t, node_type), 20);
        assert_eq!(offset_of!(umad_ca_t, numports), 24);
        assert_eq!(offset_of!(umad_ca_t, fw_ver), 28);
        assert_eq!(offset_of!(umad_ca_t, ca_type), 48);
        assert_eq!(offset_of!(umad_ca_t, hw_ver), 88);
        assert_eq!(offset_of!(umad_ca_t, node_guid), 112);
        assert_eq!(offset_of!(umad_ca_t, system_guid), 120);
        assert_eq!(offset_of!(umad_ca_t, ports), 128);
    }

    #[test]
    fn umad_device_node_layout() {
        assert_eq!(size_of::<umad_device_node>(), 16);
        assert_eq!(align_of::<umad_device_node>(), 8);
        assert_eq!(offset_of!(umad_device_node, next), 0);
        assert_eq!(offset_of!(umad_device_node, ca_name), 8);
    }

    #[test]
    fn umad_reg_attr_layout() {
        assert_eq!(size_of::<umad_reg_attr>(), 32);
        assert_eq!(align_of::<umad_reg_attr>(), 8);
        assert_eq!(offset_of!(umad_reg_attr, mgmt_class), 0);
        assert_eq!(offset_of!(umad_reg_attr, mgmt_class_version), 1);
        assert_eq!(offset_of!(umad_reg_attr, flags), 4);
        assert_eq!(offset_of!(umad_reg_attr, method_mask), 8);
        assert_eq!(offset_of!(umad_reg_attr, oui), 24);
        assert_eq!(offset_of!(umad_reg_attr, rmpp_version), 28);
    }

    #[test]
    fn umad_ca_pair_layout() {
        assert_eq!(size_of::<umad_ca_pair>(), 48);
        assert_eq!(align_of::<umad_ca_pair>(), 4);
        assert_eq!(offset_of!(umad_ca_pair, smi_name), 0);
        assert_eq!(offset_of!(umad_ca_pair, smi_preferred_port), 20);
        assert_eq!(offset_of!(umad_ca_pair, gsi_name), 24);
        assert_eq!(offset_of!(umad_ca_pair, gsi_preferred_port), 44);
    }
}
