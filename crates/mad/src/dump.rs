//! The text libibmad's dump functions print for SMP attributes (`mad_dump_nodeinfo`,
//! `mad_dump_portinfo`, `mad_dump_switchinfo`, `mad_dump_mlnx_ext_port_info`,
//! `mad_dump_portinfo_ext`, `mad_dump_sltovl`, `mad_dump_vlarbitration`, `xdump`): one
//! `Name:.....value` line per field, the name and its dots filling 33 columns.
//!
//! Each dump is a table of [`Field`]s (name, bit offset, width, how the value prints),
//! libibmad's `ib_mad_f` entries for that attribute in its order. A field's offset is the
//! IBA's (bit 0 = the most significant bit of byte 0); [`dump_fields`] reads each value from
//! the raw attribute data as libibmad's `mad_decode_field` does and prints it with its
//! [`Fmt`], whose texts are libibmad's `mad_dump_*` functions' (the enum names reuse this
//! crate's `Display` impls: [`NodeType`], [`PortState`], [`PhysPortState`], [`LinkWidth`],
//! [`Mtu`]).
//!
//! ```
//! use ibmad::dump::{dump_fields, NODE_INFO};
//! let mut data = [0u8; 64];
//! data[2] = 2; // NodeType: Switch
//! let text = dump_fields(&data, NODE_INFO);
//! assert!(text.contains("NodeType:........................Switch\n"));
//! ```

use core::fmt::Write;

use crate::{LinkWidth, Mtu, NodeType, PhysPortState, PortState};

pub mod perf;

/// How a field's value prints (one libibmad `mad_dump_*` function each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fmt {
    /// `mad_dump_uint`: decimal.
    Uint,
    /// `mad_dump_hex`: `0x` and two hex digits per byte of the field.
    Hex,
    /// `mad_dump_node_type`.
    NodeType,
    /// `mad_dump_portcapmask`: the hex value, then one tab-indented line per known bit.
    PortCapMask,
    /// `mad_dump_portcapmask2`.
    PortCapMask2,
    /// `mad_dump_linkwidth`: one width.
    LinkWidth,
    /// `mad_dump_linkwidthsup`: a mask, `(IBA extension)` for unusual ones.
    LinkWidthSupported,
    /// `mad_dump_linkwidthen`: a mask.
    LinkWidthEnabled,
    /// `mad_dump_linkspeed`: one speed.
    LinkSpeed,
    /// `mad_dump_linkspeedsup` / `mad_dump_linkspeeden`: a mask.
    LinkSpeedMask,
    /// `mad_dump_linkspeedext`: one extended speed.
    LinkSpeedExt,
    /// `mad_dump_linkspeedextsup`: a mask.
    LinkSpeedExtSupported,
    /// `mad_dump_linkspeedexten`: a mask, or 30 = disabled.
    LinkSpeedExtEnabled,
    /// `mad_dump_portstate`.
    PortState,
    /// `mad_dump_physportstate`.
    PhysPortState,
    /// `mad_dump_linkdowndefstate`.
    LinkDownDefState,
    /// `mad_dump_mtu`.
    Mtu,
    /// `mad_dump_vlcap`.
    VlCap,
    /// `mad_dump_opervls`.
    OperVls,
}

/// One field of an attribute dump.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// The name libibmad prints.
    pub name: &'static str,
    /// Bit offset in the attribute data, IBA style (0 = the MSB of byte 0).
    pub offset: u16,
    /// Width in bits (at most 64).
    pub width: u8,
    /// How the value prints.
    pub fmt: Fmt,
}

const fn f(name: &'static str, offset: u16, width: u8, fmt: Fmt) -> Field {
    Field {
        name,
        offset,
        width,
        fmt,
    }
}

