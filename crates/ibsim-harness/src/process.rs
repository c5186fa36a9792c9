//! Small child-process helpers: waiting with a deadline and a polite SIGTERM-then-SIGKILL stop.

use std::io;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

/// Poll interval used while waiting for a child process.
const POLL: Duration = Duration::from_millis(10);

/// Waits up to `timeout` for `child` to exit. `Ok(None)` means it is still running.
pub(crate) fn wait_timeout(child: &mut Child, timeout: Duration) -> io::Result<Option<ExitStatus>> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        std::thread::sleep(POLL);
    }
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
