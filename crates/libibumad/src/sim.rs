//! The drop-in over the user-space MAD layer: with `UMAD_IBSIM=<ibsim socket>` (and optionally
//! `UMAD_IBSIM_NODE=<node>`) in the environment, ports are native ibsim connections
//! ([`umad::Port::open_ibsim`]) instead of `/dev/infiniband/umadN` — no LD_PRELOAD.
//!
//! * **Port ids.** An opened port is kept in a process-wide table under its
//!   [`as_raw_fd`](std::os::unix::io::AsRawFd::as_raw_fd), which is the port id handed to C: so
//!   `umad_get_fd(portid)` is a descriptor that polls readable when MADs arrive, and port ids
//!   never collide with other descriptors of the process.
//! * **Enumeration.** The simulated CA is [`umad::Port::ca`] of a connection of this process
//!   (an open port's, else one kept for the purpose and handed to the next open), read afresh
//!   on every call; see `devices.rs` for how it is presented (one CA `ibsim0`, one port,
//!   `umad0`, as umad2sim's fake sysfs shows it).
//! * **IsSM.** ibsim hands unsolicited QP0/QP1 requests (SA queries, SMInfo, traps) only to the
//!   port's SM client. A port holds [`umad::Port::issm`] exactly while at least one of its
//!   agents was registered to receive requests (a non-empty method mask): a subnet manager
//!   (opensm) gets its SA queries, a client never becomes the SM. opensm's own
//!   `open(umad_get_issm_path(…))` gets [`ISSM_PATH`], which opens and means nothing.
//! * **Exit.** ibsim frees a client slot only when the client says goodbye, so every
//!   connection still open is closed by an `atexit` handler.
//! * **Thread cancellation.** opensm stops its receiver thread with `pthread_cancel` while it
//!   waits in `umad_recv`. Everything here runs with cancellation disabled
//!   ([`no_cancel`]); waits are cut into slices ([`SLICE`]) with a cancellation point between
//!   them, where no Rust value is alive, so a cancelled thread never leaves a port or a lock
//!   behind.

use core::ffi::c_int;
use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::io::AsRawFd;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use umad::device::Ca;
use umad::{AgentId, AgentSpec, IbsimOptions, Issm, Port};

use crate::global::trace;

/// What `umad_get_issm_path` hands out under `UMAD_IBSIM`: a path whose `open` succeeds (opensm
/// keeps it open as the kernel's `issmN`), but that controls nothing — IsSM follows the
/// request-receiving agents (module docs).
pub(crate) const ISSM_PATH: &str = "/dev/null";

/// The `umadN` number of the simulated port, as umad2sim's fake sysfs numbers it.
pub(crate) const UMAD_ID: u32 = 0;

/// The longest a simulated wait runs without a cancellation point.
pub(crate) const SLICE: Duration = Duration::from_millis(50);

/// The ibsim to use, from the environment (read once per process); `None`: the kernel.
pub(crate) fn options() -> Option<&'static IbsimOptions> {
    static OPTIONS: OnceLock<Option<IbsimOptions>> = OnceLock::new();
    OPTIONS.get_or_init(IbsimOptions::from_env).as_ref()
}

/// Whether the drop-in runs over ibsim (`UMAD_IBSIM` set).
pub(crate) fn enabled() -> bool {
    options().is_some()
}

/// One simulated port: the connection and its request-receiving agents.
pub(crate) struct SimPort {
    /// Declared first so that IsSM is cleared before the connection goes.
    servers: Mutex<Servers>,
    port: Port,
}

#[derive(Default)]
struct Servers {
    agents: BTreeSet<AgentId>,
    issm: Option<Issm>,
}

impl SimPort {
    /// The port.
    pub(crate) fn port(&self) -> &Port {
        &self.port
    }

    fn servers(&self) -> MutexGuard<'_, Servers> {
        self.servers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers an agent; one that receives requests makes (keeps) the port the SM port.
    pub(crate) fn register(&self, spec: &AgentSpec) -> umad::Result<AgentId> {
        let id = self.port.register(spec)?;
        if !spec.methods.is_empty() {
            let mut s = self.servers();
            s.agents.insert(id);
            if s.issm.is_none() {
                match self.port.issm() {
                    Ok(guard) => s.issm = Some(guard),
                    // Registration itself worked; the agent just won't see requests.
                    Err(e) => trace!("umad_register", "cannot become the SM port: {}", e),
                }
            }
        }
        Ok(id)
    }

