//! The `umad_str.h` functions: names of management classes, methods, attributes and status
//! words, from the one name table of [`ibmad::names`].
//!
//! The C functions return pointers to static strings. The Rust table holds `&'static str`
//! (not NUL-terminated), so each distinct text is turned into a NUL-terminated copy once, on
//! first use, and that copy lives for the rest of the process (a bounded set: the table has
//! about 150 texts). Returned pointers stay valid forever, as in C.

use core::ffi::{c_char, CStr};
use std::collections::BTreeMap;
use std::ffi::CString;
use std::sync::{Mutex, PoisonError};

/// The NUL-terminated copy of a table text, made once per distinct text.
fn c_text(text: &'static str) -> *const c_char {
    static TEXTS: Mutex<BTreeMap<&'static str, &'static CStr>> = Mutex::new(BTreeMap::new());
    let mut texts = TEXTS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(c) = texts.get(text) {
        return c.as_ptr();
    }
    let Ok(owned) = CString::new(text) else {
        // The table holds no NUL bytes; never reached.
        return c"<unknown>".as_ptr();
    };
    let leaked: &'static CStr = Box::leak(owned.into_boxed_c_str());
    texts.insert(text, leaked);
    leaked.as_ptr()
}

/// The name of a management class: `"Subn"`, `"SubnAdm"`, `"Perf"`, … (0x21 is
/// `"CongestionManagment"`, sic), `"Vendor"`/`"Application"` for unnamed classes of those
/// ranges, else `"<unknown>"`. The string is static.
///
/// # Safety
/// No preconditions (unsafe only as part of the C ABI).
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_class_str(mgmt_class: u8) -> *const c_char {
    c_text(ibmad::names::class_str(mgmt_class))
}

/// The name of a method: the SA methods for class 0x03, the common ones (`"Get"`, `"Set"`,
/// `"GetResp"`, …) for every class, else `"<unknown"` (sic, no `>`). The string is static.
///
/// # Safety
/// No preconditions (unsafe only as part of the C ABI).
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_method_str(mgmt_class: u8, method: u8) -> *const c_char {
    c_text(ibmad::names::method_str(mgmt_class, method))
}

/// The name of an attribute of a class; `attr_id` is in **network** byte order. SM, SA and CM
/// classes have their own tables; every class knows the common attributes; else
/// `"<unknown>"`. The string is static.
///
/// # Safety
/// No preconditions (unsafe only as part of the C ABI).
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_attribute_str(mgmt_class: u8, attr_id: u16) -> *const c_char {
    c_text(ibmad::names::attribute_str(
        mgmt_class,
        u16::from_be(attr_id),
    ))
}

/// The text of the common status bits of a MAD status (network byte order): `"Busy"`,
/// `"Redirection required"`, `"Bad Version"`, …, `"Success"`. The string is static.
///
/// # Safety
/// No preconditions (unsafe only as part of the C ABI).
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_common_mad_status_str(status: u16) -> *const c_char {
    c_text(ibmad::names::common_mad_status_str(u16::from_be(status)))
}

/// The text of the SA-specific status bits (8–15) of a MAD status (network byte order):
/// `"Success"`, `"No Resources"`, …, `"Undefined Error"`. The string is static.
///
/// # Safety
/// No preconditions (unsafe only as part of the C ABI).
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_sa_mad_status_str(status: u16) -> *const c_char {
    c_text(ibmad::names::sa_mad_status_str(u16::from_be(status)))
}

#[cfg(test)]
#[allow(unsafe_code)] // the tests call the C ABI as C does
mod tests {
    use super::*;

    fn text(p: *const c_char) -> &'static str {
        // SAFETY: the functions return pointers to NUL-terminated strings that live forever.
        unsafe { CStr::from_ptr(p) }.to_str().unwrap()
    }

    #[test]
    fn samples_from_the_system_library() {
        // SAFETY: no preconditions.
        unsafe {
            assert_eq!(text(umad_class_str(0x81)), "Subn");
            assert_eq!(text(umad_class_str(0x21)), "CongestionManagment");
            assert_eq!(text(umad_class_str(0x13)), "Application");
            assert_eq!(text(umad_class_str(0x50)), "<unknown>");
            assert_eq!(text(umad_method_str(0x03, 0x92)), "GetTableResp");
            assert_eq!(text(umad_method_str(0x01, 0x92)), "<unknown");
            assert_eq!(
                text(umad_attribute_str(0x01, 0x0015u16.to_be())),
                "PortInfo"
            );
            assert_eq!(
                text(umad_attribute_str(0x03, 0x0015u16.to_be())),
                "LinearForwardingTableRecord"
            );
            assert_eq!(
                text(umad_attribute_str(0x07, 0x001cu16.to_be())),
                "SuggestPathResponse"
            );
            assert_eq!(
                text(umad_attribute_str(0x04, 0x0001u16.to_be())),
                "Class Port Info"
            );
            assert_eq!(text(umad_common_mad_status_str(0x0003u16.to_be())), "Busy");
            assert_eq!(
                text(umad_common_mad_status_str(0x031cu16.to_be())),
                "Invalid attribute/modifier field"
            );
            assert_eq!(
                text(umad_sa_mad_status_str(0x0300u16.to_be())),
                "No Records"
            );
            assert_eq!(text(umad_sa_mad_status_str(0x0001u16.to_be())), "Success");
        }
    }

    #[test]
    fn pointers_are_stable() {
        // SAFETY: no preconditions.
        unsafe {
            assert_eq!(umad_class_str(0x04), umad_class_str(0x04));
            // Equal texts share one copy, whichever function returns them.
            assert_eq!(umad_class_str(0x50), umad_attribute_str(0x04, 0x1234));
        }
    }
}
