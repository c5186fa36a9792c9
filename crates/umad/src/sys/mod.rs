//! The only place where `umad` touches the operating system.
//!
//! Every access to `/sys/class/infiniband*` and `/dev/infiniband/*` goes through the libc
//! symbols `open`, `read`, `write`, `ioctl`, `poll`, `close` and `opendir`/`readdir`/`closedir`
//! — never `std::fs` (which calls `open64`/`statx`) and never raw syscalls. That is what lets an
//! interposer such as ibsim's `libumad2sim.so` (LD_PRELOAD) see and simulate our calls.
//! Each `unsafe` block carries one `// SAFETY:` line.
#![allow(unsafe_code)]

use std::ffi::{CStr, CString, OsString};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::io::{AsRawFd, RawFd};
use std::path::Path;

mod event;
pub use event::{poll_in2, EventFlag};

use crate::abi::{
    IbUserMadRegReq, IbUserMadRegReq2, IB_USER_MAD_ENABLE_PKEY, IB_USER_MAD_REGISTER_AGENT,
    IB_USER_MAD_REGISTER_AGENT2, IB_USER_MAD_UNREGISTER_AGENT,
};

/// An owned file descriptor closed with libc `close` (so an interposer sees the close too).
#[derive(Debug)]
pub struct Fd(RawFd);

impl Fd {
    /// The raw descriptor number.
    pub fn raw(&self) -> RawFd {
        self.0
    }

    /// Gives up ownership: the caller must close the descriptor.
    pub fn into_raw(self) -> RawFd {
        let fd = self.0;
        std::mem::forget(self);
        fd
    }
}

impl AsRawFd for Fd {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: we own this descriptor and it is closed exactly once, here.
        unsafe { libc::close(self.0) };
    }
}

fn cpath(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))
}

/// `open(path, flags)` through the libc `open` symbol.
pub fn open(path: &Path, flags: libc::c_int) -> io::Result<Fd> {
    let c = cpath(path)?;
    // SAFETY: `c` is a valid NUL-terminated string that outlives the call.
    let fd = unsafe { libc::open(c.as_ptr(), flags) };
    if fd < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(Fd(fd))
    }
}

/// `open(path, O_RDWR | O_NONBLOCK)` — how libibumad opens `umadN` (and `issmN`).
pub fn open_rw_nonblock(path: &Path) -> io::Result<Fd> {
    open(path, libc::O_RDWR | libc::O_NONBLOCK)
}

/// One `read(fd, buf)`.
///
/// ibsim's umad2sim returns `-EWOULDBLOCK` (-11) as the *return value* with errno untouched
/// when its queue is empty; that is mapped to [`io::ErrorKind::WouldBlock`] like `EAGAIN`.
pub fn read(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the duration of the call.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n >= 0 {
        Ok(n as usize)
    } else if n == -(libc::EWOULDBLOCK as isize) {
        Err(io::Error::from_raw_os_error(libc::EWOULDBLOCK))
    } else {
        Err(io::Error::last_os_error())
    }
}

