#![doc = include_str!("../README.md")]

mod cost;
mod opensm;
mod packages;
mod process;
mod tempdir;
mod tools;

use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

pub use cost::{allocations, children_cpu, self_cpu, CountingAlloc};
pub use opensm::{Opensm, SmDaemon, SmOnce};
pub use packages::{
    apt_install_command, debian_packages, install_hint, missing_packages, Need, Package,
};
pub use tempdir::TempDir;
pub use tools::{find_tool, umad2sim_path, UMAD2SIM_ENV};

/// Environment variable naming the ibsim socket base name (read by ibsim and by umad2sim).
pub const SOCKNAME_ENV: &str = "IBSIM_SOCKNAME";
/// If set, [`require_ibsim`] appends the name of every ibsim-backed test that ran to this file.
pub const RAN_FILE_ENV: &str = "UMAD_IBSIM_RAN";
/// If set (and not `0`/`false`), a missing ibsim makes [`require_ibsim`] panic instead of skip.
pub const REQUIRE_ENV: &str = "UMAD_REQUIRE_IBSIM";
/// If set, dropping an [`Ibsim`] keeps its scratch directory (logs) and prints where it is.
pub const KEEP_LOGS_ENV: &str = "KEEP_IBSIM_LOGS";

/// How often readiness and log conditions are polled.
const POLL: Duration = Duration::from_millis(20);
/// Default time ibsim gets to parse the netfile and bind its control socket.
const READY_TIMEOUT: Duration = Duration::from_secs(15);
/// Time a console command gets until its barrier shows up in `ibsim.log`.
const CONSOLE_TIMEOUT: Duration = Duration::from_secs(10);
/// Grace period between SIGTERM and SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(5);

/// Fragments of ibsim console output that mean "this command was rejected".
const CONSOLE_ERRORS: &[&str] = &[
    "unknown - skipped",
    "not found",
    "# can't",
    "# bad ",
    "bad param",
    "is not linked",
    "# no local port",
    "# no remote port",
    "missing",
    "must be in",
];

/// Builder for an [`Ibsim`] instance; see [`Ibsim::builder`].
#[derive(Debug, Clone)]
pub struct IbsimBuilder {
    netfile: PathBuf,
    args: Vec<std::ffi::OsString>,
    console: bool,
    ready_timeout: Duration,
}

impl IbsimBuilder {
    /// Adds one extra ibsim argument (placed before the netfile), e.g. `.arg("-N").arg("4096")`.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    /// Adds several extra ibsim arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Enables the ibsim console (fed through a FIFO), needed for [`Ibsim::console`].
    /// Default: off (`--no-console`).
    pub fn console(mut self, on: bool) -> Self {
        self.console = on;
        self
    }

    /// How long to wait for ibsim's control socket (default 15 s).
    pub fn ready_timeout(mut self, timeout: Duration) -> Self {
        self.ready_timeout = timeout;
        self
    }