/// NodeInfo (`mad_dump_nodeinfo`, `smpquery nodeinfo`).
pub const NODE_INFO: &[Field] = &[
    f("BaseVers", 0, 8, Fmt::Uint),
    f("ClassVers", 8, 8, Fmt::Uint),
    f("NodeType", 16, 8, Fmt::NodeType),
    f("NumPorts", 24, 8, Fmt::Uint),
    f("SystemGuid", 32, 64, Fmt::Hex),
    f("Guid", 96, 64, Fmt::Hex),
    f("PortGuid", 160, 64, Fmt::Hex),
    f("PartCap", 224, 16, Fmt::Uint),
    f("DevId", 240, 16, Fmt::Hex),
    f("Revision", 256, 32, Fmt::Hex),
    f("LocalPort", 288, 8, Fmt::Uint),
    f("VendorId", 296, 24, Fmt::Hex),
];

/// The name of PortInfo's M_Key field, which tools hide unless asked (`-K`).
pub const PORT_INFO_MKEY: &str = "Mkey";

/// PortInfo (`mad_dump_portinfo`, infiniband-diags' `dump_portinfo`): the IBA 1.2 fields
/// then CapabilityMask2 and the extended speeds.
pub const PORT_INFO: &[Field] = &[
    f(PORT_INFO_MKEY, 0, 64, Fmt::Hex),
    f("GidPrefix", 64, 64, Fmt::Hex),
    f("Lid", 128, 16, Fmt::Uint),
    f("SMLid", 144, 16, Fmt::Uint),
    f("CapMask", 160, 32, Fmt::PortCapMask),
    f("DiagCode", 192, 16, Fmt::Hex),
    f("MkeyLeasePeriod", 208, 16, Fmt::Uint),
    f("LocalPort", 224, 8, Fmt::Uint),
    f("LinkWidthEnabled", 232, 8, Fmt::LinkWidthEnabled),
    f("LinkWidthSupported", 240, 8, Fmt::LinkWidthSupported),
    f("LinkWidthActive", 248, 8, Fmt::LinkWidth),
    f("LinkSpeedSupported", 256, 4, Fmt::LinkSpeedMask),
    f("LinkState", 260, 4, Fmt::PortState),
    f("PhysLinkState", 264, 4, Fmt::PhysPortState),
    f("LinkDownDefState", 268, 4, Fmt::LinkDownDefState),
    f("ProtectBits", 272, 2, Fmt::Uint),
    f("LMC", 277, 3, Fmt::Uint),
    f("LinkSpeedActive", 280, 4, Fmt::LinkSpeed),
    f("LinkSpeedEnabled", 284, 4, Fmt::LinkSpeedMask),
    f("NeighborMTU", 288, 4, Fmt::Mtu),
    f("SMSL", 292, 4, Fmt::Uint),
    f("VLCap", 296, 4, Fmt::VlCap),
    f("InitType", 300, 4, Fmt::Hex),
    f("VLHighLimit", 304, 8, Fmt::Uint),
    f("VLArbHighCap", 312, 8, Fmt::Uint),
    f("VLArbLowCap", 320, 8, Fmt::Uint),
    f("InitReply", 328, 4, Fmt::Hex),
    f("MtuCap", 332, 4, Fmt::Mtu),
    f("VLStallCount", 336, 3, Fmt::Uint),
    f("HoqLife", 339, 5, Fmt::Uint),
    f("OperVLs", 344, 4, Fmt::OperVls),
    f("PartEnforceInb", 348, 1, Fmt::Uint),
    f("PartEnforceOutb", 349, 1, Fmt::Uint),
    f("FilterRawInb", 350, 1, Fmt::Uint),
    f("FilterRawOutb", 351, 1, Fmt::Uint),
    f("MkeyViolations", 352, 16, Fmt::Uint),
    f("PkeyViolations", 368, 16, Fmt::Uint),
    f("QkeyViolations", 384, 16, Fmt::Uint),
    f("GuidCap", 400, 8, Fmt::Uint),
    f("ClientReregister", 408, 1, Fmt::Uint),
    f("McastPkeyTrapSuppressionEnabled", 409, 2, Fmt::Uint),
    f("SubnetTimeout", 411, 5, Fmt::Uint),
    f("RespTimeVal", 419, 5, Fmt::Uint),
    f("LocalPhysErr", 424, 4, Fmt::Uint),
    f("OverrunErr", 428, 4, Fmt::Uint),
    f("MaxCreditHint", 432, 16, Fmt::Uint),
    f("RoundTrip", 456, 24, Fmt::Uint),
    f("CapabilityMask2", 480, 16, Fmt::PortCapMask2),
    f("LinkSpeedExtActive", 496, 4, Fmt::LinkSpeedExt),
    f("LinkSpeedExtSupported", 500, 4, Fmt::LinkSpeedExtSupported),
    f("LinkSpeedExtEnabled", 507, 5, Fmt::LinkSpeedExtEnabled),
];

