//! Name tables for management classes, methods, attributes and status
//! words, returning exactly the strings libibumad's `umad_str.h` functions
//! return, typos and fallbacks included.
//!
//! | libibumad                      | here                       |
//! |--------------------------------|----------------------------|
//! | `umad_class_str()`             | [`class_str`]              |
//! | `umad_method_str()`            | [`method_str`]             |
//! | `umad_attribute_str()`         | [`attribute_str`]          |
//! | `umad_common_mad_status_str()` | [`common_mad_status_str`]  |
//! | `umad_sa_mad_status_str()`     | [`sa_mad_status_str`]      |
//!
//! This module is the crate's only copy of these texts: the `Display` impls
//! of [`MgmtClass`](crate::MgmtClass), [`Method`](crate::Method),
//! [`Status`] and [`SaStatus`](crate::SaStatus) call into
//! it. The codes it matches are the crate's constants
//! ([`crate::attr::id`], [`crate::sa::attr_id`], [`Status`]'s bits,
//! [`crate::sa::status`]), not copies of them.
//!
//! # Byte order
//!
//! Every function here takes **host-order** values, as the crate's accessors
//! return them. The C functions `umad_attribute_str()`,
//! `umad_common_mad_status_str()` and `umad_sa_mad_status_str()` take a
//! `__be16` (network order) instead; a C drop-in built on this module converts
//! with `be16toh()` / `u16::from_be()` before calling.
//!
//! # Quirks kept on purpose
//!
//! * Class 0x21 is `"CongestionManagment"` (sic).
//! * An unknown method is [`UNKNOWN_METHOD`], `"<unknown"`, without the
//!   closing `>`; every other fallback is [`UNKNOWN`], `"<unknown>"`.
//! * SA method names (`GetTable`, …) are only known for class 0x03.
//! * Performance management (0x04) has no attribute table in libibumad: only
//!   the three common attributes are named there.

use crate::header::{is_vendor_class, Status, APPLICATION_RANGE};

/// The fallback of [`class_str`] and [`attribute_str`]: `"<unknown>"`.
pub const UNKNOWN: &str = "<unknown>";

/// The fallback of [`method_str`]: `"<unknown"` — libibumad's spelling, without
/// the closing `>`.
pub const UNKNOWN_METHOD: &str = "<unknown";

/// Subnet management, LID routed.
const CLASS_SUBN_LID_ROUTED: u8 = 0x01;
/// Subnet management, directed route.
const CLASS_SUBN_DIRECTED_ROUTE: u8 = 0x81;
/// Subnet administration.
const CLASS_SUBN_ADM: u8 = 0x03;
/// Communication management.
const CLASS_CM: u8 = 0x07;

/// The name of a management class, as libibumad's `umad_class_str()`.
///
/// `mgmt_class` is header byte 1 (a single byte, so byte order does not
/// matter). Named classes get their own name (0x21 is
/// `"CongestionManagment"`, libibumad's typo); other classes in 0x09–0x0f or
/// 0x30–0x4f are `"Vendor"`, other classes in 0x10–0x2f are `"Application"`,
/// and everything else is [`UNKNOWN`].
///
/// ```
/// assert_eq!(ibmad::names::class_str(0x81), "Subn");
/// assert_eq!(ibmad::names::class_str(0x0a), "Vendor");
/// assert_eq!(ibmad::names::class_str(0x80), "<unknown>");
/// ```
#[doc(alias = "umad_class_str")]
pub fn class_str(mgmt_class: u8) -> &'static str {
    // Named classes first, then the ranges (0x10, 0x11, 0x12 and 0x21 lie in
    // the application range but have their own names), as in C.
    named_class(mgmt_class).unwrap_or(match mgmt_class {
        c if is_vendor_class(c) => "Vendor",
        c if APPLICATION_RANGE.contains(&c) => "Application",
        _ => UNKNOWN,
    })
}

/// Classes with a name of their own.
fn named_class(mgmt_class: u8) -> Option<&'static str> {
    Some(match mgmt_class {
        CLASS_SUBN_LID_ROUTED | CLASS_SUBN_DIRECTED_ROUTE => "Subn",
        CLASS_SUBN_ADM => "SubnAdm",
        0x04 => "Perf",
        0x05 => "BM",
        0x06 => "DevMgt",
        CLASS_CM => "ComMgt",
        0x08 => "SNMP",
        0x10 => "DevAdm",
        0x11 => "BootMgt",
        0x12 => "BIS",
        0x21 => "CongestionManagment",
        _ => return None,
    })
}

