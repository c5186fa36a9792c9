//! The only place where `umad` touches the operating system.
//!
//! Every access to `/sys/class/infiniband*` and `/dev/infiniband/*` goes through the libc
//! symbols `open`, `read`, `write`, `ioctl`, `poll`, `close` and `opendir`/`readdir`/`closedir`
//! — never `std::fs` (which calls `open64`/`statx`) and never raw syscalls. That is what lets an
//! interposer such as ibsim's `libumad2sim.so` (LD_PRELOAD) see and simulate our calls.
//! Each `unsafe` block carries one `// SAFETY:` line.
#![allow(unsafe_code)]

use std::ffi::{CStr, CString, OsString};
use std::fmt;
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

pub mod c_view;
pub mod signals;

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

/// What `errno` holds now.
fn errno() -> i32 {
    // SAFETY: `__errno_location` returns this thread's valid, aligned errno slot.
    unsafe { *libc::__errno_location() }
}

fn set_errno(value: i32) {
    // SAFETY: as in `errno`; writing this thread's errno is what libc functions do themselves.
    unsafe { *libc::__errno_location() = value };
}

/// Runs one libc call with errno cleared first, so that afterwards errno says what *this* call
/// did (0: it set nothing), and returns the call's result with that errno. If the call set
/// nothing, the caller's errno is put back, so to the program errno looks exactly as if the
/// call had been made directly (the C ABI's callers compare errno with the C library's).
fn traced<T>(call: impl FnOnce() -> T) -> (T, i32) {
    let saved = errno();
    set_errno(0);
    let ret = call();
    let after = errno();
    if after == 0 {
        set_errno(saved);
    }
    (ret, after)
}

/// Largest value the kernel uses as an error number (`MAX_ERRNO`): a return value in
/// `-MAX_ERRNO..=-2` is read as a negated errno.
const MAX_ERRNO: i64 = 4095;

/// The error of a libc `call` that failed with return value `ret` (negative) while errno held
/// `errno` (cleared before the call). The real error code, wherever the callee put it:
///
/// * `ret` in `-4095..=-2`: a negated errno returned as the value (ibsim's umad2sim returns
///   `-EWOULDBLOCK` from `read` without touching errno) → that errno;
/// * `-1` with errno set → errno, as POSIX says;
/// * `-1` with errno 0, or any other value → an error whose message names the call and what
///   it returned (there is no errno to report; [`crate::Error::errno`] maps it to `EIO`),
///   never "Success (os error 0)".
pub(crate) fn failure(call: &'static str, ret: i64, errno: i32) -> io::Error {
    if (-MAX_ERRNO..=-2).contains(&ret) {
        return io::Error::from_raw_os_error(-ret as i32);
    }
    if ret == -1 && errno != 0 {
        return io::Error::from_raw_os_error(errno);
    }
    io::Error::other(NoErrno { call, ret })
}

/// A libc call failed without an error code: it returned -1 leaving errno 0, or a value that
/// is neither -1 nor a negated errno.
#[derive(Debug)]
struct NoErrno {
    call: &'static str,
    ret: i64,
}

impl fmt::Display for NoErrno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let why = if self.ret == -1 {
            "without setting errno"
        } else {
            "which is neither -1 nor a negated errno"
        };
        write!(
            f,
            "{} failed: it returned {} {why} (an interposer such as ibsim's umad2sim refused \
             the call, e.g. for a descriptor it does not know); treated as EIO",
            self.call, self.ret
        )
    }
}

impl std::error::Error for NoErrno {}

/// Whether `e` is a [`failure`] that carries no error code.
fn is_no_errno(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<NoErrno>())
}

/// `Ok(ret)` for a non-negative result of `call`, else its [`failure`].
fn check(call: &'static str, (ret, errno): (i64, i32)) -> io::Result<u64> {
    if ret >= 0 {
        Ok(ret as u64)
    } else {
        Err(failure(call, ret, errno))
    }
}

fn cpath(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))
}

/// `open(path, flags)` through the libc `open` symbol.
pub fn open(path: &Path, flags: libc::c_int) -> io::Result<Fd> {
    let c = cpath(path)?;
    let fd = check(
        "open",
        traced(
            // SAFETY: `c` is a valid NUL-terminated string that outlives the call.
            || i64::from(unsafe { libc::open(c.as_ptr(), flags) }),
        ),
    )?;
    Ok(Fd(fd as RawFd))
}

