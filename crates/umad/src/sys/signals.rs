//! Dying of SIGHUP, SIGINT or SIGTERM after a last word, for [`crate::disconnect_on_signals`].
//!
//! The handler only writes the signal's number into a pipe (`write` is async-signal-safe);
//! a thread of ours reads it, runs the cleanup with every lock and allocation it likes, then
//! restores the default disposition and raises the signal again, so the process still ends
//! "killed by signal" (exit status 128 + n in a shell), as before and as C's tools do. A
//! second signal while the cleanup runs kills the process at once. A signal the process
//! ignores (`nohup`, a shell's background job) stays ignored.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Mutex, PoisonError};

use libc::c_int;

use super::{check, errno, set_errno, traced, Fd};

/// The signals handled.
const SIGNALS: [c_int; 3] = [libc::SIGHUP, libc::SIGINT, libc::SIGTERM];

/// The pipe's write end, for the handler (-1 before installation).
static PIPE_WRITE: AtomicI32 = AtomicI32::new(-1);
/// Whether a handled signal has arrived: a second one does not wait for the cleanup.
static FIRED: AtomicBool = AtomicBool::new(false);
/// Whether the handlers are installed (once per process).
static INSTALLED: Mutex<bool> = Mutex::new(false);

/// Makes SIGHUP, SIGINT and SIGTERM run `cleanup` on a thread of ours before the process dies of the
/// signal. Once per process: later calls return `Ok` and change nothing.
pub fn on_termination(cleanup: fn()) -> io::Result<()> {
    let mut installed = INSTALLED.lock().unwrap_or_else(PoisonError::into_inner);
    if *installed {
        return Ok(());
    }
    let mut fds = [-1 as c_int; 2];
    check(
        "pipe2",
        traced(
            // SAFETY: `fds` is a valid array of two ints for pipe2 to fill.
            || i64::from(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }),
        ),
    )?;
    let (read_end, write_end) = (Fd(fds[0]), Fd(fds[1]));
    // The handler must never block: a full pipe (signals nobody reads yet) drops the byte.
    check(
        "fcntl",
        traced(
            // SAFETY: F_SETFL with an int flag on a descriptor we own.
            || i64::from(unsafe { libc::fcntl(write_end.raw(), libc::F_SETFL, libc::O_NONBLOCK) }),
        ),
    )?;
    std::thread::Builder::new()
        .name("umad-signals".into())
        .spawn(move || wait_and_die(read_end, cleanup))?;
    // From here on the write end belongs to the handler, for the life of the process.
    PIPE_WRITE.store(write_end.into_raw(), Ordering::SeqCst);
    for sig in SIGNALS {
        // SAFETY: an all-zero `sigaction` is a valid value for sigaction to overwrite.
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        check(
            "sigaction",
            traced(
                // SAFETY: a null new action only reads the current one into `old`.
                || i64::from(unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) }),
            ),
        )?;
        if old.sa_sigaction == libc::SIG_IGN {
            continue;
        }
        // SAFETY: as above, a zeroed `sigaction` filled in below.
        let mut new: libc::sigaction = unsafe { std::mem::zeroed() };
        new.sa_sigaction = on_signal as extern "C" fn(c_int) as libc::sighandler_t;
        new.sa_flags = libc::SA_RESTART;
        // SAFETY: `new.sa_mask` is a valid sigset_t to initialise.
        unsafe { libc::sigemptyset(&mut new.sa_mask) };
        for s in SIGNALS {
            // SAFETY: `new.sa_mask` was initialised by sigemptyset; `s` is a valid signal.
            unsafe { libc::sigaddset(&mut new.sa_mask, s) };
        }
        check(
            "sigaction",
            traced(
                // SAFETY: `new` is a complete action whose handler is async-signal-safe.
                || i64::from(unsafe { libc::sigaction(sig, &new, std::ptr::null_mut()) }),
            ),
        )?;
    }
    *installed = true;
    Ok(())
}

/// The handler: the signal's number into the pipe, or, for a second signal, death at once.
extern "C" fn on_signal(sig: c_int) {
    let saved = errno();
    if FIRED.swap(true, Ordering::SeqCst) {
        // The signal is blocked while its handler runs: it is delivered, with the default
        // action, when this returns.
        default_action(sig);
        // SAFETY: raise is async-signal-safe.
        unsafe { libc::raise(sig) };
    } else {
        let byte = sig as u8;
        // SAFETY: a one-byte write from a live local to the pipe (async-signal-safe; a
        // failure cannot be helped here).
        unsafe {
            libc::write(
                PIPE_WRITE.load(Ordering::SeqCst),
                (&byte as *const u8).cast(),
                1,
            )
        };
    }
    set_errno(saved);
}

/// Restores `sig`'s default disposition (async-signal-safe).
fn default_action(sig: c_int) {
    // SAFETY: an all-zero `sigaction` is SIG_DFL with an empty mask and no flags.
    let dfl: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: `dfl` is a complete action; sigaction is async-signal-safe.
    unsafe { libc::sigaction(sig, &dfl, std::ptr::null_mut()) };
}

/// The thread: waits for a signal's number, runs `cleanup`, dies of that signal.
fn wait_and_die(pipe: Fd, cleanup: fn()) {
    let mut byte = 0u8;
    loop {
        // SAFETY: reads one byte into a live local from the pipe this thread owns.
        let n = unsafe { libc::read(pipe.raw(), (&mut byte as *mut u8).cast(), 1) };
        if n == 1 {
            break;
        }
        if n < 0 && errno() == libc::EINTR {
            continue;
        }
        // The pipe failed (it cannot, short of a bug): give the signals back their default
        // action rather than leave them without effect.
        for sig in SIGNALS {
            default_action(sig);
        }
        return;
    }
    let sig = c_int::from(byte);
    // Whatever the cleanup does, the process dies of its signal afterwards.
    let _ = std::panic::catch_unwind(cleanup);
    default_action(sig);
    let mut set = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigemptyset initialises `set`, sigaddset adds a valid signal to it, and
    // pthread_sigmask reads it: the signal must not be blocked in this thread for raise to
    // act here and now.
    unsafe {
        libc::sigemptyset(set.as_mut_ptr());
        libc::sigaddset(set.as_mut_ptr(), sig);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, set.as_ptr(), std::ptr::null_mut());
    }
    // SAFETY: raise has no preconditions; with the default action the process ends here.
    unsafe { libc::raise(sig) };
    // Not reached; should the signal somehow be survived, end as a shell reports it.
    // SAFETY: _exit has no preconditions.
    unsafe { libc::_exit(128 + sig) };
}