/// One `write(fd, buf)`.
pub fn write(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for reads of `buf.len()` bytes for the duration of the call.
    let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// `poll({fd, POLLIN}, 1, timeout_ms)`: `Ok(true)` when readable (or in error: the next read
/// reports it), `Ok(false)` on timeout. `EINTR` is retried with the same timeout.
pub fn poll_in(fd: RawFd, timeout_ms: libc::c_int) -> io::Result<bool> {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    loop {
        // SAFETY: `p` is one valid, initialised pollfd and nfds is 1.
        let n = unsafe { libc::poll(&mut p, 1, timeout_ms) };
        match n {
            0 => return Ok(false),
            n if n > 0 => {
                if p.revents & libc::POLLNVAL != 0 {
                    return Err(io::Error::from_raw_os_error(libc::EBADF));
                }
                return Ok(true);
            }
            _ => {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
}

/// One `poll({fd, events}, 1, timeout_ms)` exactly as called, without retrying `EINTR`:
/// returns poll's result and the `revents` it reported.
pub fn poll_once(
    fd: RawFd,
    events: i16,
    timeout_ms: libc::c_int,
) -> io::Result<(libc::c_int, i16)> {
    let mut p = libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    // SAFETY: `p` is one valid, initialised pollfd and nfds is 1.
    let n = unsafe { libc::poll(&mut p, 1, timeout_ms) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok((n, p.revents))
    }
}

/// `close(fd)` through the libc symbol.
///
/// # Safety
/// `fd` must be owned by the caller and not used (or closed) by anything else afterwards:
/// closing a descriptor another part of the program still uses breaks its I/O safety.
pub unsafe fn close(fd: RawFd) -> io::Result<()> {
    // SAFETY: the caller hands over ownership of `fd` (this function's contract).
    if unsafe { libc::close(fd) } < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn ioctl_result(r: libc::c_int) -> io::Result<()> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `ioctl(fd, IB_USER_MAD_ENABLE_PKEY)`.
pub fn enable_pkey(fd: RawFd) -> io::Result<()> {
    // SAFETY: ENABLE_PKEY takes no argument.
    ioctl_result(unsafe { libc::ioctl(fd, IB_USER_MAD_ENABLE_PKEY as _) })
}

/// `ioctl(fd, IB_USER_MAD_REGISTER_AGENT, &req)`; the kernel writes the agent id into `req.id`.
pub fn register_agent(fd: RawFd, req: &mut IbUserMadRegReq) -> io::Result<()> {
    // SAFETY: `req` is a valid, exclusively borrowed `struct ib_user_mad_reg_req` (28 bytes).
    ioctl_result(unsafe {
        libc::ioctl(
            fd,
            IB_USER_MAD_REGISTER_AGENT as _,
            req as *mut IbUserMadRegReq,
        )
    })
}

/// `ioctl(fd, IB_USER_MAD_REGISTER_AGENT2, &req)`; the kernel writes `req.id` (and on EINVAL
/// the supported flags into `req.flags`).
pub fn register_agent2(fd: RawFd, req: &mut IbUserMadRegReq2) -> io::Result<()> {
    // SAFETY: `req` is a valid, exclusively borrowed `struct ib_user_mad_reg_req2` (40 bytes).
    ioctl_result(unsafe {
        libc::ioctl(
            fd,
            IB_USER_MAD_REGISTER_AGENT2 as _,
            req as *mut IbUserMadRegReq2,
        )
    })
}

/// `ioctl(fd, IB_USER_MAD_UNREGISTER_AGENT, &id)`.
pub fn unregister_agent(fd: RawFd, id: u32) -> io::Result<()> {
    let mut id = id;
    // SAFETY: the kernel reads one `__u32` through the pointer, which is valid for the call.
    ioctl_result(unsafe { libc::ioctl(fd, IB_USER_MAD_UNREGISTER_AGENT as _, &mut id as *mut u32) })
}

/// Reads a small file with one `open` + one `read` of at most `max` bytes + `close`, the way
/// libibumad's `sys_read_string` does. Returns the bytes read.
pub fn read_small_file(path: &Path, max: usize) -> io::Result<Vec<u8>> {
    let fd = open(path, libc::O_RDONLY)?;
    let mut buf = vec![0u8; max];
    let n = read(fd.raw(), &mut buf)?;
    buf.truncate(n);
    Ok(buf)
}

/// Lists a directory with `opendir`/`readdir`/`closedir`, in directory (readdir) order,
/// without `.` and `..`.
pub fn read_dir(path: &Path) -> io::Result<Vec<OsString>> {
    let c = cpath(path)?;
    // SAFETY: `c` is a valid NUL-terminated string that outlives the call.
    let dir = unsafe { libc::opendir(c.as_ptr()) };
    if dir.is_null() {
        return Err(io::Error::last_os_error());
    }
    let mut names = Vec::new();
    loop {
        // SAFETY: `dir` is a live DIR* from opendir, not yet closed.
        let ent = unsafe { libc::readdir(dir) };
        if ent.is_null() {
            break;
        }
        // SAFETY: readdir returned a valid dirent whose d_name is NUL-terminated; we copy it
        // before the next readdir/closedir call invalidates it.
        let name = unsafe { CStr::from_ptr((*ent).d_name.as_ptr()) }.to_bytes();
        if name != b"." && name != b".." {
            names.push(OsString::from_vec(name.to_vec()));
        }
    }
    // SAFETY: `dir` came from opendir and is closed exactly once.
    unsafe { libc::closedir(dir) };
    Ok(names)
}

/// When ibsim's `libumad2sim.so` is preloaded, the MAD header size it uses: whatever the
/// `umad_size()` of the libibumad loaded in this process answers (56 unless that library
/// opened a port itself). `None` when umad2sim is not present.
pub fn umad2sim_header_size() -> Option<usize> {
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only looks a symbol up.
    let sim = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"sim_client_init".as_ptr()) };
    if sim.is_null() {
        return None;
    }
    // SAFETY: as above.
    let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"umad_size".as_ptr()) };
    if f.is_null() {
        return Some(crate::abi::HDR_LEN_OLD);
    }
    // SAFETY: `umad_size` is libibumad's `size_t umad_size(void)`, an exported C function with
    // this exact signature and no preconditions.
    let size =
        unsafe { std::mem::transmute::<*mut libc::c_void, extern "C" fn() -> libc::size_t>(f)() };
    Some(size)
}