    /// Starts ibsim and waits until its control socket is bound.
    ///
    /// # Errors
    /// ibsim or the netfile not found, the scratch directory cannot be created, ibsim exits
    /// during start-up (the error then contains `ibsim.log`, e.g. a netfile parse error), or it
    /// is not ready within the timeout.
    pub fn start(self) -> io::Result<Ibsim> {
        let ibsim = find_tool("ibsim").ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("ibsim is not installed ({})", install_hint()),
            )
        })?;
        let netfile = std::fs::canonicalize(&self.netfile).map_err(|e| {
            io::Error::new(e.kind(), format!("netfile {}: {e}", self.netfile.display()))
        })?;
        // The directory's unique name doubles as the socket name.
        let workdir = TempDir::new("umadrs")?;
        let socket_name = workdir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        self.spawn(&ibsim, &netfile, socket_name, workdir)
    }

    fn spawn(
        &self,
        ibsim: &Path,
        netfile: &Path,
        socket_name: String,
        workdir: TempDir,
    ) -> io::Result<Ibsim> {
        let log_path = workdir.join("ibsim.log");
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)?;
        let mut cmd = Command::new(ibsim);
        cmd.arg("-s");
        let console = if self.console {
            let fifo = make_fifo(&workdir.join("ctl"))?;
            cmd.stdin(Stdio::from(fifo.try_clone()?));
            Some(Mutex::new(fifo))
        } else {
            cmd.arg("--no-console").stdin(Stdio::null());
            None
        };
        cmd.args(&self.args)
            .arg(netfile)
            .current_dir(&workdir)
            .env(SOCKNAME_ENV, &socket_name)
            .env_remove("LD_PRELOAD")
            .stdout(Stdio::from(log.try_clone()?))
            .stderr(Stdio::from(log));
        let child = cmd.spawn()?;
        let sim = Ibsim {
            pid: child.id(),
            child: Mutex::new(child),
            socket_name,
            workdir,
            netfile: netfile.to_owned(),
            console,
            next_id: AtomicU64::new(1),
            sm_daemon: None,
        };
        // On error, dropping `sim` stops ibsim and removes the workdir (or keeps the logs).
        sim.wait_ready(self.ready_timeout)?;
        Ok(sim)
    }
}

/// A private ibsim process (see the [crate docs](crate)).
///
/// `Ibsim` is `Sync`: tests may share `&Ibsim` between threads (console commands are
/// serialised). Mind ibsim's limit of 10 simultaneous client processes per instance.
#[derive(Debug)]
pub struct Ibsim {
    child: Mutex<Child>,
    pid: u32,
    socket_name: String,
    workdir: TempDir,
    netfile: PathBuf,
    /// Our end of the console FIFO (opened read-write, like ibsim's, so nobody sees EOF).
    console: Option<Mutex<File>>,
    /// Source of barrier numbers and scratch directory numbers.
    next_id: AtomicU64,
    sm_daemon: Option<opensm::DaemonProcess>,
}

impl Ibsim {
    /// Starts configuring an instance on `netfile` (console off, no extra arguments).
    pub fn builder(netfile: impl AsRef<Path>) -> IbsimBuilder {
        IbsimBuilder {
            netfile: netfile.as_ref().to_owned(),
            args: Vec::new(),
            console: false,
            ready_timeout: READY_TIMEOUT,
        }
    }

    /// Starts ibsim on `netfile` with default settings (`Ibsim::builder(netfile).start()`).
    ///
    /// # Errors
    /// See [`IbsimBuilder::start`].
    pub fn start(netfile: impl AsRef<Path>) -> io::Result<Ibsim> {
        Self::builder(netfile).start()
    }

    /// The socket base name of this instance (the value of `IBSIM_SOCKNAME` for its clients).
    pub fn socket_name(&self) -> &str {
        &self.socket_name
    }

    /// The private scratch directory (ibsim's cwd; holds `ibsim.log` and the client scratch
    /// directories, among them each opensm run's with its `opensm.log`).
    pub fn workdir(&self) -> &Path {
        &self.workdir
    }

    /// The (canonical) netfile this instance was started on.
    pub fn netfile(&self) -> &Path {
        &self.netfile
    }

    /// The process id of ibsim.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The path of `ibsim.log` (ibsim's stdout and stderr, including console output).
    pub fn log_path(&self) -> PathBuf {
        self.workdir.join("ibsim.log")
    }

    /// ibsim's output so far (lossily decoded; empty if the log cannot be read).
    pub fn log(&self) -> String {
        std::fs::read(self.log_path())
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }

    /// Whether the ibsim process is still running.
    pub fn is_running(&self) -> bool {
        matches!(lock(&self.child).try_wait(), Ok(None))
    }

