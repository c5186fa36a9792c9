//! Process-wide state and debug output: the debug level (`umad_debug`), the header-layout flag
//! (`new_user_mad_api`), the permanent ABI-version cache, and the `ibwarn:` lines on stderr
//! (`umad_addr_dump`, `umad_dump` and every trace).
//!
//! Like libibumad the state is process-global; unlike it, it is kept in atomics, so concurrent
//! callers see a consistent value (the answers still change for every thread when any thread
//! opens a port, as in C).

use core::ffi::{c_int, c_void};
use core::fmt;
use std::ffi::CString;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};

use umad::abi::{field, HeaderLayout, MadAddrView, UserMadHeader, HDR_LEN};

use crate::ffi::{self, opt_bytes, set_errno, strerror};
use crate::types::ib_mad_addr_t;

/// `umaddebug`: 0 = only the three unconditional warnings, ≥ 1 traces, ≥ 2 also dumps every
/// sent header.
static DEBUG_LEVEL: AtomicI32 = AtomicI32::new(0);

/// `new_user_mad_api`: the 64-byte header (with `pkey_index`) is in use. Starts false (56 bytes)
/// and is set by every successful `umad_open_port` / `umad_open_smi_port`.
static NEW_USER_MAD_API: AtomicBool = AtomicBool::new(false);

/// The cached kernel ABI version: 0 = not read yet; [`ABI_FAILED`] = reading failed (cached
/// forever, like a success).
static ABI_VERSION: AtomicU32 = AtomicU32::new(0);
const ABI_FAILED: u32 = 1 << 31;

/// The current debug level.
pub(crate) fn debug_level() -> i32 {
    DEBUG_LEVEL.load(Ordering::Relaxed)
}

/// Whether the 64-byte header layout is in use.
pub(crate) fn new_user_mad_api() -> bool {
    NEW_USER_MAD_API.load(Ordering::Relaxed)
}

/// Records the header layout chosen by an open (libibumad's global assignment).
pub(crate) fn set_new_user_mad_api(on: bool) {
    NEW_USER_MAD_API.store(on, Ordering::Relaxed);
}

/// The header layout in use: 64 bytes once a port was opened with P_Key support, else 56.
pub(crate) fn header_layout() -> HeaderLayout {
    if new_user_mad_api() {
        HeaderLayout::WithPkey
    } else {
        HeaderLayout::Old
    }
}

/// `umad_size()`: the header length in use, 64 or 56.
pub(crate) fn header_size() -> usize {
    header_layout().header_len()
}

/// libibumad's `get_abi_version()`: the kernel's user-MAD ABI version, read once per process;
/// 0 if it cannot be read or is below 5 — and that failure is cached too. The first failure to
/// read the file prints the unconditional `can't read ABI version …` warning.
pub(crate) fn abi_version() -> u32 {
    let cached = ABI_VERSION.load(Ordering::Relaxed);
    if cached != 0 {
        return cached & !ABI_FAILED;
    }
    let (value, warn) = match crate::devices::source().abi_version() {
        Ok(v) => (v & !ABI_FAILED, None),
        Err(umad::Error::AbiUnavailable { source, .. }) => {
            (ABI_FAILED, Some(source.raw_os_error().unwrap_or(libc::EIO)))
        }
        Err(_) => (ABI_FAILED, None),
    };
    let value = if value == 0 { ABI_FAILED } else { value };
    if ABI_VERSION
        .compare_exchange(0, value, Ordering::Relaxed, Ordering::Relaxed)
        .is_ok()
    {
        if let Some(code) = warn {
            ibwarn(
                "get_abi_version",
                format_args!(
                    "can't read ABI version from /sys/class/infiniband_mad/abi_version ({}): is ib_umad module loaded?",
                    strerror(code)
                ),
            );
            set_errno(code);
        }
    }
    ABI_VERSION.load(Ordering::Relaxed) & !ABI_FAILED
}

/// Prints one libibumad debug line: `ibwarn: [<pid>] <func>: <message>` and a newline, on the
/// C `stderr` stream, in one call. `func` is the name of the C function that prints the line.
pub(crate) fn ibwarn(func: &str, msg: fmt::Arguments<'_>) {
    let pid = ffi::getpid();
    let line = format!("ibwarn: [{pid}] {func}: {msg}\n");
    let line = CString::new(line.replace('\0', "")).unwrap_or_default();
    ffi::fputs_stderr(&line);
}

/// libibumad's `TRACE`/`DEBUG`: an [`ibwarn`] line only when the debug level is not 0.
macro_rules! trace {
    ($func:expr, $($arg:tt)*) => {
        if $crate::global::debug_level() != 0 {
            $crate::global::ibwarn($func, format_args!($($arg)*));
        }
    };
}
pub(crate) use trace;