/// The name of a method of a management class, as libibumad's
/// `umad_method_str()`.
///
/// Both arguments are single header bytes (class: byte 1, method: byte 3
/// with the response bit), so byte order does not matter. For class 0x03
/// (SA) the SA methods (`GetTable`, `GetTableResp`, `Delete`, `DeleteResp`,
/// `GetMulti`, `GetMultiResp`, `GetTraceTable`) are named first; every class
/// then knows the common methods (`Get`, `Set`, `GetResp`, `Send`, `Trap`,
/// `Report`, `ReportResp`, `TrapRepress`). Anything else is
/// [`UNKNOWN_METHOD`], `"<unknown"` (sic, no closing `>`).
///
/// ```
/// use ibmad::names::method_str;
/// assert_eq!(method_str(0x03, 0x92), "GetTableResp");
/// assert_eq!(method_str(0x01, 0x92), "<unknown");
/// assert_eq!(method_str(0x07, 0x03), "Send");
/// ```
#[doc(alias = "umad_method_str")]
pub fn method_str(mgmt_class: u8, method: u8) -> &'static str {
    if mgmt_class == CLASS_SUBN_ADM {
        if let Some(name) = sa_method(method) {
            return name;
        }
    }
    common_method(method)
}

/// SA-only method names (class 0x03).
fn sa_method(method: u8) -> Option<&'static str> {
    Some(match method {
        0x12 => "GetTable",
        0x92 => "GetTableResp",
        0x15 => "Delete",
        0x95 => "DeleteResp",
        0x14 => "GetMulti",
        0x94 => "GetMultiResp",
        0x13 => "GetTraceTable",
        _ => return None,
    })
}

/// Method names every class shares.
fn common_method(method: u8) -> &'static str {
    match method {
        0x01 => "Get",
        0x02 => "Set",
        0x81 => "GetResp",
        0x03 => "Send",
        0x05 => "Trap",
        0x06 => "Report",
        0x86 => "ReportResp",
        0x07 => "TrapRepress",
        _ => UNKNOWN_METHOD,
    }
}

/// The name of an attribute of a management class, as libibumad's
/// `umad_attribute_str()`.
///
/// `attr_id` is the **host-order** attribute ID (header bytes 16–17 as
/// [`Mad::attr_id`](crate::Mad::attr_id) returns it); the C function takes it
/// in network order (`__be16`).
///
/// Subnet management (0x01, 0x81), SA (0x03) and CM (0x07) have their own
/// tables; every class, those included, falls back to the common attributes
/// (`"Class Port Info"`, `"Notice"`, `"Inform Info"`) and then to
/// [`UNKNOWN`]. libibumad has no table for any other class, performance
/// management (0x04) included.
///
/// ```
/// use ibmad::names::attribute_str;
/// assert_eq!(attribute_str(0x81, 0x0015), "PortInfo");
/// assert_eq!(attribute_str(0x03, 0x0015), "LinearForwardingTableRecord");
/// assert_eq!(attribute_str(0x04, 0x0001), "Class Port Info");
/// assert_eq!(attribute_str(0x04, 0x0012), "<unknown>");
/// ```
#[doc(alias = "umad_attribute_str")]
pub fn attribute_str(mgmt_class: u8, attr_id: u16) -> &'static str {
    let specific = match mgmt_class {
        CLASS_SUBN_LID_ROUTED | CLASS_SUBN_DIRECTED_ROUTE => sm_attr(attr_id),
        CLASS_SUBN_ADM => sa_attr(attr_id),
        CLASS_CM => cm_attr(attr_id),
        _ => None,
    };
    specific.unwrap_or_else(|| common_attr(attr_id))
}

/// Attributes common to several classes.
fn common_attr(attr_id: u16) -> &'static str {
    use crate::attr::id::{CLASS_PORT_INFO, INFORM_INFO, NOTICE};
    match attr_id {
        CLASS_PORT_INFO => "Class Port Info",
        NOTICE => "Notice",
        INFORM_INFO => "Inform Info",
        _ => UNKNOWN,
    }
}