/// `open(path, O_RDWR | O_NONBLOCK)` — how libibumad opens `umadN` (and `issmN`).
pub fn open_rw_nonblock(path: &Path) -> io::Result<Fd> {
    open(path, libc::O_RDWR | libc::O_NONBLOCK)
}

/// One `read(fd, buf)`.
///
/// ibsim's umad2sim returns `-EWOULDBLOCK` (-11) as the *return value* with errno untouched
/// when its queue is empty; that is mapped to [`io::ErrorKind::WouldBlock`] like `EAGAIN`
/// (`failure` in this module has every error mapping).
pub fn read(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    let n = check(
        "read",
        traced(
            // SAFETY: `buf` is valid for writes of `buf.len()` bytes for the duration of the call.
            || unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) } as i64,
        ),
    )?;
    Ok(n as usize)
}

/// One `write(fd, buf)`.
pub fn write(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    let n = check(
        "write",
        traced(
            // SAFETY: `buf` is valid for reads of `buf.len()` bytes for the duration of the call.
            || unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) } as i64,
        ),
    )?;
    Ok(n as usize)
}

/// `poll({fd, POLLIN}, 1, timeout_ms)`: `Ok(true)` when readable (or in error: the next read
/// reports it), `Ok(false)` on timeout. `EINTR` is retried with the same timeout.
pub fn poll_in(fd: RawFd, timeout_ms: libc::c_int) -> io::Result<bool> {
    loop {
        match poll_once(fd, libc::POLLIN, timeout_ms) {
            Ok((0, _)) => return Ok(false),
            Ok((_, revents)) if revents & libc::POLLNVAL != 0 => {
                return Err(io::Error::from_raw_os_error(libc::EBADF))
            }
            Ok(_) => return Ok(true),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
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
    let n = check(
        "poll",
        traced(
            // SAFETY: `p` is one valid, initialised pollfd and nfds is 1.
            || i64::from(unsafe { libc::poll(&mut p, 1, timeout_ms) }),
        ),
    )?;
    Ok((n as libc::c_int, p.revents))
}

/// `close(fd)` through the libc symbol.
///
/// # Safety
/// `fd` must be owned by the caller and not used (or closed) by anything else afterwards:
/// closing a descriptor another part of the program still uses breaks its I/O safety.
pub unsafe fn close(fd: RawFd) -> io::Result<()> {
    check(
        "close",
        traced(
            // SAFETY: the caller hands over ownership of `fd` (this function's contract).
            || i64::from(unsafe { libc::close(fd) }),
        ),
    )
    .map(drop)
}

/// The result of one `ioctl` made by `call`, with its errno read right after it.
fn ioctl_result(call: impl FnOnce() -> libc::c_int) -> io::Result<()> {
    check("ioctl", traced(|| i64::from(call()))).map(drop)
}

/// `ioctl(fd, IB_USER_MAD_ENABLE_PKEY)`.
pub fn enable_pkey(fd: RawFd) -> io::Result<()> {
    // SAFETY: ENABLE_PKEY takes no argument.
    ioctl_result(|| unsafe { libc::ioctl(fd, IB_USER_MAD_ENABLE_PKEY as _) })
}

/// `ioctl(fd, IB_USER_MAD_REGISTER_AGENT, &req)`; the kernel writes the agent id into `req.id`.
pub fn register_agent(fd: RawFd, req: &mut IbUserMadRegReq) -> io::Result<()> {
    // SAFETY: `req` is a valid, exclusively borrowed `struct ib_user_mad_reg_req` (28 bytes).
    ioctl_result(|| unsafe {
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
    ioctl_result(|| unsafe {
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
    ioctl_result(|| unsafe {
        libc::ioctl(fd, IB_USER_MAD_UNREGISTER_AGENT as _, &mut id as *mut u32)
    })
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
    let (dir, err) = traced(
        // SAFETY: `c` is a valid NUL-terminated string that outlives the call.
        || unsafe { libc::opendir(c.as_ptr()) },
    );
    if dir.is_null() {
        return Err(failure("opendir", -1, err));
    }
    let mut names = Vec::new();
    loop {
        // readdir answers NULL both at the end and on error; only errno tells them apart.
        let (ent, err) = traced(
            // SAFETY: `dir` is a live DIR* from opendir, not yet closed.
            || unsafe { libc::readdir(dir) },
        );
        if ent.is_null() {
            if err != 0 {
                // SAFETY: `dir` came from opendir and is closed exactly once, here.
                unsafe { libc::closedir(dir) };
                return Err(failure("readdir", -1, err));
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_negated_errno_return_value_is_that_errno() {
        // umad2sim: read returns -EWOULDBLOCK and leaves errno alone.
        let e = failure("read", -i64::from(libc::EWOULDBLOCK), 0);
        assert_eq!(e.raw_os_error(), Some(libc::EWOULDBLOCK));
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
        // The returned value wins over a stray errno.
        let e = failure("read", -i64::from(libc::ENOSPC), libc::EINTR);
        assert_eq!(e.raw_os_error(), Some(libc::ENOSPC));
        assert_eq!(failure("x", -MAX_ERRNO, 0).raw_os_error(), Some(4095));
    }

    #[test]
    fn minus_one_takes_errno() {
        let e = failure("write", -1, libc::EBADF);
        assert_eq!(e.raw_os_error(), Some(libc::EBADF));
        assert_eq!(
            failure("poll", -1, libc::EINTR).kind(),
            io::ErrorKind::Interrupted
        );
    }

    #[test]
    fn no_errno_is_never_success() {
        for (ret, what) in [
            (-1, "without setting errno"),
            (-4096, "neither -1"),
            (-70000, "neither -1"),
        ] {
            let e = failure("read", ret, 0);
            assert_eq!(e.raw_os_error(), None, "{ret}");
            let text = e.to_string();
            assert!(
                !text.contains("Success") && !text.contains("os error 0"),
                "{text}"
            );
            assert!(
                text.contains("read failed") && text.contains(what),
                "{text}"
            );
            assert!(text.contains(&ret.to_string()), "{text}");
            // What the crate's error (and so the C ABI) makes of it.
            let err = crate::Error::Recv {
                ca: "ibsim0".into(),
                port: 1,
                source: e,
            };
            assert_eq!(err.errno(), libc::EIO);
            assert!(!err.to_string().contains("Success"), "{err}");
        }
    }

    #[test]
    fn check_passes_results_through() {
        assert_eq!(check("read", (0, 0)).unwrap(), 0);
        assert_eq!(check("read", (256, libc::EAGAIN)).unwrap(), 256);
        assert_eq!(
            check("read", (-1, libc::EAGAIN)).unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
    }

    #[test]
    fn real_calls_report_their_own_errno_and_leave_errno_as_libc_would() {
        // A stale errno from earlier must not leak into a later failure's report ...
        set_errno(libc::EINTR);
        let e = read(-1, &mut [0u8; 8]).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EBADF));
        let e = write(-1, &[0u8; 8]).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EBADF));
        let e = open(Path::new("/nonexistent/umad-rs-test"), libc::O_RDONLY).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOENT));
        let e = read_dir(Path::new("/nonexistent/umad-rs-test")).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOENT));
        // ... and a call that sets no errno (here: successful ones) leaves it as it found it.
        set_errno(libc::ENOSPC);
        let fd = open(Path::new("/dev/null"), libc::O_RDWR).unwrap();
        assert_eq!(read(fd.raw(), &mut [0u8; 8]).unwrap(), 0);
        assert_eq!(write(fd.raw(), b"x").unwrap(), 1);
        assert!(poll_in(fd.raw(), 0).unwrap());
        assert!(!read_dir(Path::new("/dev")).unwrap().is_empty());
        assert_eq!(errno(), libc::ENOSPC);
        // poll on a closed descriptor: POLLNVAL → EBADF.
        let raw = fd.into_raw();
        // SAFETY: `raw` came from `into_raw` and nothing else uses it.
        unsafe { close(raw) }.unwrap();
        assert_eq!(
            poll_in(raw, 0).unwrap_err().raw_os_error(),
            Some(libc::EBADF)
        );
    }
}