/// Sets the debug level if `level` ≥ 0 and returns the level now in force.
///
/// Level 0 prints only the three unconditional warnings; level ≥ 1 traces the calls; level ≥ 2
/// also dumps every header `umad_send` writes.
///
/// # Safety
/// No preconditions (unsafe only as part of the C ABI).
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_debug(level: c_int) -> c_int {
    if level >= 0 {
        DEBUG_LEVEL.store(level, Ordering::Relaxed);
    }
    debug_level()
}

/// Prints an address on stderr: `qpn`, `qkey`, `lid`, `sl`, then the GRH fields, the P_Key
/// index and the GID in hex (one `ibwarn:` message over three lines). The flow label is printed
/// as stored (not byte-swapped), as libibumad does.
///
/// # Safety
/// `addr` is `NULL` (nothing is printed) or points to a readable `ib_mad_addr_t` (44 bytes).
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_addr_dump(addr: *mut ib_mad_addr_t) {
    // SAFETY: the caller guarantees `addr` is NULL or readable for 44 bytes.
    let Some(bytes) = (unsafe { opt_bytes(addr.cast::<c_void>(), field::addr::LEN) }) else {
        return;
    };
    if let Ok(a) = MadAddrView::new_checked(bytes) {
        addr_dump(&a);
    }
}

/// Prints the agent id, status and timeout of a user-MAD header, then its address as
/// [`umad_addr_dump`] does.
///
/// # Safety
/// `umad` is `NULL` (nothing is printed) or points to at least 64 readable bytes (a full
/// `ib_user_mad_t` header).
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_dump(umad: *mut c_void) {
    // SAFETY: the caller guarantees `umad` is NULL or readable for 64 bytes.
    let Some(bytes) = (unsafe { opt_bytes(umad, HDR_LEN) }) else {
        return;
    };
    dump_header(bytes);
}

/// `umad_dump` on the bytes of a header already in hand (`h` may be shorter than 64 bytes:
/// missing bytes read as 0). Like C it shows the whole `ib_user_mad_t`, P_Key index included,
/// whatever the layout in use.
pub(crate) fn dump_header(h: &[u8]) {
    let v = UserMadHeader::from_prefix(h, HeaderLayout::WithPkey);
    ibwarn(
        "umad_dump",
        format_args!(
            "agent id {} status {:x} timeout {}",
            v.agent_id() as i32,
            v.status(),
            v.timeout_ms() as i32
        ),
    );
    addr_dump(&v.addr());
}

fn addr_dump<T: AsRef<[u8]>>(a: &MadAddrView<T>) {
    let gid: String = a.gid().iter().map(|b| format!("{b:02x}")).collect();
    ibwarn(
        "umad_addr_dump",
        format_args!(
            "qpn {} qkey 0x{:x} lid {} sl {}\n\
             grh_present {} gid_index {} hop_limit {} traffic_class {} flow_label 0x{:x} pkey_index 0x{:x}\n\
             Gid 0x{}",
            a.qpn() as i32,
            a.qkey(),
            a.lid(),
            a.sl(),
            a.grh_present(),
            a.gid_index(),
            a.hop_limit(),
            a.traffic_class(),
            // C prints the network-order field as stored (not swapped).
            a.flow_label().to_be(),
            a.pkey_index(),
            gid
        ),
    );
}

#[cfg(test)]
#[allow(unsafe_code)] // the tests call the C ABI as C does
pub(crate) mod tests {
    use super::*;
    use std::sync::{Mutex, MutexGuard, PoisonError};

    /// Serialises the tests that change or depend on the process-global state.
    pub(crate) fn global_lock() -> MutexGuard<'static, ()> {
        static LOCK: Mutex<()> = Mutex::new(());
        LOCK.lock().unwrap_or_else(PoisonError::into_inner)
    }

    #[test]
    fn debug_level_set_and_query() {
        let _g = global_lock();
        // SAFETY: umad_debug has no preconditions.
        unsafe {
            let before = umad_debug(-1);
            assert_eq!(umad_debug(3), 3);
            assert_eq!(umad_debug(-5), 3);
            assert_eq!(umad_debug(before), before);
        }
    }

    #[test]
    fn header_size_follows_the_global_flag() {
        let _g = global_lock();
        let before = new_user_mad_api();
        set_new_user_mad_api(false);
        assert_eq!(header_size(), 56);
        set_new_user_mad_api(true);
        assert_eq!(header_size(), 64);
        set_new_user_mad_api(before);
    }

    #[test]
    fn dumps_accept_null() {
        // SAFETY: NULL is accepted and prints nothing.
        unsafe {
            umad_addr_dump(core::ptr::null_mut());
            umad_dump(core::ptr::null_mut());
        }
    }
}
