//! An `eventfd` flag and a two-descriptor `poll`, for the MAD layer's progress thread and
//! for the descriptor that [`Port::as_raw_fd`](crate::Port) hands to event loops.

use std::io;
use std::os::unix::io::RawFd;

use super::{check, traced, Fd};

/// A level-triggered flag backed by an `eventfd`: it polls readable while raised.
#[derive(Debug)]
pub struct EventFlag(Fd);

impl EventFlag {
    /// A lowered flag (non-blocking, close-on-exec).
    pub fn new() -> io::Result<EventFlag> {
        let fd = check(
            "eventfd",
            traced(
                // SAFETY: eventfd takes no pointers; the result is checked before use.
                || i64::from(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) }),
            ),
        )?;
        Ok(EventFlag(Fd(fd as RawFd)))
    }

    /// The descriptor.
    pub fn raw(&self) -> RawFd {
        self.0.raw()
    }

    /// Raises the flag (idempotent apart from the counter, which `lower` clears).
    pub fn raise(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to our own eventfd. The only possible
        // failure, EAGAIN at a saturated counter, leaves the flag raised, which is the goal.
        unsafe { libc::write(self.raw(), (&one as *const u64).cast(), 8) };
    }

    /// Lowers the flag.
    pub fn lower(&self) {
        let mut v: u64 = 0;
        // SAFETY: reads 8 bytes into a live u64 from our own eventfd. EAGAIN means the flag
        // was already lowered.
        unsafe { libc::read(self.raw(), (&mut v as *mut u64).cast(), 8) };
    }
}

/// `poll` for `POLLIN` on two descriptors, retrying `EINTR` with the same timeout (ms, -1 =
/// forever). Returns which of them are readable (an error or hang-up counts as readable: the
/// next read reports it).
pub fn poll_in2(a: RawFd, b: RawFd, timeout_ms: libc::c_int) -> io::Result<(bool, bool)> {
    let mut p = [
        libc::pollfd {
            fd: a,
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: b,
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    loop {
        let polled = check(
            "poll",
            traced(
                // SAFETY: `p` is an array of two initialised pollfds and nfds is 2.
                || i64::from(unsafe { libc::poll(p.as_mut_ptr(), 2, timeout_ms) }),
            ),
        );
        match polled {
            Ok(_) => return Ok((p[0].revents != 0, p[1].revents != 0)),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_polls_readable_while_raised() {
        let f = EventFlag::new().unwrap();
        let g = EventFlag::new().unwrap();
        assert_eq!(poll_in2(f.raw(), g.raw(), 0).unwrap(), (false, false));
        f.raise();
        f.raise();
        assert_eq!(poll_in2(f.raw(), g.raw(), 0).unwrap(), (true, false));
        f.lower();
        assert_eq!(poll_in2(f.raw(), g.raw(), 0).unwrap(), (false, false));
        f.lower();
        g.raise();
        assert_eq!(poll_in2(f.raw(), g.raw(), 10).unwrap(), (false, true));
    }
}