    /// An opensm run on this instance, to be configured and started (see [`Opensm`]).
    pub fn opensm(&self) -> Opensm<'_> {
        Opensm::new(self)
    }

    /// Runs one opensm sweep (`opensm -o`) attached at the default port (the first port of the
    /// first node in the netfile). Afterwards all connected ports are Active and have LIDs.
    /// Short for `self.opensm().run_once()`, which also returns the run.
    ///
    /// # Errors
    /// See [`Opensm::run_once`].
    pub fn run_sm_once(&self) -> io::Result<()> {
        self.opensm().run_once().map(drop)
    }

    /// Like [`run_sm_once`](Self::run_sm_once) but attaches opensm to `sm_host` (`SIM_HOST`: a
    /// node id such as `"S-sw1"` or a node description).
    ///
    /// # Errors
    /// See [`Opensm::run_once`].
    pub fn run_sm_once_on(&self, sm_host: &str) -> io::Result<()> {
        self.opensm().host(sm_host).run_once().map(drop)
    }

    /// Starts a resident opensm at the default port that this instance keeps (see
    /// [`Opensm::start_daemon`]; use that for a daemon of your own). It is stopped by
    /// [`stop_sm_daemon`](Self::stop_sm_daemon) or on drop, before ibsim.
    ///
    /// # Errors
    /// A daemon already runs, or see [`Opensm::start_daemon`].
    pub fn start_sm_daemon(&mut self) -> io::Result<()> {
        self.keep_sm_daemon(None)
    }

    /// Like [`start_sm_daemon`](Self::start_sm_daemon) but attaches opensm to `sm_host`
    /// (`SIM_HOST`).
    ///
    /// # Errors
    /// See [`start_sm_daemon`](Self::start_sm_daemon).
    pub fn start_sm_daemon_on(&mut self, sm_host: &str) -> io::Result<()> {
        self.keep_sm_daemon(Some(sm_host))
    }

    fn keep_sm_daemon(&mut self, sm_host: Option<&str>) -> io::Result<()> {
        if self.sm_daemon.is_some() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                "an opensm daemon is already running on this ibsim",
            ));
        }
        let mut sm = self.opensm();
        if let Some(host) = sm_host {
            sm = sm.host(host);
        }
        let daemon = sm.start_daemon()?.detach();
        self.sm_daemon = daemon;
        Ok(())
    }

    /// The pid of the resident opensm, if one was started and not stopped.
    pub fn sm_daemon_pid(&self) -> Option<u32> {
        self.sm_daemon.as_ref().map(opensm::DaemonProcess::pid)
    }

    /// Stops the resident opensm (SIGTERM, SIGKILL after 5 s). No-op without one.
    ///
    /// # Errors
    /// Waiting for the process failed.
    pub fn stop_sm_daemon(&mut self) -> io::Result<()> {
        match self.sm_daemon.take() {
            Some(mut p) => p.stop().map(drop),
            None => Ok(()),
        }
    }

    /// Sends `cmd` to the ibsim console and waits (≤ 10 s) until ibsim has executed it.
    ///
    /// Requires [`IbsimBuilder::console`]. Completion is detected with a barrier: `cmd` is
    /// followed by a `# barrier-<n> end` comment, which ibsim echoes into `ibsim.log` after
    /// running `cmd`. Useful commands: `Unlink "node"[port]`, `ReLink "node"[port]`,
    /// `Error "node"[port] <rate> [attr]`, `PerformanceSet "node"[port] Attr.Field=value`,
    /// `Baselid "node"[port] <lid>` (see the ibsim docs / `Help`).
    ///
    /// # Errors
    /// No console, `cmd` contains a newline, ibsim died, the barrier timed out, or ibsim
    /// rejected the command (unknown command, unknown node, bad port, ...: the error holds
    /// ibsim's message). Use [`console_output`](Self::console_output) for queries such as `Dump`.
    pub fn console(&self, cmd: &str) -> io::Result<()> {
        let out = self.console_output(cmd)?;
        match CONSOLE_ERRORS.iter().find(|e| out.contains(*e)) {
            Some(_) => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("ibsim rejected console command {cmd:?}: {}", out.trim()),
            )),
            None => Ok(()),
        }
    }

    /// Like [`console`](Self::console) but returns what ibsim printed for `cmd` (prompts
    /// removed) and does not interpret it.
    ///
    /// # Errors
    /// No console, `cmd` contains a newline, ibsim died, or the barrier timed out.
    pub fn console_output(&self, cmd: &str) -> io::Result<String> {
        let fifo = self.console.as_ref().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::Unsupported,
                "ibsim was started without a console (use Ibsim::builder(..).console(true))",
            )
        })?;
        if cmd.contains(['\n', '\r']) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "console command must be a single line",
            ));
        }
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        let marker = format!("# barrier-{n} end");
        // Hold the FIFO lock until our barrier shows up, so outputs of concurrent callers do
        // not interleave.
        let mut fifo = lock(fifo);
        let start = std::fs::metadata(self.log_path()).map_or(0, |m| m.len());
        fifo.write_all(format!("{cmd}\n{marker}\n").as_bytes())?;
        fifo.flush()?;
        let deadline = Instant::now() + CONSOLE_TIMEOUT;
        loop {
            let log = std::fs::read(self.log_path())?;
            let new = usize::try_from(start)
                .ok()
                .and_then(|s| log.get(s..))
                .unwrap_or_default();
            let new = String::from_utf8_lossy(new);
            if let Some(pos) = new.find(&marker) {
                let out = new[..pos].replace("sim> ", "");
                return Ok(out.trim().to_owned());
            }
            if !self.is_running() {
                return Err(io::Error::other(format!(
                    "ibsim exited while running console command {cmd:?}\n--- ibsim.log (tail) ---\n{}",
                    tail(&self.log(), 20)
                )));
            }
            if Instant::now() >= deadline {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("ibsim console command {cmd:?}: no barrier within {CONSOLE_TIMEOUT:?}"),
                ));
            }
            std::thread::sleep(POLL);
        }
    }

    /// A [`Command`] that runs `program` as a client of this instance under the umad2sim shim:
    /// `LD_PRELOAD=<libumad2sim.so>`, `IBSIM_SOCKNAME=<socket name>`, stdin `/dev/null`, and
    /// cwd = a fresh private scratch directory inside [`workdir`](Self::workdir) (umad2sim
    /// writes its fake sysfs `./sys-<pid>` there; the whole workdir is removed on drop).
    ///
    /// A bare program name is looked up with [`find_tool`] (so `"ibstat"` works without
    /// `/usr/sbin` on `$PATH`). Set `SIM_HOST` on the command to attach elsewhere. Always
    /// bound the run time (e.g. [`run_with_timeout`]): a client whose ibsim is gone retries
    /// forever. If the scratch directory cannot be created, spawning the command fails.
    pub fn umad2sim_command(&self, program: impl AsRef<OsStr>) -> Command {
        match self.try_umad2sim_command(program.as_ref()) {
            Ok((cmd, _)) => cmd,
            Err(_) => {
                // Keep the signature infallible: point the cwd at a path that does not exist
                // so that spawn() reports the problem.
                let mut cmd = Command::new(program);
                cmd.current_dir(self.workdir.join("scratch-dir-creation-failed"));
                cmd
            }
        }
    }

    fn try_umad2sim_command(&self, program: &OsStr) -> io::Result<(Command, PathBuf)> {
        let shim = umad2sim_path().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("libumad2sim.so not found ({})", install_hint()),
            )
        })?;
        let scratch = self.new_scratch_dir("client")?;
        let program = if Path::new(program).components().count() == 1 {
            find_tool(program).map_or_else(|| program.to_owned(), PathBuf::into_os_string)
        } else {
            program.to_owned()
        };
        let mut cmd = Command::new(program);
        cmd.current_dir(&scratch)
            .env("LD_PRELOAD", shim)
            .env(SOCKNAME_ENV, &self.socket_name)
            .stdin(Stdio::null());
        Ok((cmd, scratch))
    }

    /// Creates a new, empty directory `<workdir>/<prefix>-<n>` and returns its path.
    ///
    /// # Errors
    /// The directory cannot be created.
    pub fn new_scratch_dir(&self, prefix: &str) -> io::Result<PathBuf> {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        let dir = self.workdir.join(format!("{prefix}-{n}"));
        std::fs::create_dir(&dir)?;
        Ok(dir)
    }

    fn wait_ready(&self, timeout: Duration) -> io::Result<()> {
        let needle = format!("@{}:ctl@", self.socket_name);
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = lock(&self.child).try_wait()? {
                return Err(io::Error::other(format!(
                    "ibsim exited during start-up ({status}) on {}\n--- ibsim.log ---\n{}",
                    self.netfile.display(),
                    self.log().trim_end()
                )));
            }
            if read_lossy(Path::new("/proc/net/unix")).contains(&needle) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "ibsim not ready within {timeout:?} on {}\n--- ibsim.log ---\n{}",
                        self.netfile.display(),
                        self.log().trim_end()
                    ),
                ));
            }
            std::thread::sleep(POLL);
        }
    }
}