/// Subnet management attributes (classes 0x01 and 0x81), by the IDs of
/// [`crate::attr::id`].
fn sm_attr(attr_id: u16) -> Option<&'static str> {
    use crate::attr::id::*;
    Some(match attr_id {
        NODE_DESC => "NodeDescription",
        NODE_INFO => "NodeInfo",
        SWITCH_INFO => "SwitchInfo",
        GUID_INFO => "GUIDInfo",
        PORT_INFO => "PortInfo",
        PKEY_TABLE => "P_KeyTable",
        SL2VL => "SLtoVLMappingTable",
        VL_ARB => "VLArbitrationTable",
        LFT => "LinearForwardingTable",
        RFT => "RandomForwardingTable",
        MFT => "MulticastForwardingTable",
        LINK_SPEED_WIDTH_PAIRS => "LinkSpeedWidthPairsTable",
        VENDOR_MADS_TABLE => "VendorSpecificMadsTable",
        HIERARCHY_INFO => "HierarchyInfo",
        SM_INFO => "SMInfo",
        VENDOR_DIAG => "VendorDiag",
        LED_INFO => "LedInfo",
        CABLE_INFO => "CableInfo",
        PORT_INFO_EXT => "PortInfoExtended",
        _ => return None,
    })
}

/// Subnet administration attributes (class 0x03), by the IDs of
/// [`crate::sa::attr_id`].
fn sa_attr(attr_id: u16) -> Option<&'static str> {
    use crate::sa::attr_id::*;
    Some(match attr_id {
        NODE_RECORD => "NodeRecord",
        PORT_INFO_RECORD => "PortInfoRecord",
        SL2VL_RECORD => "SLtoVLMappingTableRecord",
        SWITCH_INFO_RECORD => "SwitchInfoRecord",
        LFT_RECORD => "LinearForwardingTableRecord",
        RFT_RECORD => "RandomForwardingTableRecord",
        MFT_RECORD => "MulticastForwardingTableRecord",
        SM_INFO_RECORD => "SMInfoRecord",
        LINK_SPEED_WIDTH_PAIRS_RECORD => "LinkSpeedWidthPairsTableRecord",
        LINK_RECORD => "LinkRecord",
        GUID_INFO_RECORD => "GuidInfoRecord",
        SERVICE_RECORD => "ServiceRecord",
        PKEY_TABLE_RECORD => "P_KeyTableRecord",
        PATH_RECORD => "PathRecord",
        VL_ARB_RECORD => "VLArbitrationTableRecord",
        MCMEMBER_RECORD => "MCMemberRecord",
        TRACE_RECORD => "TraceRecord",
        MULTI_PATH_RECORD => "MultiPathRecord",
        SERVICE_ASSOCIATION_RECORD => "ServiceAssociationRecord",
        HIERARCHY_INFO_RECORD => "HierarchyInfoRecord",
        CABLE_INFO_RECORD => "CableInfoRecord",
        PORT_INFO_EXT_RECORD => "PortInfoExtendedRecord",
        INFORM_INFO_RECORD => "InformInfoRecord",
        _ => return None,
    })
}

/// Communication management attributes (class 0x07).
fn cm_attr(attr_id: u16) -> Option<&'static str> {
    Some(match attr_id {
        0x0010 => "ConnectRequest",
        0x0011 => "MsgRcptAck",
        0x0012 => "ConnectReject",
        0x0013 => "ConnectReply",
        0x0014 => "ReadyToUse",
        0x0015 => "DisconnectRequest",
        0x0016 => "DisconnectReply",
        0x0017 => "ServiceIDResReq",
        0x0018 => "ServiceIDResReqResp",
        0x0019 => "LoadAlternatePath",
        0x001a => "AlternatePathResponse",
        0x001b => "SuggestAlternatePath",
        0x001c => "SuggestPathResponse",
        _ => return None,
    })
}

