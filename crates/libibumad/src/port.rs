//! Port I/O: `umad_open_port`, `umad_open_smi_port`, `umad_close_port`, `umad_send`,
//! `umad_recv`, `umad_poll`, `umad_get_fd`.
//!
//! The port id is the file descriptor itself. All device access goes through [`umad::raw`]
//! (the libc `open`/`read`/`write`/`poll`/`ioctl`/`close` symbols, which ibsim's umad2sim
//! interposes).

use core::ffi::{c_char, c_int, c_void, CStr};

use umad::abi::{field, UserMadHeader, HDR_LEN};
use umad::device::DevFile;

use crate::dev;
use crate::devices::{dev_file, dev_to_umad_id, resolve_ca_name};
use crate::ffi::{errno, opt_bytes_mut, opt_cstr, opt_mut, set_errno, strerror, Ptr, Str};
use crate::global::{
    abi_version, debug_level, dump_header, header_layout, header_size, set_new_user_mad_api, trace,
};

/// libibumad's `do_umad_open_port` (HEAD), shared by both open functions. Its trace lines carry
/// the name `umad_open_port`, as Debian's libibumad 44 (the library this one replaces there)
/// prints them; HEAD renamed the function and so its traces.
fn do_open(name_in: Option<&CStr>, portnum: c_int, enforce_smi: bool) -> c_int {
    const FUNC: &str = "umad_open_port";
    let abi = abi_version();
    trace!(FUNC, "ca {} port {}", Str::c(name_in), portnum);
    if abi == 0 {
        return -libc::EOPNOTSUPP;
    }
    let Some((found, portnum)) = resolve_ca_name(name_in, Some(portnum), enforce_smi) else {
        return -libc::ENODEV;
    };
    trace!(FUNC, "opening {} port {}", Str(Some(&found)), portnum);
    let Some(id) = dev_to_umad_id(&found, portnum) else {
        return -libc::EINVAL;
    };
    let path = dev_file(DevFile::Umad, id);
    let fd = match dev::open(&path) {
        Ok(fd) => fd,
        Err(e) => {
            let code = e.raw_os_error().unwrap_or(libc::EIO);
            trace!(FUNC, "open {} failed: {}", path.display(), strerror(code));
            set_errno(code);
            return -libc::EIO;
        }
    };
    set_new_user_mad_api(abi > 5 || dev::enable_pkey(fd).is_ok());
    trace!(FUNC, "opened {} fd {} portid {}", path.display(), fd, id);
    fd
}

/// Opens the umad device of a CA port for MAD I/O and returns its file descriptor (the "port
/// id"), opened `O_RDWR | O_NONBLOCK`.
///
/// `ca_name` `NULL` and/or `portnum` 0 pick the default: the first CA (directory order) with an
/// ACTIVE InfiniBand port, else one whose port is at least not disabled; a named CA with port 0
/// gets its best port; a switch always gets port 0. A given name and port are used unchecked.
/// Also switches the process to the 64-byte header when the kernel accepts P_Key indexes (see
/// [`umad_size`](crate::umad_size)).
///
/// Returns the fd, `-EOPNOTSUPP` if the kernel's `ib_umad` ABI cannot be read (a warning is
/// printed once), `-ENODEV` if no CA qualifies, `-EINVAL` if the port has no umad device,
/// `-EIO` if the device cannot be opened (`errno` tells why).
///
/// # Safety
/// `ca_name` is `NULL` or a C string.
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_open_port(ca_name: *const c_char, portnum: c_int) -> c_int {
    // SAFETY: the caller guarantees `ca_name` is NULL or a C string.
    do_open(unsafe { opt_cstr(ca_name) }, portnum, false)
}

/// [`umad_open_port`], but the default selection skips ports without an SMI (the
/// IsSMDisabled capability bit); for SMP (QP0) traffic on planarized HCAs. A given name and
/// port are still used unchecked.
///
/// # Safety
/// `ca_name` is `NULL` or a C string.
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_open_smi_port(ca_name: *const c_char, portnum: c_int) -> c_int {
    // SAFETY: the caller guarantees `ca_name` is NULL or a C string.
    do_open(unsafe { opt_cstr(ca_name) }, portnum, true)
}

/// Closes a port (its agents are unregistered by the kernel). Always returns 0; `errno` says
/// whether `close` failed.
///
/// # Safety
/// `portid` is a descriptor from [`umad_open_port`] that is not used afterwards (as with
/// `close`).
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_close_port(portid: c_int) -> c_int {
    if !dev::close_sim(portid) {
        // SAFETY: the caller hands over `portid`, as with close(2); the result is ignored as
        // in C (errno keeps the reason).
        let _ = unsafe { umad::raw::close(portid) };
    }
    trace!("umad_close_port", "closed fd {}", portid);
    0
}