/// SwitchInfo (`mad_dump_switchinfo`).
pub const SWITCH_INFO: &[Field] = &[
    f("LinearFdbCap", 0, 16, Fmt::Uint),
    f("RandomFdbCap", 16, 16, Fmt::Uint),
    f("McastFdbCap", 32, 16, Fmt::Uint),
    f("LinearFdbTop", 48, 16, Fmt::Uint),
    f("DefPort", 64, 8, Fmt::Uint),
    f("DefMcastPrimPort", 72, 8, Fmt::Uint),
    f("DefMcastNotPrimPort", 80, 8, Fmt::Uint),
    f("LifeTime", 88, 5, Fmt::Uint),
    f("StateChange", 93, 1, Fmt::Uint),
    f("OptSLtoVLMapping", 94, 2, Fmt::Uint),
    f("LidsPerPort", 96, 16, Fmt::Uint),
    f("PartEnforceCap", 112, 16, Fmt::Uint),
    f("InboundPartEnf", 128, 1, Fmt::Uint),
    f("OutboundPartEnf", 129, 1, Fmt::Uint),
    f("FilterRawInbound", 130, 1, Fmt::Uint),
    f("FilterRawOutbound", 131, 1, Fmt::Uint),
    f("EnhancedPort0", 132, 1, Fmt::Uint),
    f("MulticastFDBTop", 144, 16, Fmt::Hex),
];

/// Mellanox ExtendedPortInfo (`mad_dump_mlnx_ext_port_info`).
pub const MLNX_EXT_PORT_INFO: &[Field] = &[
    f("StateChangeEnable", 24, 8, Fmt::Hex),
    f("LinkSpeedSupported", 56, 8, Fmt::Hex),
    f("LinkSpeedEnabled", 88, 8, Fmt::Hex),
    f("LinkSpeedActive", 120, 8, Fmt::Hex),
];

/// PortInfoExtended (`mad_dump_portinfo_ext`). libibmad declares the HDR and NDR FEC fields
/// with raw (not IBA-style) offsets 112, 128, 144 and 160; read as libibmad reads them,
/// those are the IBA bits 96, 144, 128 and 176, which is what is printed.
pub const PORT_INFO_EXT: &[Field] = &[
    f("CapMask", 0, 32, Fmt::Hex),
    f("FECModeActive", 32, 16, Fmt::Uint),
    f("FDRFECModeSupported", 48, 16, Fmt::Hex),
    f("FDRFECModeEnabled", 64, 16, Fmt::Hex),
    f("EDRFECModeSupported", 80, 16, Fmt::Hex),
    f("EDRFECModeEnabled", 96, 16, Fmt::Hex),
    f("HDRFECModeSupported", 96, 16, Fmt::Hex),
    f("HDRFECModeEnabled", 144, 16, Fmt::Hex),
    f("NDRFECModeSupported", 128, 16, Fmt::Hex),
    f("NDRFECModeEnabled", 176, 16, Fmt::Hex),
];

/// The value of `width` bits at IBA bit `offset` of `data` (bits past the end read as 0).
pub fn get_bits(data: &[u8], offset: u16, width: u8) -> u64 {
    let mut v: u64 = 0;
    for bit in usize::from(offset)..usize::from(offset) + usize::from(width.min(64)) {
        let byte = data.get(bit / 8).copied().unwrap_or(0);
        v = (v << 1) | u64::from((byte >> (7 - bit % 8)) & 1);
    }
    v
}

/// `Name:` padded with dots to 33 columns, as libibmad's `_mad_dump_field` (a name of 32
/// characters or more gets no dots).
pub fn label(name: &str) -> String {
    let dots = 32usize.saturating_sub(name.len());
    format!("{name}:{}", ".".repeat(dots))
}