/// The text for the common bits of a MAD status word, as libibumad's
/// `umad_common_mad_status_str()`.
///
/// `status` is the **host-order** status word (header bytes 4–5 as
/// [`Mad::status`](crate::Mad::status) returns it); the C function takes it
/// in network order (`__be16`).
///
/// In this order: bit 0 set → `"Busy"`; else bit 1 set →
/// `"Redirection required"`; else the invalid-field code in bits 2–4
/// (`status & 0x1c`): 0x04 `"Bad Version"`, 0x08 `"Method not supported"`,
/// 0x0c `"Method/Attribute combo not supported"`, 0x1c
/// `"Invalid attribute/modifier field"`. Everything else — code 0 and the
/// reserved codes 0x10, 0x14, 0x18 — is `"Success"`, whatever bits 5–15
/// (class-specific status, the D bit of directed-route SMPs) hold.
///
/// ```
/// use ibmad::names::common_mad_status_str;
/// assert_eq!(common_mad_status_str(0x0003), "Busy");
/// assert_eq!(common_mad_status_str(0x031c), "Invalid attribute/modifier field");
/// assert_eq!(common_mad_status_str(0x0010), "Success");
/// ```
#[doc(alias = "umad_common_mad_status_str")]
pub fn common_mad_status_str(status: u16) -> &'static str {
    if status & Status::BUSY != 0 {
        return "Busy";
    }
    if status & Status::REDIRECT != 0 {
        return "Redirection required";
    }
    match status & Status::INVALID_FIELD_MASK {
        Status::BAD_VERSION => "Bad Version",
        Status::METHOD_NOT_SUPPORTED => "Method not supported",
        Status::METHOD_ATTR_NOT_SUPPORTED => "Method/Attribute combo not supported",
        Status::INVALID_ATTR_VALUE => "Invalid attribute/modifier field",
        _ => "Success",
    }
}