/// Sends the MAD in `umad` (header + `length` MAD bytes) with `agentid`. `timeout_ms` 0 means
/// no response is expected; otherwise, if no response arrives within it after `retries`
/// retries, a copy comes back on receive with status `ETIMEDOUT`.
///
/// Sets `errno` to 0 first. Returns 0, or `-EIO` with `errno` set (`EIO` for a short write).
///
/// # Safety
/// `umad` is `NULL` (then `-EINVAL`) or a writable buffer of `umad_size() + length` bytes
/// (its header's `agent_id`, `timeout_ms` and `retries` are written).
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_send(
    portid: c_int,
    agentid: c_int,
    umad: *mut c_void,
    length: c_int,
    timeout_ms: c_int,
    retries: c_int,
) -> c_int {
    trace!(
        "umad_send",
        "fd {} agentid {} umad {} timeout {}",
        portid,
        agentid,
        Ptr(umad),
        timeout_ms as u32
    );
    set_errno(0);
    let size = header_size();
    let Ok(total) = usize::try_from(size as i64 + i64::from(length)) else {
        // C hands write() a wrapped, huge count; refuse instead.
        set_errno(libc::EINVAL);
        return -libc::EIO;
    };
    // SAFETY: the caller guarantees `umad` is NULL or writable for umad_size() + length bytes.
    let Some(buf) = (unsafe { opt_bytes_mut(umad, total) }) else {
        set_errno(libc::EINVAL);
        return -libc::EINVAL;
    };
    // Only within the bytes the call names (C writes them even past a short buffer).
    let mut h = UserMadHeader::from_prefix(buf, header_layout());
    h.set_timeout_ms(timeout_ms as u32);
    h.set_retries(retries as u32);
    h.set_agent_id(agentid as u32);
    h.write_prefix(buf);
    if debug_level() > 1 {
        dump_header(&buf[..buf.len().min(HDR_LEN)]);
    }
    let n = dev::write(portid, buf);
    if let Ok(n) = n {
        if n == buf.len() {
            return 0;
        }
    }
    trace!(
        "umad_send",
        "write returned {} != sizeof umad {} + length {} ({})",
        n.map_or(-1, |n| n as i64),
        size,
        length,
        strerror(errno())
    );
    if errno() == 0 {
        set_errno(libc::EIO);
    }
    -libc::EIO
}

