//! Agent registration: `umad_register`, `umad_register_oui`, `umad_register2`,
//! `umad_unregister` — each with libibumad's own return convention.

use core::ffi::{c_int, c_long, c_void};

use umad::abi::{AgentRegistration, Fallback, RegisterIoctl};
use umad::agent::OPENIB_OUI;

use crate::dev;
use crate::ffi::{errno, opt_bytes, opt_mut, strerror, Ptr};
use crate::global::trace;
use crate::types::umad_reg_attr;

/// The QP a class is registered on: 0 (SMI) for the subnet-management classes 0x01 and 0x81,
/// else 1 (GSI).
fn qpn_for(mgmt_class: c_int) -> u8 {
    u8::from(!(mgmt_class == 0x01 || mgmt_class == 0x81))
}

/// The 128-bit method mask from the 16 bytes of a C `long[2]` (zero for `NULL`: pass
/// `opt_bytes(mask, 16)`), as its two 64-bit words.
fn method_mask_words(mask: Option<&[u8]>) -> [u64; 2] {
    let mut words = [0u64; 2];
    if let Some(bytes) = mask {
        for (w, b) in words.iter_mut().zip(bytes.chunks_exact(8)) {
            let mut x = [0u8; 8];
            x.copy_from_slice(b);
            *w = u64::from_ne_bytes(x);
        }
    }
    words
}

/// Registers an agent for a management class on a port and returns its id (0–31); with a
/// `NULL` `method_mask` the agent only receives responses to its own requests. Classes 0x01
/// and 0x81 go to QP0, others to QP1; the OUI is the OpenIB one.
///
/// Returns `-EPERM` (which is -1) on failure, with `errno` from the kernel.
///
/// # Safety
/// `method_mask` is `NULL` or readable for 16 bytes (`long[2]`).
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_register(
    portid: c_int,
    mgmt_class: c_int,
    mgmt_version: c_int,
    rmpp_version: u8,
    method_mask: *mut c_long,
) -> c_int {
    trace!(
        "umad_register",
        "fd {} mgmt_class {} mgmt_version {} rmpp_version {} method_mask {}",
        portid,
        mgmt_class as u32,
        mgmt_version as u32,
        rmpp_version,
        Ptr(method_mask.cast())
    );
    let qp = qpn_for(mgmt_class);
    let reg = AgentRegistration {
        qpn: u32::from(qp),
        class: mgmt_class as u8,
        class_version: mgmt_version as u8,
        flags: 0,
        // SAFETY: the caller guarantees `method_mask` is NULL or readable for 16 bytes.
        method_mask: method_mask_words(unsafe { opt_bytes(method_mask.cast::<c_void>(), 16) }),
        oui: OPENIB_OUI,
        rmpp_version,
    };
    match dev::register_agent(portid, &reg) {
        Ok(id) => {
            trace!(
                "umad_register",
                "fd {} registered to use agent {} qp {}",
                portid,
                id,
                qp
            );
            id as c_int
        }
        Err(_) => {
            trace!(
                "umad_register",
                "fd {} registering qp {} class 0x{:x} version {} failed: {}",
                portid,
                qp,
                mgmt_class,
                mgmt_version,
                strerror(errno())
            );
            -libc::EPERM
        }
    }
}

