//! The device calls as a C program sees them, for the libibumad C ABI (through
//! [`crate::raw`]), whose callers compare `errno` with the C library's.
//!
//! Each is the `sys` wrapper of the same name, except for a failure that set no errno (an
//! interposer such as umad2sim returning -1 without one): the `sys` wrappers report that as an
//! error naming the call, never as an errno; a C caller instead reads whatever
//! errno held before the call, which is what these report (it may be 0). Every other error is
//! the same.

use std::io;
use std::os::unix::io::RawFd;
use std::path::Path;

use super::{errno, is_no_errno};
use crate::abi::{IbUserMadRegReq, IbUserMadRegReq2};

/// `r`, with a failure that set no errno turned into the errno a C caller would read now.
fn as_c<T>(r: io::Result<T>) -> io::Result<T> {
    r.map_err(|e| {
        if is_no_errno(&e) {
            io::Error::from_raw_os_error(errno())
        } else {
            e
        }
    })
}

/// `open(path, O_RDWR | O_NONBLOCK)`, handing over the descriptor: the caller owns it and
/// closes it with [`close`].
pub fn open_rw_nonblock(path: &Path) -> io::Result<RawFd> {
    as_c(super::open_rw_nonblock(path).map(super::Fd::into_raw))
}

/// One `read(fd, buf)`; umad2sim's `-EWOULDBLOCK` return value is
/// [`io::ErrorKind::WouldBlock`] like `EAGAIN`.
pub fn read(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    as_c(super::read(fd, buf))
}

/// One `write(fd, buf)`.
pub fn write(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    as_c(super::write(fd, buf))
}

/// One `poll({fd, events}, 1, timeout_ms)` exactly as called, without retrying `EINTR`:
/// returns poll's result and the `revents` it reported.
pub fn poll_once(
    fd: RawFd,
    events: i16,
    timeout_ms: libc::c_int,
) -> io::Result<(libc::c_int, i16)> {
    as_c(super::poll_once(fd, events, timeout_ms))
}

/// `close(fd)` through the libc symbol.
///
/// # Safety
/// `fd` must be owned by the caller and not used (or closed) by anything else afterwards:
/// closing a descriptor another part of the program still uses breaks its I/O safety.
pub unsafe fn close(fd: RawFd) -> io::Result<()> {
    // SAFETY: the caller hands over ownership of `fd` (this function's contract).
    as_c(unsafe { super::close(fd) })
}

/// `ioctl(fd, IB_USER_MAD_ENABLE_PKEY)`.
pub fn enable_pkey(fd: RawFd) -> io::Result<()> {
    as_c(super::enable_pkey(fd))
}

/// `ioctl(fd, IB_USER_MAD_REGISTER_AGENT, &req)`; the kernel writes the agent id into `req.id`.
pub fn register_agent(fd: RawFd, req: &mut IbUserMadRegReq) -> io::Result<()> {
    as_c(super::register_agent(fd, req))
}

/// `ioctl(fd, IB_USER_MAD_REGISTER_AGENT2, &req)`; the kernel writes `req.id` (and on EINVAL
/// the supported flags into `req.flags`).
pub fn register_agent2(fd: RawFd, req: &mut IbUserMadRegReq2) -> io::Result<()> {
    as_c(super::register_agent2(fd, req))
}

/// `ioctl(fd, IB_USER_MAD_UNREGISTER_AGENT, &id)`.
pub fn unregister_agent(fd: RawFd, id: u32) -> io::Result<()> {
    as_c(super::unregister_agent(fd, id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_without_errno_reads_the_callers_errno_as_c_does() {
        super::super::set_errno(libc::ENOENT);
        let e = as_c::<()>(Err(super::super::failure("open", -1, 0))).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOENT));
        // Errors with a code pass unchanged.
        let e = as_c::<()>(Err(io::Error::from_raw_os_error(libc::EBADF))).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EBADF));
        let e = read(-1, &mut [0u8; 4]).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EBADF));
    }
}