impl Drop for Ibsim {
    fn drop(&mut self) {
        // Clients first: a umad2sim client that outlives ibsim can hang in its exit path.
        if let Err(e) = self.stop_sm_daemon() {
            eprintln!("ibsim-harness: stopping opensm: {e}");
        }
        let child = self.child.get_mut().unwrap_or_else(PoisonError::into_inner);
        if let Err(e) = process::terminate(child, TERM_GRACE) {
            eprintln!("ibsim-harness: stopping ibsim (pid {}): {e}", self.pid);
        }
        // The workdir itself is removed when the `workdir` field is dropped, after this.
        if keep_logs() {
            self.workdir.keep();
            eprintln!(
                "ibsim-harness: kept ibsim logs in {} ({KEEP_LOGS_ENV} is set)",
                self.workdir.display()
            );
        } else if std::thread::panicking() {
            eprintln!(
                "ibsim-harness: test failed; ibsim.log (tail) of {} (set {KEEP_LOGS_ENV}=1 to keep it):\n{}",
                self.workdir.display(),
                tail(&self.log(), 30)
            );
        }
    }
}

/// Runs `cmd` with piped stdout/stderr and a time limit. On timeout the process gets SIGTERM
/// (SIGKILL after 5 s) and an error of kind [`io::ErrorKind::TimedOut`] carrying the partial
/// output is returned.
///
/// # Errors
/// Spawning failed or the time limit was hit.
pub fn run_with_timeout(cmd: &mut Command, timeout: Duration) -> io::Result<Output> {
    use std::io::Read;
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    let (tx, rx) = std::sync::mpsc::channel();
    for (i, pipe) in [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .enumerate()
    {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            let _ = tx.send((i, buf));
        });
    }
    drop(tx);
    let status = process::wait_timeout(&mut child, timeout)?;
    let timed_out = status.is_none();
    let status = match status {
        Some(s) => s,
        None => process::terminate(&mut child, TERM_GRACE)?,
    };
    // A grandchild may keep a pipe open after a timeout: do not wait for it forever then.
    let mut outputs = [Vec::new(), Vec::new()];
    for _ in 0..2 {
        let received = if timed_out {
            rx.recv_timeout(Duration::from_secs(2)).ok()
        } else {
            rx.recv().ok()
        };
        match received {
            Some((i, buf)) => outputs[i] = buf,
            None => break,
        }
    }
    let [stdout, stderr] = outputs;
    if timed_out {
        return Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "{:?} did not finish within {timeout:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
                cmd.get_program(),
                String::from_utf8_lossy(&stdout),
                String::from_utf8_lossy(&stderr)
            ),
        ));
    }
    Ok(Output {
        status,
        stdout,
        stderr,
    })
}