/// One `Name:.....value` line without the newline: `value` printed with `fmt` for a field
/// `width` bits wide.
pub fn field_line(name: &str, fmt: Fmt, width: u8, value: u64) -> String {
    let mut s = label(name);
    s.push_str(&format_value(fmt, width, value));
    s
}

/// `value` as libibmad's dump function for `fmt` prints it, for a field `width` bits wide.
pub fn format_value(fmt: Fmt, width: u8, value: u64) -> String {
    let bytes = usize::from(width).div_ceil(8).max(1);
    // libibmad passes the value as an int for the enum dumpers.
    let small = value as u32;
    match fmt {
        Fmt::Uint => format!("{value}"),
        Fmt::Hex => format!("0x{value:0w$x}", w = bytes * 2),
        Fmt::NodeType => NodeType::from(small as u8).to_string(),
        Fmt::PortCapMask => cap_mask(small, PORT_CAP_BITS),
        Fmt::PortCapMask2 => cap_mask(small, PORT_CAP2_BITS),
        Fmt::LinkWidth => LinkWidth::from(small as u8).to_string(),
        Fmt::LinkWidthEnabled => width_mask(small),
        Fmt::LinkWidthSupported => {
            let mut s = width_mask(small);
            if !matches!(small, 1 | 3 | 7 | 11 | 15 | 17 | 19 | 23 | 27 | 31) && small >> 5 == 0 {
                s.push_str(" (IBA extension)");
            }
            s
        }
        Fmt::LinkSpeed => match small {
            0 => "Extended speed".into(),
            1 => "2.5 Gbps".into(),
            2 => "5.0 Gbps".into(),
            4 => "10.0 Gbps".into(),
            n => format!("undefined ({n})"),
        },
        Fmt::LinkSpeedMask => speed_mask(small),
        Fmt::LinkSpeedExt => match small {
            0 => "No Extended Speed".into(),
            1 => "14.0625 Gbps".into(),
            2 => "25.78125 Gbps".into(),
            4 => "53.125 Gbps".into(),
            8 => "106.25 Gbps".into(),
            n => format!("undefined ({n})"),
        },
        Fmt::LinkSpeedExtSupported => speed_ext_mask(small),
        Fmt::LinkSpeedExtEnabled if small == 30 => "Extended link speeds disabled".into(),
        Fmt::LinkSpeedExtEnabled => speed_ext_mask(small),
        Fmt::PortState => PortState::from(small as u8).to_string(),
        Fmt::PhysPortState => PhysPortState::from(small as u8).to_string(),
        Fmt::LinkDownDefState => match small {
            0 => "NoChange".into(),
            1 => "Sleep".into(),
            2 => "Polling".into(),
            n => format!("?({n})"),
        },
        Fmt::Mtu => Mtu::from(small as u8).to_string(),
        Fmt::VlCap | Fmt::OperVls => match small {
            0 if fmt == Fmt::OperVls => "No change".into(),
            1 => "VL0".into(),
            2 => "VL0-1".into(),
            3 => "VL0-3".into(),
            4 => "VL0-7".into(),
            5 => "VL0-14".into(),
            n => format!("?({n})"),
        },
    }
}

/// PortInfo CapabilityMask bits and their names (`mad_dump_portcapmask`).
const PORT_CAP_BITS: &[(u8, &str)] = &[
    (1, "IsSM"),
    (2, "IsNoticeSupported"),
    (3, "IsTrapSupported"),
    (4, "IsOptionalIPDSupported"),
    (5, "IsAutomaticMigrationSupported"),
    (6, "IsSLMappingSupported"),
    (7, "IsMKeyNVRAM"),
    (8, "IsPKeyNVRAM"),
    (9, "IsLedInfoSupported"),
    (10, "IsSMdisabled"),
    (11, "IsSystemImageGUIDsupported"),
    (12, "IsPkeySwitchExternalPortTrapSupported"),
    (14, "IsExtendedSpeedsSupported"),
    (15, "IsCapabilityMask2Supported"),
    (16, "IsCommunicatonManagementSupported"),
    (17, "IsSNMPTunnelingSupported"),
    (18, "IsReinitSupported"),
    (19, "IsDeviceManagementSupported"),
    (20, "IsVendorClassSupported"),
    (21, "IsDRNoticeSupported"),
    (22, "IsCapabilityMaskNoticeSupported"),
    (23, "IsBootManagementSupported"),
    (24, "IsLinkRoundTripLatencySupported"),
    (25, "IsClientRegistrationSupported"),
    (26, "IsOtherLocalChangesNoticeSupported"),
    (27, "IsLinkSpeedWidthPairsTableSupported"),
    (28, "IsVendorSpecificMadsTableSupported"),
    (29, "IsMcastPkeyTrapSuppressionSupported"),
    (30, "IsMulticastFDBTopSupported"),
    (31, "IsHierarchyInfoSupported"),
];