/// The text for the SA class-specific status, as libibumad's
/// `umad_sa_mad_status_str()`.
///
/// `status` is the **host-order** status word (header bytes 4–5 as
/// [`Mad::status`](crate::Mad::status) returns it); the C function takes it
/// in network order (`__be16`).
///
/// Only bits 8–15 (`status >> 8`) are looked at: 0 `"Success"`,
/// 1 `"No Resources"`, 2 `"Request Invalid"`, 3 `"No Records"`,
/// 4 `"Too Many Records"`, 5 `"Invalid GID"`, 6 `"Insufficient Components"`,
/// 7 `"Request Denied"`, 8 `"Priority Suggested"`, anything else
/// `"Undefined Error"`. The common bits 0–7 are ignored, so a busy status
/// (0x0001) is `"Success"` here; use [`common_mad_status_str`] for those.
///
/// ```
/// use ibmad::names::sa_mad_status_str;
/// assert_eq!(sa_mad_status_str(0x0300), "No Records");
/// assert_eq!(sa_mad_status_str(0x0001), "Success");
/// assert_eq!(sa_mad_status_str(0x0900), "Undefined Error");
/// ```
#[doc(alias = "umad_sa_mad_status_str")]
pub fn sa_mad_status_str(status: u16) -> &'static str {
    use crate::sa::status::*;
    match status & Status::CLASS_MASK {
        0 => "Success",
        NO_RESOURCES => "No Resources",
        REQ_INVALID => "Request Invalid",
        NO_RECORDS => "No Records",
        TOO_MANY_RECORDS => "Too Many Records",
        INVALID_GID => "Invalid GID",
        INSUFFICIENT_COMPONENTS => "Insufficient Components",
        REQ_DENIED => "Request Denied",
        PRIORITY_SUGGESTED => "Priority Suggested",
        _ => "Undefined Error",
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::{Method, MgmtClass, Status};

    #[test]
    fn classes() {
        assert_eq!(class_str(0x01), "Subn");
        assert_eq!(class_str(0x81), "Subn");
        assert_eq!(class_str(0x03), "SubnAdm");
        assert_eq!(class_str(0x07), "ComMgt");
        // libibumad's typo, kept.
        assert_eq!(class_str(0x21), "CongestionManagment");
        assert_eq!(class_str(0x10), "DevAdm");
        assert_eq!(class_str(0x13), "Application");
        assert_eq!(class_str(0x2f), "Application");
        assert_eq!(class_str(0x09), "Vendor");
        assert_eq!(class_str(0x4f), "Vendor");
        for c in [0x00, 0x02, 0x50, 0x80, 0x82, 0xff] {
            assert_eq!(class_str(c), UNKNOWN, "class {c:#04x}");
        }
    }

    #[test]
    fn methods() {
        assert_eq!(method_str(0x03, 0x12), "GetTable");
        assert_eq!(method_str(0x03, 0x13), "GetTraceTable");
        assert_eq!(method_str(0x03, 0x81), "GetResp");
        assert_eq!(method_str(0x04, 0x12), UNKNOWN_METHOD);
        assert_eq!(method_str(0x81, 0x86), "ReportResp");
        assert_eq!(method_str(0x07, 0x07), "TrapRepress");
        // libibumad's typo, kept: no closing '>'.
        assert_eq!(method_str(0x01, 0x00), "<unknown");
        assert_eq!(method_str(0x03, 0xff), "<unknown");
    }

    #[test]
    fn attributes() {
        assert_eq!(attribute_str(0x01, 0x0015), "PortInfo");
        assert_eq!(attribute_str(0x81, 0x0011), "NodeInfo");
        assert_eq!(attribute_str(0x81, 0x0001), "Class Port Info");
        assert_eq!(attribute_str(0x81, 0xff90), UNKNOWN);
        assert_eq!(attribute_str(0x03, 0x0015), "LinearForwardingTableRecord");
        assert_eq!(attribute_str(0x03, 0x00f3), "InformInfoRecord");
        assert_eq!(attribute_str(0x03, 0x0003), "Inform Info");
        assert_eq!(attribute_str(0x03, 0x0010), UNKNOWN);
        assert_eq!(attribute_str(0x07, 0x001c), "SuggestPathResponse");
        assert_eq!(attribute_str(0x07, 0x0002), "Notice");
        assert_eq!(attribute_str(0x04, 0x0001), "Class Port Info");
        assert_eq!(attribute_str(0x04, 0x0011), UNKNOWN);
        assert_eq!(attribute_str(0x04, 0x0012), UNKNOWN);
        assert_eq!(attribute_str(0x30, 0x0015), UNKNOWN);
    }

    #[test]
    fn statuses() {
        assert_eq!(common_mad_status_str(0x0000), "Success");
        assert_eq!(common_mad_status_str(0x0003), "Busy");
        assert_eq!(common_mad_status_str(0x001e), "Redirection required");
        assert_eq!(common_mad_status_str(0x0004), "Bad Version");
        assert_eq!(common_mad_status_str(0x0008), "Method not supported");
        assert_eq!(
            common_mad_status_str(0x800c),
            "Method/Attribute combo not supported"
        );
        assert_eq!(
            common_mad_status_str(0x031c),
            "Invalid attribute/modifier field"
        );
        for reserved in [0x0010, 0x0014, 0x0018, 0x0020, 0xff00] {
            assert_eq!(common_mad_status_str(reserved), "Success");
        }
        assert_eq!(sa_mad_status_str(0x0000), "Success");
        assert_eq!(sa_mad_status_str(0x00ff), "Success");
        assert_eq!(sa_mad_status_str(0x0100), "No Resources");
        assert_eq!(sa_mad_status_str(0x061c), "Insufficient Components");
        assert_eq!(sa_mad_status_str(0x0800), "Priority Suggested");
        assert_eq!(sa_mad_status_str(0x0900), "Undefined Error");
        assert_eq!(sa_mad_status_str(0xff00), "Undefined Error");
    }

    /// The enums in `header.rs` name exactly the codes libibumad names, so
    /// their `Display` can defer to this module without losing a name.
    #[test]
    fn enums_agree_with_tables() {
        for c in 0..=u8::MAX {
            let named = !matches!(class_str(c), UNKNOWN | "Vendor" | "Application");
            let known = !matches!(MgmtClass::from(c), MgmtClass::Unknown(_));
            assert_eq!(named, known, "class {c:#04x}");
            if known {
                assert_eq!(MgmtClass::from(c).to_string(), class_str(c));
            }

            let named = method_str(CLASS_SUBN_ADM, c) != UNKNOWN_METHOD;
            let known = !matches!(Method::from(c), Method::Unknown(_));
            assert_eq!(named, known, "method {c:#04x}");
            if known {
                assert_eq!(Method::from(c).to_string(), method_str(CLASS_SUBN_ADM, c));
            }
        }
        assert_eq!(MgmtClass::CongMgmt.to_string(), "CongestionManagment");
        assert_eq!(MgmtClass::Unknown(0x0a).to_string(), "Vendor(0x0a)");
        assert_eq!(MgmtClass::Unknown(0x2a).to_string(), "Application(0x2a)");
        assert_eq!(MgmtClass::Unknown(0x55).to_string(), "Unknown(0x55)");
        assert_eq!(Method::Unknown(0x42).to_string(), "Unknown(0x42)");
        for s in 0..=u16::MAX {
            let text = Status(s).to_string();
            assert!(
                text.starts_with(common_mad_status_str(s)),
                "{s:#06x}: {text}"
            );
        }
    }
}