/// Runs `cmd` with the stdio it was given (e.g. stdout to `/dev/null`, so that reading the
/// output does not take part in a timing) and a time limit; returns as soon as it exits. On
/// timeout the process gets SIGTERM (SIGKILL after 5 s) and an error of kind
/// [`io::ErrorKind::TimedOut`] is returned.
///
/// # Errors
/// Spawning or waiting failed, or the time limit was hit.
pub fn status_with_timeout(cmd: &mut Command, timeout: Duration) -> io::Result<ExitStatus> {
    let mut child = cmd.spawn()?;
    match process::wait_timeout(&mut child, timeout)? {
        Some(status) => Ok(status),
        None => {
            let status = process::terminate(&mut child, TERM_GRACE)?;
            Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "{:?} did not finish within {timeout:?} (stopped: {status})",
                    cmd.get_program()
                ),
            ))
        }
    }
}

/// Whether the ibsim test stack is installed: the `ibsim` binary, `libumad2sim.so` and
/// `opensm` (which every harness-based test that needs LIDs uses).
pub fn ibsim_available() -> bool {
    missing_components().is_empty()
}

fn missing_components() -> Vec<&'static str> {
    let mut missing = Vec::new();
    if find_tool("ibsim").is_none() {
        missing.push("ibsim");
    }
    if umad2sim_path().is_none() {
        missing.push("libumad2sim.so");
    }
    if find_tool("opensm").is_none() {
        missing.push("opensm");
    }
    missing
}