/// PortInfo CapabilityMask2 bits and their names (`mad_dump_portcapmask2`).
const PORT_CAP2_BITS: &[(u8, &str)] = &[
    (0, "IsSetNodeDescriptionSupported"),
    (1, "IsPortInfoExtendedSupported"),
    (2, "IsVirtualizationSupported"),
    (3, "IsSwitchPortStateTableSupported"),
    (4, "IsLinkWidth2xSupported"),
    (5, "IsLinkSpeedHDRSupported"),
    (6, "IsMKeyProtectBitsExtSupported"),
    (7, "IsEnhancedTrap128Supported"),
    (8, "IsPartitionTopSupported"),
    (9, "IsEnhancedQoSArbiterSupported"),
    (10, "IsLinkSpeedNDRSupported"),
];

fn cap_mask(mask: u32, bits: &[(u8, &str)]) -> String {
    let mut s = format!("0x{mask:x}");
    for &(bit, name) in bits {
        if mask & (1 << bit) != 0 {
            let _ = write!(s, "\n\t\t\t\t{name}");
        }
    }
    s
}

/// `a or b or c`, from the names of the set bits, or `None` if none is set.
fn or_list(mask: u32, names: &[&str]) -> Option<String> {
    let parts: Vec<&str> = names
        .iter()
        .enumerate()
        .filter(|(i, _)| mask & (1 << i) != 0)
        .map(|(_, n)| *n)
        .collect();
    (!parts.is_empty()).then(|| parts.join(" or "))
}

fn width_mask(w: u32) -> String {
    let list = or_list(w, &["1X", "4X", "8X", "12X", "2X"]);
    if w == 0 || w >> 5 != 0 {
        let mut s = list.map(|l| format!("{l} or ")).unwrap_or_default();
        let _ = write!(s, "undefined ({w})");
        s
    } else {
        list.unwrap_or_default()
    }
}

fn speed_mask(sp: u32) -> String {
    let list = or_list(sp, &["2.5 Gbps", "5.0 Gbps", "10.0 Gbps"]);
    let mut s = if sp == 0 || sp >> 3 != 0 {
        let mut s = list.map(|l| format!("{l} or ")).unwrap_or_default();
        let _ = write!(s, "undefined ({sp})");
        s
    } else {
        list.unwrap_or_default()
    };
    if !matches!(sp, 1 | 3 | 5 | 7) && sp >> 3 == 0 {
        s.push_str(" (IBA extension)");
    }
    s
}

fn speed_ext_mask(sp: u32) -> String {
    if sp == 0 {
        return "0".into();
    }
    let list = or_list(
        sp,
        &[
            "14.0625 Gbps",
            "25.78125 Gbps",
            "53.125 Gbps",
            "106.25 Gbps",
        ],
    );
    if sp >> 4 != 0 {
        let mut s = list.map(|l| format!("{l} or ")).unwrap_or_default();
        let _ = write!(s, "undefined ({sp})");
        s
    } else {
        list.unwrap_or_default()
    }
}