/// Receives one MAD into `umad`. `*length` is the MAD capacity on input and the MAD length
/// on output; `timeout_ms` 0 means do not wait (the fd is non-blocking), negative waits
/// forever. Returns the receiving agent id (≥ 0).
///
/// Sets `errno` to 0 first. Errors are negative errnos: `-EINVAL` for a `NULL` argument,
/// `-ETIMEDOUT`/`-EIO` from waiting, `-EWOULDBLOCK` when nothing is queued, and — the RMPP
/// contract — `-ENOSPC` when the MAD is larger than the buffer, with `*length` set to the
/// length needed (the MAD stays queued; call again with a bigger buffer). After a failed
/// read `*length` is taken from the header in the buffer, as in libibumad.
///
/// # Safety
/// `umad` is `NULL` or a writable buffer of `umad_size() + *length` bytes; `length` is `NULL`
/// or points to a writable `int`.
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_recv(
    portid: c_int,
    umad: *mut c_void,
    length: *mut c_int,
    timeout_ms: c_int,
) -> c_int {
    set_errno(0);
    trace!(
        "umad_recv",
        "fd {} umad {} timeout {}",
        portid,
        Ptr(umad),
        timeout_ms as u32
    );
    // SAFETY: the caller guarantees `length` is NULL or a writable int.
    let Some(len) = (unsafe { opt_mut(length) }) else {
        set_errno(libc::EINVAL);
        return -libc::EINVAL;
    };
    if umad.is_null() {
        set_errno(libc::EINVAL);
        return -libc::EINVAL;
    }
    if timeout_ms != 0 {
        let n = dev::poll(portid, timeout_ms);
        if n < 0 {
            if errno() == 0 {
                set_errno(-n);
            }
            return n;
        }
    }
    let size = header_size();
    let Ok(count) = usize::try_from(size as i64 + i64::from(*len)) else {
        // C would read into a wrapped, huge count; refuse instead.
        set_errno(libc::EINVAL);
        return -libc::EINVAL;
    };
    // SAFETY: non-NULL, and the caller guarantees umad_size() + *length writable bytes.
    let Some(buf) = (unsafe { opt_bytes_mut(umad, count) }) else {
        set_errno(libc::EINVAL);
        return -libc::EINVAL;
    };
    let read = dev::read(portid, buf);
    // Header fields are taken only where the buffer named by the call holds them.
    let h = UserMadHeader::from_prefix(buf, header_layout());
    let holds = |f: core::ops::Range<usize>| buf.len() >= f.end;
    match read {
        // C takes only 0 <= n <= umad_size() + *length as a message; a read that claims more
        // (umad2sim's can) goes down the error branch below instead of handing the caller a
        // length past its buffer.
        Ok(n) if n <= buf.len() => {
            let agent = if holds(field::ID) { h.agent_id() } else { 0 } as c_int;
            trace!("umad_recv", "mad received by agent {} length {}", agent, n);
            *len = n.saturating_sub(size) as c_int;
            agent
        }
        // umad2sim returns -EWOULDBLOCK itself, leaving errno alone (still 0 from entry);
        // libibumad reports that without touching *length.
        Err(e) if e.raw_os_error() == Some(libc::EWOULDBLOCK) && errno() == 0 => {
            set_errno(libc::EWOULDBLOCK);
            -libc::EWOULDBLOCK
        }
        Ok(_) | Err(_) => {
            // C: `*length = mad->length - umad_size()`, truncated to int (only when the
            // buffer named by the call holds that header field).
            let needed =
                holds(field::LENGTH).then(|| u64::from(h.length()).wrapping_sub(size as u64));
            trace!(
                "umad_recv",
                "read returned {} > sizeof umad {} + length {} ({})",
                needed.unwrap_or(0),
                size,
                *len,
                strerror(errno())
            );
            if let Some(needed) = needed {
                *len = needed as u32 as c_int;
            }
            if errno() == 0 {
                set_errno(libc::EIO);
            }
            -errno()
        }
    }
}

/// Waits up to `timeout_ms` (negative: forever) for a MAD to receive. Returns 0 when the port
/// is readable (or `poll` flags it in any other way, e.g. an invalid fd), `-ETIMEDOUT` on
/// timeout, `-EIO` if `poll` fails (`errno` from poll).
///
/// # Safety
/// No preconditions (unsafe only as part of the C ABI).
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_poll(portid: c_int, timeout_ms: c_int) -> c_int {
    trace!("umad_poll", "fd {} timeout {}", portid, timeout_ms as u32);
    dev::poll(portid, timeout_ms)
}

/// The file descriptor of a port: the port id itself.
///
/// # Safety
/// No preconditions (unsafe only as part of the C ABI).
#[no_mangle]
#[allow(unsafe_code)] // the C ABI
pub unsafe extern "C" fn umad_get_fd(portid: c_int) -> c_int {
    trace!("umad_get_fd", "fd {}", portid);
    portid
}

#[cfg(test)]
#[allow(unsafe_code)] // the tests call the C ABI as C does
mod tests {
    use super::*;
    use crate::global::set_new_user_mad_api;
    use crate::global::tests::global_lock;

