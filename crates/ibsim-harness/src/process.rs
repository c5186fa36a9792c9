//! Small child-process helpers: waiting with a deadline and a polite SIGTERM-then-SIGKILL stop.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

/// Poll interval used while waiting for a child process when no pidfd is available.
const POLL: Duration = Duration::from_millis(10);

/// Waits up to `timeout` for `child` to exit. `Ok(None)` means it is still running.
///
/// Wakes up as soon as the child exits (it waits on a pidfd, so timings taken around it are
/// not rounded up to a poll interval); on kernels without `pidfd_open` (before 5.3) it polls
/// every 10 ms instead.
pub(crate) fn wait_timeout(child: &mut Child, timeout: Duration) -> io::Result<Option<ExitStatus>> {
    let deadline = Instant::now() + timeout;
    let pidfd = pidfd_open(child).ok();
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(None);
        }
        match &pidfd {
            Some(fd) => wait_readable(fd, deadline - now)?,
            None => std::thread::sleep(POLL.min(deadline - now)),
        }
    }
}

/// A pidfd of a child that has not been reaped yet: readable once it has exited.
fn pidfd_open(child: &Child) -> io::Result<OwnedFd> {
    let pid = libc::pid_t::try_from(child.id())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "pid out of range"))?;
    // SAFETY: pidfd_open(2) takes a pid and flags and touches no memory of ours; the pid is
    // our own unreaped child, so it cannot have been recycled.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    let fd = RawFd::try_from(fd).map_err(|_| io::Error::last_os_error())?;
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pidfd_open returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Waits until `fd` is readable or `timeout` has passed (an interrupted wait just returns).
fn wait_readable(fd: &OwnedFd, timeout: Duration) -> io::Result<()> {
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // Round up, so a wait never ends just before the deadline and spins.
    let ms =
        libc::c_int::try_from(timeout.as_nanos().div_ceil(1_000_000)).unwrap_or(libc::c_int::MAX);
    // SAFETY: `pfd` is a valid pollfd that lives for the duration of the call, and the count
    // is 1.
    let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(())
}

/// Sends SIGTERM to a child that has not been reaped yet.
pub(crate) fn sigterm(child: &Child) -> io::Result<()> {
    let pid = libc::pid_t::try_from(child.id())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "pid out of range"))?;
    // SAFETY: kill(2) has no memory-safety preconditions; `pid` is our own unreaped child, so
    // the pid cannot have been recycled for another process.
    let rc = unsafe { libc::kill(pid, libc::SIGTERM) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Stops a child: SIGTERM, wait up to `grace`, then SIGKILL and reap. Returns the exit status.
pub(crate) fn terminate(child: &mut Child, grace: Duration) -> io::Result<ExitStatus> {
    if let Some(status) = child.try_wait()? {
        return Ok(status);
    }
    // ESRCH here would mean it exited between try_wait and kill; the wait below handles it.
    let _ = sigterm(child);
    if let Some(status) = wait_timeout(child, grace)? {
        return Ok(status);
    }
    let _ = child.kill();
    child.wait()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn wait_timeout_sees_the_exit_and_the_timeout() {
        let mut quick = Command::new("sh").args(["-c", "exit 3"]).spawn().unwrap();
        let status = wait_timeout(&mut quick, Duration::from_secs(60)).unwrap();
        assert_eq!(status.and_then(|s| s.code()), Some(3));

        let mut slow = Command::new("sleep").arg("60").spawn().unwrap();
        assert_eq!(
            wait_timeout(&mut slow, Duration::from_millis(20)).unwrap(),
            None
        );
        let status = terminate(&mut slow, Duration::from_secs(5)).unwrap();
        assert!(!status.success());
    }
}