/// The warning libibmad's dumper for `fmt` prints on stderr (`IBWARN`) when it formats
/// `value`, as (C function, message); `None` for nearly everything. Only
/// `mad_dump_linkwidth` (LinkWidthActive) warns: `bad width <n>` for a width that is none of
/// 1X, 4X, 8X, 12X, 2X, e.g. 0 on a switch port without a link. Printing is the caller's
/// business (this crate prints nothing).
pub fn value_warning(fmt: Fmt, value: u64) -> Option<(&'static str, String)> {
    // libibmad reads the value as an int.
    let v = value as u32 as i32;
    match fmt {
        Fmt::LinkWidth if !matches!(v, 1 | 2 | 4 | 8 | 16) => {
            Some(("mad_dump_linkwidth", format!("bad width {v}")))
        }
        _ => None,
    }
}

/// [`value_warning`] of every field of `fields` read from `data`, in field order (the
/// warnings a [`dump_fields`] of them makes C print).
pub fn fields_warnings(data: &[u8], fields: &[Field]) -> Vec<(&'static str, String)> {
    fields
        .iter()
        .filter_map(|f| value_warning(f.fmt, get_bits(data, f.offset, f.width)))
        .collect()
}

/// Every field of `fields` read from `data`, one line each (newline-terminated), as
/// libibmad's `_dump_fields`.
pub fn dump_fields(data: &[u8], fields: &[Field]) -> String {
    dump_fields_hiding(data, fields, None)
}

/// [`dump_fields`], with the field named `hidden` (if any) shown as `<not displayed>`, as
/// infiniband-diags does for the M_Key without `-K`.
pub fn dump_fields_hiding(data: &[u8], fields: &[Field], hidden: Option<&str>) -> String {
    let mut s = String::new();
    for fl in fields {
        if Some(fl.name) == hidden {
            s.push_str(&label(fl.name));
            s.push_str("<not displayed>");
        } else {
            let v = get_bits(data, fl.offset, fl.width);
            s.push_str(&field_line(fl.name, fl.fmt, fl.width, v));
        }
        s.push('\n');
    }
    s
}

/// One SL-to-VL mapping table as `mad_dump_sltovl` prints it: `| 0| 1|…|15|` and a newline.
pub fn sl2vl_row(data: &[u8]) -> String {
    let mut s = String::from("|");
    for sl in 0..16 {
        let byte = data.get(sl / 2).copied().unwrap_or(0);
        let vl = if sl % 2 == 0 { byte >> 4 } else { byte & 0xf };
        let _ = write!(s, "{vl:2}|");
    }
    s.push('\n');
    s
}

/// The first `entries` entries of a VL arbitration block as `mad_dump_vlarbitration` prints
/// them: a newline, then the `VL    : |` and `WEIGHT: |` rows, then a newline.
pub fn vlarb_rows(data: &[u8], entries: usize) -> String {
    let mut vl = String::from("\nVL    : |");
    let mut weight = String::from("\nWEIGHT: |");
    for i in 0..entries {
        let b = |k: usize| data.get(2 * i + k).copied().unwrap_or(0);
        let _ = write!(vl, "0x{:<2X}|", b(0) & 0xf);
        let _ = write!(weight, "0x{:<2X}|", b(1));
    }
    vl.push_str(&weight);
    vl.push('\n');
    vl
}