/// Registers an agent for a vendor class of range 2 (0x30–0x4f) with the given OUI (3 bytes,
/// network order) on QP1; the class version is always 1. Returns the agent id, `-EINVAL` for a
/// class outside 0x30–0x4f (or a `NULL` `oui`), `-EPERM` (-1) if the kernel refuses.
///
/// # Safety
/// `oui` is `NULL` or readable for 3 bytes; `method_mask` is `NULL` or readable for 16 bytes.
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_register_oui(
    portid: c_int,
    mgmt_class: c_int,
    rmpp_version: u8,
    oui: *mut u8,
    method_mask: *mut c_long,
) -> c_int {
    // SAFETY: the caller guarantees `oui` is NULL or readable for 3 bytes.
    let oui_bytes: Option<[u8; 3]> =
        unsafe { opt_bytes(oui.cast::<c_void>(), 3) }.map(|b| [b[0], b[1], b[2]]);
    if let Some(o) = oui_bytes {
        trace!(
            "umad_register_oui",
            "fd {} mgmt_class {} rmpp_version {} oui 0x{:x}{:x}{:x} method_mask {}",
            portid,
            mgmt_class as u32,
            rmpp_version,
            o[0],
            o[1],
            o[2],
            Ptr(method_mask.cast())
        );
    }
    if !(0x30..=0x4f).contains(&mgmt_class) {
        trace!(
            "umad_register_oui",
            "mgmt class {} not in vendor range 2",
            mgmt_class
        );
        return -libc::EINVAL;
    }
    let Some(oui_bytes) = oui_bytes else {
        return -libc::EINVAL;
    };
    let [o0, o1, o2] = oui_bytes;
    let reg = AgentRegistration {
        qpn: 1,
        class: mgmt_class as u8,
        class_version: 1,
        flags: 0,
        // SAFETY: the caller guarantees `method_mask` is NULL or readable for 16 bytes.
        method_mask: method_mask_words(unsafe { opt_bytes(method_mask.cast::<c_void>(), 16) }),
        oui: u32::from_be_bytes([0, o0, o1, o2]),
        rmpp_version,
    };
    match dev::register_agent(portid, &reg) {
        Ok(id) => {
            trace!(
                "umad_register_oui",
                "fd {} registered to use agent {} qp {} class 0x{:x} oui {}",
                portid,
                id,
                reg.qpn,
                reg.class,
                Ptr(oui.cast())
            );
            id as c_int
        }
        Err(_) => {
            trace!(
                "umad_register_oui",
                "fd {} registering qp {} class 0x{:x} version {} oui {} failed: {}",
                portid,
                reg.qpn,
                reg.class,
                reg.class_version,
                Ptr(oui.cast()),
                strerror(errno())
            );
            -libc::EPERM
        }
    }
}

/// Registers an agent described by `attr` (class, version, flags such as `UMAD_USER_RMPP`,
/// method mask, OUI for vendor classes, RMPP version) and stores its id in `*agent_id`.
///
/// Returns 0 or a **positive** errno: `EINVAL` for `NULL` arguments or a vendor class 0x30–0x4f
/// with an OUI of 0 or wider than 24 bits, else the kernel's error. On kernels without
/// `REGISTER_AGENT2` (or under ibsim), a registration without flags falls back to the classic
/// ioctl. On failure `attr->flags` is overwritten with the flags left in the request — 0 after
/// a rejected-flags `EINVAL` (libibumad behaviour, contrary to its man page).
///
/// # Safety
/// `attr` is `NULL` or points to a writable, aligned `struct umad_reg_attr`; `agent_id` is
/// `NULL` or points to a writable `uint32_t`.
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_register2(
    port_fd: c_int,
    attr: *mut umad_reg_attr,
    agent_id: *mut u32,
) -> c_int {
    const FUNC: &str = "umad_register2";
    // SAFETY: the caller guarantees both are NULL or valid, distinct objects.
    let (Some(attr), Some(agent_id)) = (unsafe { opt_mut(attr) }, unsafe { opt_mut(agent_id) })
    else {
        return libc::EINVAL;
    };
    trace!(
        FUNC,
        "fd {} mgmt_class {} mgmt_class_version {} flags 0x{:08x} method_mask 0x{:016x} {:016x}oui 0x{:06x} rmpp_version {} ",
        port_fd,
        attr.mgmt_class,
        attr.mgmt_class_version,
        attr.flags,
        attr.method_mask[0],
        attr.method_mask[1],
        attr.oui,
        attr.rmpp_version
    );
    if (0x30..=0x4f).contains(&attr.mgmt_class)
        && (attr.oui & 0x00ff_ffff == 0 || attr.oui & 0xff00_0000 != 0)
    {
        trace!(
            FUNC,
            "mgmt class {} is in vendor range 2 but oui (0x{:08x}) is invalid",
            attr.mgmt_class,
            attr.oui
        );
        return libc::EINVAL;
    }
    let reg = AgentRegistration {
        qpn: u32::from(qpn_for(c_int::from(attr.mgmt_class))),
        class: attr.mgmt_class,
        class_version: attr.mgmt_class_version,
        flags: attr.flags,
        method_mask: attr.method_mask,
        oui: attr.oui,
        rmpp_version: attr.rmpp_version,
    };
    let outcome = dev::register_agent2(port_fd, &reg);
    let fallback = match &outcome {
        Ok((_, RegisterIoctl::Agent)) => Fallback::Agent,
        Ok((_, RegisterIoctl::Agent2)) => Fallback::None,
        Err(f) => f.fallback,
    };
    if fallback != Fallback::None {
        trace!(FUNC, "no kernel support for registration flags");
    }
    if fallback == Fallback::Agent {
        trace!(FUNC, "attempting original register ioctl");
    }
    let failure = match outcome {
        Ok((id, _)) => {
            trace!(
                FUNC,
                "fd {} registered to use agent {} qp {} class 0x{:x} oui 0x{:06x}",
                port_fd,
                id,
                reg.qpn,
                reg.class,
                attr.oui
            );
            *agent_id = id;
            return 0;
        }
        Err(f) => f,
    };
    let rc = failure.error.raw_os_error().unwrap_or(libc::EIO);
    attr.flags = failure.flags;
    trace!(
        FUNC,
        "fd {} registering qp {} class 0x{:x} version {} oui 0x{:06x} failed flags returned 0x{:x} : {}",
        port_fd,
        reg.qpn,
        reg.class,
        reg.class_version,
        attr.oui,
        failure.flags,
        strerror(rc)
    );
    rc
}

