//! The drop-in over the user-space MAD layer: with `UMAD_IBSIM=<ibsim socket>` (and optionally
//! `UMAD_IBSIM_NODE=<node>`) in the environment, ports are native ibsim connections
//! ([`umad::Port::open_ibsim`]) instead of `/dev/infiniband/umadN` — no LD_PRELOAD; with
//! `UMAD_SIM=<netfile>` (and `UMAD_SIM_NODE`), ports of a fabric simulated in the process
//! ([`umad::Port::open_sim`]) — no daemon either. Below, "ibsim" stands for either.
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
use umad::{AgentId, AgentSpec, Issm, Port, Simulated};

use crate::ffi;
use crate::global::{ibwarn, trace};

/// What `umad_get_issm_path` hands out under `UMAD_IBSIM`: a path whose `open` succeeds (opensm
/// keeps it open as the kernel's `issmN`), but that controls nothing — IsSM follows the
/// request-receiving agents (module docs).
pub(crate) const ISSM_PATH: &str = "/dev/null";

/// The `umadN` number of the simulated port, as umad2sim's fake sysfs numbers it.
pub(crate) const UMAD_ID: u32 = 0;

/// The longest a simulated wait runs without a cancellation point.
pub(crate) const SLICE: Duration = Duration::from_millis(50);

/// The simulator the environment asks for (ibsim, `UMAD_IBSIM`, or one in process,
/// `UMAD_SIM`): its options, or why the variables cannot be used (not UTF-8, both set). A bad
/// value is not taken for "no simulator": the process asked for one, so every connection
/// fails as a failed ibsim connect does.
pub(crate) type SimEnv = Result<Simulated, String>;

/// The ibsim to use, from the environment (read once per process); `None`: the kernel. A
/// value that cannot be used is printed once, as libibumad prints its warnings.
pub(crate) fn options() -> Option<&'static SimEnv> {
    static OPTIONS: OnceLock<Option<SimEnv>> = OnceLock::new();
    OPTIONS
        .get_or_init(|| match Simulated::from_env() {
            Ok(opts) => opts.map(Ok),
            Err(e) => {
                ibwarn("umad_ibsim", format_args!("{e}"));
                Some(Err(match e {
                    // Kept as the reason, to be the same error again at each connect.
                    umad::Error::InvalidArgument(why) => why,
                    other => other.to_string(),
                }))
            }
        })
        .as_ref()
}

/// Whether the drop-in runs over a simulator (`UMAD_IBSIM` or `UMAD_SIM` set).
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

fn connect(env: &SimEnv) -> umad::Result<Arc<SimPort>> {
    // A bad environment fails here, where a connect to ibsim fails, with the same results.
    let opts = env
        .as_ref()
        .map_err(|why| umad::Error::InvalidArgument(why.clone()))?;
    Ok(Arc::new(SimPort {
        servers: Mutex::new(Servers::default()),
        port: Port::open_simulated(opts)?,
    }))
}

/// The session, created (with its exit handler) on first use.
fn started(guard: &mut Option<Session>) -> &mut Session {
    guard.get_or_insert_with(|| {
        // The handler only takes the session out of its mutex and drops it.
        ffi::atexit(close_all_at_exit);
        Session {
            pid: std::process::id(),
            ports: BTreeMap::new(),
            idle: None,
        }
    })
}