/// `data` as libibmad's `xdump` prints it: lowercase hex, two bytes per group, groups
/// separated by spaces, 16 bytes per line, a final newline.
pub fn xdump(data: &[u8]) -> String {
    let mut s = String::new();
    let mut i = 0;
    while i < data.len() {
        let _ = write!(s, "{:02x}", data[i]);
        i += 1;
        if i >= data.len() {
            break;
        }
        let _ = write!(s, "{:02x}", data[i]);
        i += 1;
        s.push(if i % 16 != 0 { ' ' } else { '\n' });
    }
    if i % 16 != 0 {
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits() {
        let d = [0xab, 0xcd, 0xef, 0x12];
        assert_eq!(get_bits(&d, 0, 8), 0xab);
        assert_eq!(get_bits(&d, 4, 8), 0xbc);
        assert_eq!(get_bits(&d, 0, 32), 0xabcd_ef12);
        assert_eq!(get_bits(&d, 28, 8), 0x20);
    }

    #[test]
    fn values() {
        assert_eq!(format_value(Fmt::Hex, 4, 0), "0x00");
        assert_eq!(format_value(Fmt::Hex, 24, 0x2c9), "0x0002c9");
        assert_eq!(format_value(Fmt::LinkWidthEnabled, 8, 3), "1X or 4X");
        assert_eq!(
            format_value(Fmt::LinkWidthSupported, 8, 31),
            "1X or 4X or 8X or 12X or 2X"
        );
        assert_eq!(
            format_value(Fmt::LinkWidthSupported, 8, 2),
            "4X (IBA extension)"
        );
        assert_eq!(format_value(Fmt::LinkWidthEnabled, 8, 0), "undefined (0)");
        assert_eq!(
            format_value(Fmt::LinkSpeedMask, 4, 7),
            "2.5 Gbps or 5.0 Gbps or 10.0 Gbps"
        );
        assert_eq!(
            format_value(Fmt::LinkSpeedMask, 4, 0),
            "undefined (0) (IBA extension)"
        );
        assert_eq!(format_value(Fmt::LinkSpeedExtSupported, 4, 0), "0");
        assert_eq!(
            format_value(Fmt::LinkSpeedExtEnabled, 5, 3),
            "14.0625 Gbps or 25.78125 Gbps"
        );
        assert_eq!(
            format_value(Fmt::PortCapMask2, 16, 0x30),
            "0x30\n\t\t\t\tIsLinkWidth2xSupported\n\t\t\t\tIsLinkSpeedHDRSupported"
        );
        assert_eq!(format_value(Fmt::OperVls, 4, 0), "No change");
        assert_eq!(format_value(Fmt::VlCap, 4, 0), "?(0)");
        assert_eq!(
            label("McastPkeyTrapSuppressionEnabled"),
            "McastPkeyTrapSuppressionEnabled:."
        );
    }

    #[test]
    fn hexdump() {
        let d: Vec<u8> = (0..20).collect();
        assert_eq!(
            xdump(&d),
            "0001 0203 0405 0607 0809 0a0b 0c0d 0e0f\n1011 1213 \n"
        );
        assert_eq!(xdump(&[1, 2, 3]), "0102 03\n");
    }

    #[test]
    fn link_width_warnings() {
        assert_eq!(
            value_warning(Fmt::LinkWidth, 0),
            Some(("mad_dump_linkwidth", "bad width 0".to_string()))
        );
        for ok in [1, 2, 4, 8, 16] {
            assert_eq!(value_warning(Fmt::LinkWidth, ok), None);
        }
        assert_eq!(value_warning(Fmt::LinkWidthEnabled, 0), None);
        let mut pi = [0u8; 64];
        let active = PORT_INFO
            .iter()
            .find(|f| f.name == "LinkWidthActive")
            .unwrap();
        assert_eq!(fields_warnings(&pi, PORT_INFO).len(), 1);
        pi[usize::from(active.offset / 8)] = 2;
        assert!(fields_warnings(&pi, PORT_INFO).is_empty());
    }

    #[test]
    fn tables() {
        let mut sl = [0u8; 8];
        sl[0] = 0x01;
        sl[7] = 0xf0;
        assert_eq!(
            sl2vl_row(&sl),
            "| 0| 1| 0| 0| 0| 0| 0| 0| 0| 0| 0| 0| 0| 0|15| 0|\n"
        );
        assert_eq!(
            vlarb_rows(&[0x10, 0xff, 1, 2], 2),
            "\nVL    : |0x0 |0x1 |\nWEIGHT: |0xFF|0x2 |\n"
        );
    }

    /// The tables read the same bits as the crate's Reprs (the wire layout is written once
    /// there; a table that drifted from it would fail here).
    #[test]
    fn tables_agree_with_the_reprs() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..50 {
            let data: Vec<u8> = (0..64)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            let get = |t: &[Field], name: &str| {
                let f = t.iter().find(|f| f.name == name).unwrap();
                get_bits(&data, f.offset, f.width)
            };
            let ni = crate::NodeInfo::parse(&data).unwrap();
            let n = |name| get(NODE_INFO, name);
            assert_eq!(n("NodeType"), u64::from(u8::from(ni.node_type)));
            assert_eq!(n("NumPorts"), u64::from(ni.num_ports));
            assert_eq!(n("SystemGuid"), ni.system_image_guid);
            assert_eq!(n("Guid"), ni.node_guid);
            assert_eq!(n("PortGuid"), ni.port_guid);
            assert_eq!(n("PartCap"), u64::from(ni.partition_cap));
            assert_eq!(n("DevId"), u64::from(ni.device_id));
            assert_eq!(n("Revision"), u64::from(ni.revision));
            assert_eq!(n("LocalPort"), u64::from(ni.local_port_num));
            assert_eq!(n("VendorId"), u64::from(ni.vendor_id));
            let si = crate::SwitchInfo::parse(&data).unwrap();
            let w = |name| get(SWITCH_INFO, name);
            assert_eq!(w("LinearFdbCap"), u64::from(si.linear_fdb_cap));
            assert_eq!(w("LinearFdbTop"), u64::from(si.linear_fdb_top));
            assert_eq!(w("LifeTime"), u64::from(si.life_time_value));
            assert_eq!(w("StateChange"), u64::from(si.port_state_change));
            assert_eq!(w("LidsPerPort"), u64::from(si.lids_per_port));
            assert_eq!(w("PartEnforceCap"), u64::from(si.partition_enforcement_cap));
            assert_eq!(w("EnhancedPort0"), u64::from(si.enhanced_port0));
            assert_eq!(w("MulticastFDBTop"), u64::from(si.multicast_fdb_top));
            let pi = crate::PortInfo::parse(&data).unwrap();
            let p = |name| get(PORT_INFO, name);
            assert_eq!(p("Mkey"), pi.m_key);
            assert_eq!(p("GidPrefix"), pi.gid_prefix);
            assert_eq!(p("Lid"), u64::from(pi.lid));
            assert_eq!(p("SMLid"), u64::from(pi.master_sm_lid));
            assert_eq!(p("CapMask"), u64::from(pi.capability_mask));
            assert_eq!(
                p("LinkWidthActive"),
                u64::from(u8::from(pi.link_width_active))
            );
            assert_eq!(p("LinkSpeedSupported"), u64::from(pi.link_speed_supported));
            assert_eq!(p("LinkState"), u64::from(u8::from(pi.port_state)));
            assert_eq!(
                p("PhysLinkState"),
                u64::from(u8::from(pi.port_physical_state))
            );
            assert_eq!(p("LMC"), u64::from(pi.lmc));
            assert_eq!(p("LinkSpeedActive"), u64::from(pi.link_speed_active));
            assert_eq!(p("NeighborMTU"), u64::from(u8::from(pi.neighbor_mtu)));
            assert_eq!(p("VLCap"), u64::from(pi.vl_cap));
            assert_eq!(p("VLArbHighCap"), u64::from(pi.vl_arbitration_high_cap));
            assert_eq!(p("VLArbLowCap"), u64::from(pi.vl_arbitration_low_cap));
            assert_eq!(p("MtuCap"), u64::from(u8::from(pi.mtu_cap)));
            assert_eq!(p("HoqLife"), u64::from(pi.hoq_life));
            assert_eq!(p("OperVLs"), u64::from(pi.operational_vls));
            assert_eq!(p("GuidCap"), u64::from(pi.guid_cap));
            assert_eq!(p("ClientReregister"), u64::from(pi.client_reregister));
            assert_eq!(p("SubnetTimeout"), u64::from(pi.subnet_timeout));
            assert_eq!(p("RespTimeVal"), u64::from(pi.resp_time_value));
            assert_eq!(p("OverrunErr"), u64::from(pi.overrun_errors));
            assert_eq!(p("MaxCreditHint"), u64::from(pi.max_credit_hint));
            assert_eq!(p("CapabilityMask2"), u64::from(pi.capability_mask2));
            assert_eq!(p("LinkSpeedExtActive"), u64::from(pi.link_speed_ext_active));
            assert_eq!(
                p("LinkSpeedExtSupported"),
                u64::from(pi.link_speed_ext_supported)
            );
            assert_eq!(
                p("LinkSpeedExtEnabled"),
                u64::from(pi.link_speed_ext_enabled)
            );
        }
    }
}