/// Unregisters an agent. Returns the raw `ioctl` result: 0, or -1 with `errno` (`EINVAL` for
/// an unknown agent id).
///
/// # Safety
/// No preconditions (unsafe only as part of the C ABI).
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_unregister(portid: c_int, agentid: c_int) -> c_int {
    trace!(
        "umad_unregister",
        "fd {} unregistering agent {}",
        portid,
        agentid
    );
    match dev::unregister_agent(portid, agentid as u32) {
        Ok(()) => 0,
        Err(_) => -1,
    }
}

#[cfg(test)]
#[allow(unsafe_code)] // the tests call the C ABI as C does
mod tests {
    use super::*;

    #[test]
    fn qp_choice() {
        assert_eq!(qpn_for(0x01), 0);
        assert_eq!(qpn_for(0x81), 0);
        assert_eq!(qpn_for(0x04), 1);
        // The int is compared before any truncation, as in C.
        assert_eq!(qpn_for(0x181), 1);
    }

    #[test]
    fn method_mask_bytes() {
        let mask: [c_long; 2] = [0x8000_0000_0000_0002u64 as c_long, 1];
        // SAFETY: `mask` is readable for 16 bytes.
        let w = method_mask_words(unsafe { opt_bytes(mask.as_ptr().cast(), 16) });
        assert_eq!(w, [0x8000_0000_0000_0002, 1]);
        assert_eq!(method_mask_words(None), [0; 2]);
    }

    #[test]
    fn bad_descriptor_conventions() {
        // SAFETY: -1 is not a descriptor; NULL masks are allowed.
        unsafe {
            assert_eq!(umad_register(-1, 0x04, 1, 0, core::ptr::null_mut()), -1);
            assert_eq!(crate::ffi::errno(), libc::EBADF);
            assert_eq!(
                umad_register_oui(
                    -1,
                    0x09,
                    0,
                    [0u8, 0x14, 5].as_mut_ptr(),
                    core::ptr::null_mut()
                ),
                -libc::EINVAL
            );
            assert_eq!(
                umad_register_oui(
                    -1,
                    0x30,
                    0,
                    [0u8, 0x14, 5].as_mut_ptr(),
                    core::ptr::null_mut()
                ),
                -libc::EPERM
            );
            assert_eq!(umad_unregister(-1, 0), -1);
            assert_eq!(crate::ffi::errno(), libc::EBADF);
        }
    }

    #[test]
    fn register2_conventions() {
        let mut attr = umad_reg_attr {
            mgmt_class: 0x30,
            mgmt_class_version: 1,
            ..Default::default()
        };
        let mut id = 0u32;
        // SAFETY: `attr` and `id` are valid; NULLs are refused.
        unsafe {
            assert_eq!(umad_register2(-1, &mut attr, &mut id), libc::EINVAL);
            assert_eq!(
                umad_register2(-1, core::ptr::null_mut(), &mut id),
                libc::EINVAL
            );
            assert_eq!(
                umad_register2(-1, &mut attr, core::ptr::null_mut()),
                libc::EINVAL
            );
            attr.oui = 0x0100_0000;
            assert_eq!(umad_register2(-1, &mut attr, &mut id), libc::EINVAL);
            attr.mgmt_class = 0x04;
            attr.flags = 1;
            assert_eq!(umad_register2(-1, &mut attr, &mut id), libc::EBADF);
            // The flags are written back from the request (unchanged for EBADF).
            assert_eq!(attr.flags, 1);
        }
    }
}