    /// Unregisters an agent; the last request-receiving agent gone, IsSM is cleared.
    pub(crate) fn unregister(&self, agent: AgentId) -> umad::Result<()> {
        self.port.unregister(agent)?;
        let mut s = self.servers();
        if s.agents.remove(&agent) && s.agents.is_empty() {
            s.issm = None;
        }
        Ok(())
    }
}

/// The connections of this process.
struct Session {
    pid: u32,
    ports: BTreeMap<c_int, Arc<SimPort>>,
    /// A connection opened for enumeration while no port was open, handed to the next open.
    idle: Option<Arc<SimPort>>,
}

static SESSION: Mutex<Option<Session>> = Mutex::new(None);

fn session() -> MutexGuard<'static, Option<Session>> {
    SESSION.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Closes every connection still open when the process exits (ibsim keeps a client slot
/// until the client disconnects). A forked child leaves its parent's connections alone.
extern "C" fn close_all_at_exit() {
    let taken = session().take();
    if let Some(s) = taken {
        if s.pid == std::process::id() {
            drop(s);
        } else {
            std::mem::forget(s);
        }
    }
}

fn connect(opts: &IbsimOptions) -> umad::Result<Arc<SimPort>> {
    Ok(Arc::new(SimPort {
        servers: Mutex::new(Servers::default()),
        port: Port::open_ibsim(opts)?,
    }))
}

/// The session, created (with its exit handler) on first use.
fn started(guard: &mut Option<Session>) -> &mut Session {
    guard.get_or_insert_with(|| {
        // SAFETY: registers a plain `extern "C" fn()` without arguments, as atexit requires;
        // it only takes the session out of its mutex and drops it.
        unsafe { libc::atexit(close_all_at_exit) };
        Session {
            pid: std::process::id(),
            ports: BTreeMap::new(),
            idle: None,
        }
    })
}

/// Opens a simulated port and returns its port id.
pub(crate) fn open(opts: &IbsimOptions) -> umad::Result<c_int> {
    let mut guard = session();
    let s = started(&mut guard);
    let port = match s.idle.take() {
        Some(p) => p,
        None => connect(opts)?,
    };
    let id = port.port.as_raw_fd();
    s.ports.insert(id, port);
    Ok(id)
}

/// The simulated port `portid`, if it is one (never without `UMAD_IBSIM`: the kernel path
/// takes no lock).
pub(crate) fn port(portid: c_int) -> Option<Arc<SimPort>> {
    if !enabled() {
        return None;
    }
    session().as_ref()?.ports.get(&portid).cloned()
}

/// Closes the simulated port `portid`; `false` if it is not one.
pub(crate) fn close(portid: c_int) -> bool {
    if !enabled() {
        return false;
    }
    let removed = session().as_mut().and_then(|s| s.ports.remove(&portid));
    removed.is_some()
}

/// The simulated CA, read now through a connection of this process (an open port's, else the
/// idle one, opened if need be).
pub(crate) fn ca(opts: &IbsimOptions) -> umad::Result<Ca> {
    let conn = {
        let mut guard = session();
        let s = started(&mut guard);
        let held = s.ports.values().next().or(s.idle.as_ref()).cloned();
        match held {
            Some(p) => p,
            None => {
                let p = connect(opts)?;
                s.idle = Some(p.clone());
                p
            }
        }
    };
    conn.port.ca()
}

extern "C" {
    fn pthread_setcancelstate(state: c_int, oldstate: *mut c_int) -> c_int;
    fn pthread_testcancel();
}

/// glibc's `PTHREAD_CANCEL_DISABLE`.
const PTHREAD_CANCEL_DISABLE: c_int = 1;

/// Runs `f` with the calling thread's cancellation disabled (restored afterwards), so no
/// cancellation point inside — a socket call, a lock — can unwind through Rust frames.
pub(crate) fn no_cancel<T>(f: impl FnOnce() -> T) -> T {
    let mut old: c_int = 0;
    // SAFETY: pthread_setcancelstate only stores the state; `old` is a valid int.
    unsafe { pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &mut old) };
    let r = f();
    let mut ignored: c_int = 0;
    // SAFETY: as above, restoring the caller's state.
    unsafe { pthread_setcancelstate(old, &mut ignored) };
    r
}

/// A cancellation point for the waits between slices. The caller's frame must hold no value
/// with a destructor: a cancelled thread unwinds from here without running any.
pub(crate) fn cancellation_point() {
    // SAFETY: pthread_testcancel has no preconditions; see the caller's obligation above.
    unsafe { pthread_testcancel() };
}