/// Gate for ibsim-backed tests: call first thing and `return` when it is `false`.
///
/// * ibsim available → records `test` (a line appended to the file named by `UMAD_IBSIM_RAN`,
///   if set, so CI can prove ibsim tests ran) and returns `true`;
/// * missing and [`ibsim_required`] (`CI=true`/`1` or `UMAD_REQUIRE_IBSIM` set) → panics with
///   the install command;
/// * missing otherwise → prints a loud `SKIPPED <test>` line to stderr and returns `false`.
///
/// # Panics
/// When ibsim is required (see above) but not installed.
pub fn require_ibsim(test: &str) -> bool {
    let required = ibsim_required();
    let available = gate(test, &missing_components(), required);
    if available {
        if let Some(path) = std::env::var_os(RAN_FILE_ENV).filter(|p| !p.is_empty()) {
            if let Err(e) = record_ran(Path::new(&path), test) {
                eprintln!(
                    "ibsim-harness: cannot record {test} in {}: {e}",
                    Path::new(&path).display()
                );
            }
        }
    }
    available
}

/// Whether the environment demands that ibsim-backed tests run: `CI` or `UMAD_REQUIRE_IBSIM`
/// set to anything but empty, `0`, `false` or `no`.
pub fn ibsim_required() -> bool {
    env_flag("CI") || env_flag(REQUIRE_ENV)
}

/// The decision of [`require_ibsim`], without the environment.
fn gate(test: &str, missing: &[&str], required: bool) -> bool {
    if missing.is_empty() {
        return true;
    }
    let hint = install_hint();
    assert!(
        !required,
        "ibsim is required (CI=true) but not installed: {hint} (test {test}; missing: {})",
        missing.join(", ")
    );
    eprintln!(
        "SKIPPED {test}: ibsim not installed (missing: {}); install with `{hint}` \
         (set CI=true or {REQUIRE_ENV}=1 to make this a failure)",
        missing.join(", ")
    );
    false
}

/// Appends `test` as one line to `path` (one `write` call on an `O_APPEND` file, so parallel
/// test processes do not interleave): the ran-files of `cargo xtask test` and of the
/// real-kernel guest.
///
/// # Errors
/// The file cannot be opened or written.
pub fn record_ran(path: &Path, test: &str) -> io::Result<()> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?
        .write_all(format!("{test}\n").as_bytes())
}

/// `true` for an env var set to anything but empty, `0`, `false` or `no` (case-insensitive).
fn env_flag(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| flag_value(&v.to_string_lossy()))
}

