//! What a port id stands for: a kernel umad descriptor (the libc calls of [`umad::raw`], which
//! interposers such as umad2sim see), or — with `UMAD_IBSIM` set — a simulated port
//! ([`crate::sim`]) that answers the same operations the way the kernel's `ib_umad` does.
//!
//! The C functions (`port.rs`, `register.rs`) are written once against these operations; on a
//! simulated port `errno` is left alone on success and set on failure, as by the system call it
//! stands for (the socket calls underneath do not leak theirs).

use core::ffi::c_int;
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

use umad::abi::{self, AgentRegistration, Fallback, RegisterFailure, RegisterIoctl, UserMadHeader};
use umad::{AgentSpec, Error, MadAddr};

use crate::ffi::{errno, set_errno};
use crate::global::header_layout;
use crate::sim::{self, no_cancel, SimPort};

/// The `io::Error` of errno `code`.
fn fail(code: c_int) -> io::Error {
    io::Error::from_raw_os_error(code)
}

/// The `io::Error` a failed simulated operation stands for.
fn failed(e: &Error) -> io::Error {
    fail(e.errno())
}

/// Runs a simulated operation as the system call it stands for: thread cancellation off (see
/// [`crate::sim`]), `errno` as before on success and the error's on failure.
fn sim_op<T>(op: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    let saved = errno();
    let r = no_cancel(op);
    set_errno(match &r {
        Ok(_) => saved,
        Err(e) => e.raw_os_error().unwrap_or(libc::EIO),
    });
    r
}

/// An operation on the simulated port `portid`, run as [`sim_op`] runs one; `None` (nothing
/// done, `errno` untouched) if `portid` is not a simulated port. The
/// port is looked up and released inside, so even its last release (a concurrent close)
/// runs with cancellation off.
fn on_sim_port<T>(
    portid: c_int,
    op: impl FnOnce(&SimPort) -> io::Result<T>,
) -> Option<io::Result<T>> {
    if !sim::enabled() {
        return None;
    }
    let saved = errno();
    let r = no_cancel(|| sim::port(portid).map(|p| op(&p)))?;
    set_errno(match &r {
        Ok(_) => saved,
        Err(e) => e.raw_os_error().unwrap_or(libc::EIO),
    });
    Some(r)
}

/// `open(path, O_RDWR | O_NONBLOCK)` of a umad device: under `UMAD_IBSIM` a new simulated port
/// (the path is only the name the C library computed), else the device itself.
pub(crate) fn open(path: &Path) -> io::Result<c_int> {
    match sim::options() {
        Some(opts) => sim_op(|| sim::open(opts).map_err(|e| failed(&e))),
        None => umad::raw::open_device(path),
    }
}

/// `ioctl(IB_USER_MAD_ENABLE_PKEY)`: a simulated port always has the 64-byte header.
pub(crate) fn enable_pkey(portid: c_int) -> io::Result<()> {
    if sim::enabled() {
        Ok(())
    } else {
        umad::raw::enable_pkey(portid)
    }
}

/// `close(portid)` of a simulated port: whether `portid` was one (and is now closed). Any
/// other descriptor is left to the caller's `umad::raw::close`.
pub(crate) fn close_sim(portid: c_int) -> bool {
    sim_op(|| Ok(sim::close(portid))).unwrap_or(false)
}

/// `write(portid, buf)`: header + MAD, sent as the kernel sends it.
pub(crate) fn write(portid: c_int, buf: &[u8]) -> io::Result<usize> {
    on_sim_port(portid, |p| sim_write(p, buf)).unwrap_or_else(|| umad::raw::write(portid, buf))
}

fn sim_write(p: &SimPort, buf: &[u8]) -> io::Result<usize> {
    // The kernel wants at least a header (and refuses less with EINVAL).
    let Ok(h) = UserMadHeader::new_checked(buf, header_layout()) else {
        return Err(fail(libc::EINVAL));
    };
    let addr = MadAddr::parse(&h.addr());
    p.port()
        .send(h.agent_id(), h.mad(), &addr, h.timeout_ms(), h.retries())
        .map(|()| buf.len())
        .map_err(|e| failed(&e))
}

/// `read(portid, buf)` without waiting: one message (header + MAD), `EAGAIN` when none is
/// queued, `ENOSPC` with the needed length in the header when the MAD does not fit (it stays
/// queued), as the kernel reads.
pub(crate) fn read(portid: c_int, buf: &mut [u8]) -> io::Result<usize> {
    match on_sim_port(portid, |p| sim_read(p, &mut *buf)) {
        Some(r) => r,
        None => umad::raw::read(portid, buf),
    }
}