    fn pipe() -> (c_int, c_int) {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors.
        let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK) };
        assert_eq!(rc, 0);
        (fds[0], fds[1])
    }

    #[test]
    fn send_and_receive_through_a_pipe() {
        let _g = global_lock();
        let before = crate::global::new_user_mad_api();
        set_new_user_mad_api(true);
        let (r, w) = pipe();
        let mut out = vec![0u8; 64 + 256];
        out[64] = 0x81;
        // SAFETY: `out` is a writable buffer of 64 + 256 bytes.
        let rc = unsafe { umad_send(w, 3, out.as_mut_ptr().cast(), 256, 100, 2) };
        assert_eq!(rc, 0);
        assert_eq!(errno(), 0);
        assert_eq!(&out[0..4], &3u32.to_ne_bytes());
        assert_eq!(&out[8..12], &100u32.to_ne_bytes());
        assert_eq!(&out[12..16], &2u32.to_ne_bytes());
        // SAFETY: `r` is open; waiting on it has no memory effects.
        assert_eq!(unsafe { umad_poll(r, 1000) }, 0);
        let mut inb = vec![0u8; 64 + 256];
        let mut len: c_int = 256;
        // SAFETY: `inb` has 64 + 256 writable bytes, `len` is a writable int.
        let agent = unsafe { umad_recv(r, inb.as_mut_ptr().cast(), &mut len, 0) };
        assert_eq!(agent, 3);
        assert_eq!(len, 256);
        assert_eq!(inb[64], 0x81);
        // Nothing left: EAGAIN from the kernel clobbers *length from the stale header.
        inb[16..20].copy_from_slice(&1000u32.to_ne_bytes());
        let mut len: c_int = 256;
        // SAFETY: as above.
        let rc = unsafe { umad_recv(r, inb.as_mut_ptr().cast(), &mut len, 0) };
        assert_eq!(rc, -libc::EAGAIN);
        assert_eq!(errno(), libc::EAGAIN);
        assert_eq!(len, 1000 - 64);
        // SAFETY: empty pipe: poll times out.
        assert_eq!(unsafe { umad_poll(r, 10) }, -libc::ETIMEDOUT);
        let mut len: c_int = 256;
        // SAFETY: as above.
        let rc = unsafe { umad_recv(r, inb.as_mut_ptr().cast(), &mut len, 10) };
        assert_eq!(rc, -libc::ETIMEDOUT);
        assert_eq!(errno(), libc::ETIMEDOUT);
        // SAFETY: both descriptors are ours and closed once.
        unsafe {
            assert_eq!(umad_close_port(r), 0);
            assert_eq!(umad_close_port(w), 0);
        }
        set_new_user_mad_api(before);
    }

    #[test]
    fn send_failure_conventions() {
        let _g = global_lock();
        let mut buf = vec![0u8; 64 + 256];
        // SAFETY: `buf` is writable; -1 is not a descriptor.
        let rc = unsafe { umad_send(-1, 0, buf.as_mut_ptr().cast(), 256, 0, 0) };
        assert_eq!(rc, -libc::EIO);
        assert_eq!(errno(), libc::EBADF);
        // SAFETY: `buf` is writable; NULL and lengths below -umad_size() are refused before
        // any access.
        unsafe {
            assert_eq!(
                umad_send(-1, 0, core::ptr::null_mut(), 256, 0, 0),
                -libc::EINVAL
            );
            // A short (negative) length still writes what it names, as in C.
            assert_eq!(
                umad_send(-1, 0, buf.as_mut_ptr().cast(), -1, 0, 0),
                -libc::EIO
            );
            assert_eq!(errno(), libc::EBADF);
            assert_eq!(
                umad_send(-1, 0, buf.as_mut_ptr().cast(), -1000, 0, 0),
                -libc::EIO
            );
        }
        assert_eq!(errno(), libc::EINVAL);
    }

    #[test]
    fn recv_argument_checks() {
        let mut buf = vec![0u8; 64 + 256];
        let mut len: c_int = 256;
        // SAFETY: NULL arguments are refused before any access.
        unsafe {
            assert_eq!(
                umad_recv(0, buf.as_mut_ptr().cast(), core::ptr::null_mut(), 0),
                -libc::EINVAL
            );
            assert_eq!(errno(), libc::EINVAL);
            assert_eq!(
                umad_recv(0, core::ptr::null_mut(), &mut len, 0),
                -libc::EINVAL
            );
            // fd -1 is ignored by poll, which then times out.
            assert_eq!(
                umad_recv(-1, buf.as_mut_ptr().cast(), &mut len, 10),
                -libc::ETIMEDOUT
            );
            assert_eq!(errno(), libc::ETIMEDOUT);
            // A stale negative length from an earlier failure still reads what it names
            // (fd -1: EBADF)...
            len = -36;
            assert_eq!(
                umad_recv(-1, buf.as_mut_ptr().cast(), &mut len, 0),
                -libc::EBADF
            );
            // ...but one below -umad_size() (a wrapped count in C) is refused.
            len = -1000;
            assert_eq!(
                umad_recv(-1, buf.as_mut_ptr().cast(), &mut len, 0),
                -libc::EINVAL
            );
            assert_eq!(len, -1000);
        }
    }

    #[test]
    fn poll_counts_pollnval_as_ready_and_close_returns_0() {
        // SAFETY: an fd number far above anything this test process opens.
        unsafe {
            assert_eq!(umad_poll(999_999, 0), 0);
            assert_eq!(umad_close_port(999_999), 0);
        }
        assert_eq!(errno(), libc::EBADF);
        // SAFETY: no preconditions.
        assert_eq!(unsafe { umad_get_fd(42) }, 42);
    }
}