fn flag_value(v: &str) -> bool {
    let v = v.trim();
    !(v.is_empty() || v == "0" || v.eq_ignore_ascii_case("false") || v.eq_ignore_ascii_case("no"))
}

fn keep_logs() -> bool {
    std::env::var_os(KEEP_LOGS_ENV).is_some()
}

/// `<workspace root>/fabrics`: the example netfiles.
pub fn fabrics_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .unwrap_or_else(|| Path::new("."))
        .join("fabrics")
}

/// `<workspace root>/fabrics/example.net`, the small fabric described in [`example_net`].
pub fn example_fabric() -> PathBuf {
    fabrics_dir().join("example.net")
}

/// The node ids of the switches a netfile declares (`Switch <ports> "<id>"` lines), in file
/// order: the names ibsim's console commands take (`Error "<id>" 5`).
///
/// # Errors
/// The netfile cannot be read.
pub fn netfile_switches(netfile: impl AsRef<Path>) -> io::Result<Vec<String>> {
    let text = std::fs::read_to_string(netfile.as_ref())?;
    Ok(switch_ids(&text))
}

fn switch_ids(netfile: &str) -> Vec<String> {
    netfile
        .lines()
        .filter_map(|l| l.strip_prefix("Switch"))
        .filter_map(|rest| rest.split_once('"')?.1.split_once('"'))
        .map(|(id, _)| id.to_owned())
        .collect()
}

/// Facts about `fabrics/example.net` (checked by the harness tests), for tests that use it.
///
/// ```text
///   H-host1[1] -- [1]S-sw1[8] == [8]S-sw2[1] -- [1]H-host3
///   H-host2[1] -- [2]S-sw1       S-sw2[2]    -- [1]H-host4
///   H-host2[2]    not connected (dead port)
/// ```
pub mod example_net {
    /// The default attach point (first port of the first node): `H-host1` port 1.
    pub const ATTACH_NODE: &str = "H-host1";
    /// Node ids of the HCAs, in file order.
    pub const HCAS: [&str; 4] = ["H-host1", "H-host2", "H-host3", "H-host4"];
    /// Node ids of the switches, in file order.
    pub const SWITCHES: [&str; 2] = ["S-sw1", "S-sw2"];
    /// The HCA with two ports whose port 2 is not connected.
    pub const DEAD_PORT_NODE: &str = "H-host2";
    /// The unconnected port number of [`DEAD_PORT_NODE`] (state Down, phys state Polling).
    pub const DEAD_PORT: u8 = 2;
    /// Directed-route exit ports from the attach point to `S-sw1` (1 hop).
    pub const DR_SW1: &[u8] = &[1];
    /// Directed-route exit ports from the attach point to `S-sw2` (2 hops).
    pub const DR_SW2: &[u8] = &[1, 8];
    /// Directed-route exit ports from the attach point to `H-host3` (3 hops).
    pub const DR_HOST3: &[u8] = &[1, 8, 1];
    /// Directed-route exit ports from the attach point to `H-host2` (2 hops).
    pub const DR_HOST2: &[u8] = &[1, 2];
    /// Directed-route exit ports from the attach point to `H-host4` (3 hops).
    pub const DR_HOST4: &[u8] = &[1, 8, 2];
    /// A directed route that leads nowhere: `S-sw1` port 3 is not connected.
    pub const DR_DEAD_END: &[u8] = &[1, 3];
    /// Node GUID of `H-host1` (ibsim's default CA GUID base); its port GUID is this + 1.
    pub const HOST1_NODE_GUID: u64 = 0x10_0000;
    /// Node GUID of `H-host3`; its port GUID is this + 1.
    pub const HOST3_NODE_GUID: u64 = 0x10_0005;
    /// Node GUID of `S-sw1` (ibsim's default switch GUID base).
    pub const SW1_NODE_GUID: u64 = 0x20_0000;
    /// Node GUID of `S-sw2`.
    pub const SW2_NODE_GUID: u64 = 0x20_0001;
}