/// Opens a simulated port and returns its port id.
pub(crate) fn open(env: &SimEnv) -> umad::Result<c_int> {
    let mut guard = session();
    let s = started(&mut guard);
    let port = match s.idle.take() {
        Some(p) => p,
        None => connect(env)?,
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
pub(crate) fn ca(env: &SimEnv) -> umad::Result<Ca> {
    let conn = {
        let mut guard = session();
        let s = started(&mut guard);
        let held = s.ports.values().next().or(s.idle.as_ref()).cloned();
        match held {
            Some(p) => p,
            None => {
                let p = connect(env)?;
                s.idle = Some(p.clone());
                p
            }
        }
    };
    conn.port.ca()
}

/// glibc's `PTHREAD_CANCEL_DISABLE`.
const PTHREAD_CANCEL_DISABLE: c_int = 1;

/// Runs `f` with the calling thread's cancellation disabled (restored afterwards), so no
/// cancellation point inside — a socket call, a lock — can unwind through Rust frames.
pub(crate) fn no_cancel<T>(f: impl FnOnce() -> T) -> T {
    let old = ffi::set_cancel_state(PTHREAD_CANCEL_DISABLE);
    let r = f();
    ffi::set_cancel_state(old);
    r
}

/// A cancellation point for the waits between slices. The caller's frame must hold no value
/// with a destructor: a cancelled thread unwinds from here without running any.
pub(crate) fn cancellation_point() {
    ffi::testcancel();
}

#[cfg(test)]
#[allow(unsafe_code)] // the tests call the C ABI as C does
mod tests {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    use std::process::Command;

    use crate::types::UMAD_CA_NAME_LEN;

    /// Set in the child process that runs the C entry points under the environment given.
    const CHILD: &str = "LIBIBUMAD_TEST_SIM_ENV_CHILD";
    const TEST: &str = "sim::tests::a_non_utf8_umad_ibsim_fails_as_a_failed_ibsim_connect";

    /// In the child: what `umad_open_port` (twice) and `umad_get_cas_names` answer.
    fn report() -> String {
        // SAFETY: a NULL CA name asks for the default CA.
        let open = unsafe { crate::umad_open_port(std::ptr::null(), 0) };
        let open_errno = crate::ffi::errno();
        let mut names = [[0; UMAD_CA_NAME_LEN]; 4];
        // SAFETY: `names` holds 4 writable `char[20]` entries.
        let cas = unsafe { crate::umad_get_cas_names(names.as_mut_ptr(), 4) };
        // SAFETY: as above.
        let again = unsafe { crate::umad_open_port(std::ptr::null(), 0) };
        format!("open {open} cas {cas} again {again} errno {open_errno}")
    }

    /// This test's binary run for this test alone, with `UMAD_IBSIM=socket` (and
    /// `UMAD_IBSIM_NODE=node`): the child's report and its stderr.
    fn child(socket: &OsStr, node: Option<&OsStr>) -> (String, String) {
        let mut cmd = Command::new(std::env::current_exe().expect("test binary"));
        cmd.args([TEST, "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD, "1")
            .env(umad::carrier::ibsim::ENV_SOCKET, socket)
            .env_remove(umad::carrier::ibsim::ENV_NODE)
            .env_remove("LD_PRELOAD");
        if let Some(n) = node {
            cmd.env(umad::carrier::ibsim::ENV_NODE, n);
        }
        let out = cmd.output().expect("run the child");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "child failed:\n{stdout}\n{stderr}");
        let report = stdout
            .lines()
            .find_map(|l| l.split_once("REPORT ").map(|(_, r)| r))
            .unwrap_or_else(|| panic!("no report from the child:\n{stdout}\n{stderr}"))
            .to_owned();
        (report, stderr)
    }

    /// `UMAD_IBSIM` (or `UMAD_IBSIM_NODE`) that is not UTF-8 was taken for "unset": the
    /// program silently used the kernel's devices. Now it is the simulator asked for and
    /// failing: the C functions answer exactly what they answer when no ibsim is listening
    /// at the socket, and libibumad's `ibwarn:` line says why, once per process.
    #[test]
    fn a_non_utf8_umad_ibsim_fails_as_a_failed_ibsim_connect() {
        if std::env::var_os(CHILD).is_some() {
            println!("REPORT {}", report());
            return;
        }
        let absent = format!("umadrs-no-ibsim-{}", std::process::id());
        let (failed_connect, quiet) = child(OsStr::new(&absent), None);
        assert!(
            failed_connect.starts_with("open -")
                && !failed_connect.starts_with("open -0 ")
                && failed_connect.contains(" again -"),
            "{failed_connect}"
        );
        assert!(!quiet.contains("umad_ibsim"), "{quiet}");

        let bad_socket = OsStr::from_bytes(b"umadrs-\xff-sim");
        let (report, stderr) = child(bad_socket, None);
        // The same return values; errno says why (EINVAL, not ECONNREFUSED).
        let (same, errno) = failed_connect.rsplit_once(" errno ").expect("errno");
        assert_eq!(errno, libc::ECONNREFUSED.to_string(), "{failed_connect}");
        let invalid = format!("{same} errno {}", libc::EINVAL);
        assert_eq!(report, invalid, "{stderr}");
        let warnings: Vec<&str> = stderr
            .lines()
            .filter(|l| l.starts_with("ibwarn: [") && l.contains("] umad_ibsim: "))
            .collect();
        assert_eq!(warnings.len(), 1, "{stderr}");
        assert!(
            warnings[0].contains(
                r#"the environment variable UMAD_IBSIM holds "umadrs-\xFF-sim", which is not UTF-8"#
            ) && warnings[0].contains("unset it to use the kernel's InfiniBand devices"),
            "{}",
            warnings[0]
        );

        let bad_node = OsStr::from_bytes(b"H-\xfehost");
        let (report, stderr) = child(OsStr::new(&absent), Some(bad_node));
        assert_eq!(report, invalid, "{stderr}");
        assert!(
            stderr.contains(r#"UMAD_IBSIM_NODE holds "H-\xFEhost", which is not UTF-8"#),
            "{stderr}"
        );
    }
}