fn sim_read(p: &SimPort, buf: &mut [u8]) -> io::Result<usize> {
    let layout = header_layout();
    let h = layout.header_len();
    let Some(capacity) = buf.len().checked_sub(h) else {
        return Err(fail(libc::EINVAL));
    };
    // Through the port, never around it: its poll may already have taken the MAD off the
    // transport into the port's own queue.
    match p.port().recv_fit(Some(Duration::ZERO), capacity) {
        Ok(Some(r)) => {
            // The kernel hands over a zeroed header with what it knows filled in.
            buf[..h].fill(0);
            let Ok(mut v) = UserMadHeader::new_checked(&mut buf[..], layout) else {
                return Err(fail(libc::EINVAL));
            };
            v.set_agent_id(r.agent);
            v.set_status(r.status);
            v.set_length((h + r.mad.len()) as u32);
            r.addr.emit(&mut v.addr_mut());
            // recv_fit keeps longer MADs queued; bound the copy all the same.
            let n = r.mad.len().min(capacity);
            v.mad_mut()[..n].copy_from_slice(&r.mad[..n]);
            Ok(h + n)
        }
        Ok(None) => Err(fail(libc::EAGAIN)),
        // The kernel's read: a buffer without room for one whole MAD (or the first segment)
        // is EINVAL, nothing copied; only a longer RMPP message gets the ENOSPC re-read.
        Err(Error::TooLong { needed, .. }) if capacity < needed.min(ibmad::MAD_SIZE) => {
            Err(fail(libc::EINVAL))
        }
        Err(Error::TooLong { needed, .. }) => {
            // What the kernel leaves for umad_recv's re-read contract: the length needed.
            if let Ok(mut v) = UserMadHeader::new_checked(&mut buf[..], layout) {
                v.set_length((h + needed) as u32);
            }
            Err(fail(libc::ENOSPC))
        }
        Err(e) => Err(failed(&e)),
    }
}

/// libibumad's `dev_poll`: 0 when `poll` reports exactly one ready descriptor (any event, so
/// an invalid fd ≥ 0 counts as ready), `-ETIMEDOUT` when it times out, `-EIO` otherwise
/// (`errno` from poll). A simulated port waits in slices with a cancellation point between
/// them (see [`crate::sim`]).
pub(crate) fn poll(portid: c_int, timeout_ms: c_int) -> c_int {
    if sim::port(portid).is_none() {
        return match umad::raw::poll_once(portid, libc::POLLIN, timeout_ms) {
            Ok((1, _)) => 0,
            Ok((0, _)) => -libc::ETIMEDOUT,
            _ => -libc::EIO,
        };
    }
    // Only plain values live in this frame: a cancelled thread unwinds from the
    // cancellation point below without destructors to run.
    let deadline = u64::try_from(timeout_ms)
        .ok()
        .map(|ms| Instant::now() + Duration::from_millis(ms));
    loop {
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        let slice = left.map_or(sim::SLICE, |l| l.min(sim::SLICE));
        match sim_op(|| Ok(poll_slice(portid, slice))).unwrap_or(Slice::Failed(libc::EIO)) {
            Slice::Ready => return 0,
            Slice::Failed(code) => {
                set_errno(code);
                return -libc::EIO;
            }
            Slice::Idle if left.is_some_and(|l| l <= slice) => return -libc::ETIMEDOUT,
            Slice::Idle => {}
        }
        sim::cancellation_point();
    }
}

/// The outcome of one slice of a simulated wait.
#[derive(Clone, Copy)]
enum Slice {
    /// A MAD can be received (or the port is gone, which `poll` also reports as an event).
    Ready,
    /// Nothing yet.
    Idle,
    /// The port failed (`errno`).
    Failed(c_int),
}

fn poll_slice(portid: c_int, slice: Duration) -> Slice {
    let Some(p) = sim::port(portid) else {
        // Closed meanwhile: poll reports POLLNVAL, the read then says EBADF.
        return Slice::Ready;
    };
    match p.port().poll(Some(slice)) {
        Ok(true) => Slice::Ready,
        Ok(false) => Slice::Idle,
        Err(e) => Slice::Failed(e.errno()),
    }
}

/// `ioctl(IB_USER_MAD_REGISTER_AGENT)` with `reg`'s fields: the new agent id.
pub(crate) fn register_agent(portid: c_int, reg: &AgentRegistration) -> io::Result<u32> {
    on_sim_port(portid, |p| {
        p.register(&AgentSpec::from(reg)).map_err(|e| failed(&e))
    })
    .unwrap_or_else(|| {
        let mut req = reg.req();
        umad::raw::register_agent(portid, &mut req).map(|()| req.id)
    })
}

/// Registration the way `umad_register2` does it ([`abi::register_agent`]: `REGISTER_AGENT2`,
/// falling back to `REGISTER_AGENT`). A simulated port takes the flags as a current kernel
/// does.
pub(crate) fn register_agent2(
    portid: c_int,
    reg: &AgentRegistration,
) -> Result<(u32, RegisterIoctl), RegisterFailure> {
    let simulated = on_sim_port(portid, |p| {
        p.register(&AgentSpec::from(reg)).map_err(|e| failed(&e))
    });
    match simulated {
        Some(r) => r
            .map(|id| (id, RegisterIoctl::Agent2))
            .map_err(|error| RegisterFailure {
                error,
                fallback: Fallback::None,
                flags: reg.flags,
            }),
        None => abi::register_agent(
            reg,
            |req2| umad::raw::register_agent2(portid, req2),
            |req| umad::raw::register_agent(portid, req),
        ),
    }
}

/// `ioctl(IB_USER_MAD_UNREGISTER_AGENT, &agent)`.
pub(crate) fn unregister_agent(portid: c_int, agent: u32) -> io::Result<()> {
    on_sim_port(portid, |p| p.unregister(agent).map_err(|e| failed(&e)))
        .unwrap_or_else(|| umad::raw::unregister_agent(portid, agent))
}