/// Creates a FIFO at `path` and opens it read-write (never blocks, never sees EOF).
fn make_fifo(path: &Path) -> io::Result<File> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in FIFO path"))?;
    // SAFETY: `c_path` is a valid NUL-terminated string that outlives the call.
    if unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // O_RDWR on a FIFO does not wait for a peer on Linux; std adds O_CLOEXEC.
    OpenOptions::new().read(true).write(true).open(path)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn read_lossy(path: &Path) -> String {
    std::fs::read(path)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

/// The last `n` lines of `text` (for error messages quoting a log).
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_values() {
        for v in ["1", "true", "TRUE", "yes", "on"] {
            assert!(flag_value(v), "{v}");
        }
        for v in ["", "0", "false", "False", "no", " "] {
            assert!(!flag_value(v), "{v:?}");
        }
    }

    #[test]
    fn gate_decisions() {
        assert!(gate("t", &[], true));
        assert!(gate("t", &[], false));
        assert!(!gate("t", &["ibsim"], false));
    }

    #[test]
    #[should_panic(
        expected = "ibsim is required (CI=true) but not installed: apt-get install -y ibsim-utils opensm infiniband-diags"
    )]
    fn gate_panics_when_required() {
        gate("t", &["ibsim", "opensm"], true);
    }

    #[test]
    fn record_ran_appends_lines() {
        let dir = TempDir::new("umadrs-harness-test").unwrap();
        let path = dir.join("ran.txt");
        record_ran(&path, "a::one").unwrap();
        record_ran(&path, "b::two").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a::one\nb::two\n");
    }

    #[test]
    fn tail_lines() {
        assert_eq!(tail("a\nb\nc\n", 2), "b\nc");
        assert_eq!(tail("a", 5), "a");
        assert_eq!(tail("", 5), "");
    }

    #[test]
    fn switch_ids_of_netfiles() {
        let net = "Hca\t1 \"H-host1\"\t\t# \"host1 HCA-1\"\n[1]\t\"S-sw1\"[1]\n\n\
                   Switch\t8 \"S-sw1\"\t\t# \"sw1\" enhanced port 0 lid 0 lmc 0\n\
                   Switch 36 \"S-leaf01\"\n";
        assert_eq!(switch_ids(net), ["S-sw1", "S-leaf01"]);
        assert_eq!(
            netfile_switches(example_fabric()).unwrap(),
            example_net::SWITCHES
        );
    }

    #[test]
    fn fabrics_dir_is_in_workspace() {
        assert!(fabrics_dir().ends_with("fabrics"));
        assert!(example_fabric().is_file(), "{}", example_fabric().display());
    }

    #[test]
    fn run_with_timeout_captures_and_times_out() {
        let out = run_with_timeout(
            Command::new("sh").args(["-c", "echo out; echo err >&2"]),
            Duration::from_secs(10),
        )
        .unwrap();
        assert!(out.status.success());
        assert_eq!(out.stdout, b"out\n");
        assert_eq!(out.stderr, b"err\n");
        let t0 = Instant::now();
        let err = run_with_timeout(
            Command::new("sh").args(["-c", "echo started; exec sleep 30"]),
            Duration::from_millis(200),
        )
        .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(err.to_string().contains("started"), "{err}");
        assert!(t0.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn status_with_timeout_keeps_stdio_and_times_out() {
        let status = status_with_timeout(
            Command::new("sh")
                .args(["-c", "echo discarded; exit 4"])
                .stdout(Stdio::null()),
            Duration::from_secs(10),
        )
        .unwrap();
        assert_eq!(status.code(), Some(4));
        let err = status_with_timeout(Command::new("sleep").arg("30"), Duration::from_millis(50))
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
    }

    #[test]
    fn missing_netfile_is_not_found() {
        if find_tool("ibsim").is_none() {
            return;
        }
        let err = Ibsim::start("/nonexistent/umadrs.net").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound, "{err}");
    }
}
