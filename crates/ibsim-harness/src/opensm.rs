//! The one opensm runner: a sweep (`opensm -o`) or a resident SM (`opensm -d2`), as a
//! umad2sim client of an [`Ibsim`], in a scratch directory of its own.
//!
//! Every run gets a fresh client scratch directory (see [`Ibsim::umad2sim_command`]) that
//! holds its `opensm.log` (`-f`), its stdout and stderr and its `OSM_TMP_DIR`/`OSM_CACHE_DIR`
//! files, so runs on one instance never see each other's files. [`Opensm::configure`] changes
//! the command (e.g. `LD_LIBRARY_PATH` for another `libibumad.so.3`), [`Opensm::args`] adds
//! opensm options and [`Opensm::lmc`] sweeps with LID ranges (`--lmc`).

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use crate::{find_tool, install_hint, process, read_lossy, run_with_timeout, tail, Ibsim};

/// Time limit of one `opensm -o` sweep.
const SM_ONCE_TIMEOUT: Duration = Duration::from_secs(120);
/// Time a resident opensm gets to log `SUBNET UP`.
const SM_DAEMON_TIMEOUT: Duration = Duration::from_secs(60);
/// How often a starting daemon's log is looked at.
const POLL: Duration = Duration::from_millis(20);
/// opensm's log file (`-f`) in its scratch directory.
const LOG_FILE: &str = "opensm.log";
/// A resident opensm's stdout and stderr in its scratch directory.
const OUT_FILE: &str = "opensm.out";

/// One opensm run to be started on an [`Ibsim`]; made by [`Ibsim::opensm`].
///
/// ```no_run
/// # let sim = ibsim_harness::Ibsim::start(ibsim_harness::example_fabric())?;
/// let sweep = sim.opensm().host("S-sw1").run_once()?; // SIM_HOST=S-sw1 opensm -o
/// assert!(sweep.log().contains("SUBNET UP"));
/// sim.opensm().lmc(2).args(["-p", "3"]).run_once()?; // opensm --lmc 2 -p 3 -o: LID ranges
/// let mut sm = sim.opensm().start_daemon()?; // resident SM for SA queries
/// sm.stop()?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct Opensm<'a> {
    sim: &'a Ibsim,
    /// The command and its scratch directory, or the first error of building it.
    command: io::Result<(Command, PathBuf)>,
}

impl<'a> Opensm<'a> {
    /// opensm under umad2sim in a fresh scratch directory, with its log, temp and cache
    /// files there.
    pub(crate) fn new(sim: &'a Ibsim) -> Self {
        let command = find_tool("opensm")
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("opensm is not installed ({})", install_hint()),
                )
            })
            .and_then(|opensm| sim.try_umad2sim_command(opensm.as_os_str()))
            .map(|(mut cmd, scratch)| {
                cmd.env("OSM_TMP_DIR", &scratch)
                    .env("OSM_CACHE_DIR", &scratch)
                    .arg("-f")
                    .arg(scratch.join(LOG_FILE));
                (cmd, scratch)
            });
        Opensm { sim, command }
    }

    /// Attaches opensm to `sm_host` (`SIM_HOST`: a node id such as `"S-sw1"` or a node
    /// description) instead of the default port (the first port of the first node).
    pub fn host(mut self, sm_host: &str) -> Self {
        if let Ok((cmd, _)) = &mut self.command {
            cmd.env("SIM_HOST", sm_host);
        }
        self
    }

    /// Adds opensm command-line arguments (after the harness's own `-f <log>`, before the
    /// `-o`/`-d2` of [`run_once`](Self::run_once)/[`start_daemon`](Self::start_daemon)),
    /// e.g. `["-p", "5"]` for SM priority 5.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        if let Ok((cmd, _)) = &mut self.command {
            cmd.args(args);
        }
        self
    }

    /// Sweeps with LID Mask Control `lmc` (`opensm --lmc <lmc>`): every CA port (and every
    /// switch with an enhanced port 0 only if opensm's `lmc_esp0` is set) gets a range of
    /// 2^`lmc` LIDs whose base is a multiple of 2^`lmc`. opensm accepts 0..=7.
    pub fn lmc(self, lmc: u8) -> Self {
        self.args(["--lmc".to_string(), lmc.to_string()])
    }

    /// Changes the command now (e.g. `LD_LIBRARY_PATH` for another `libibumad.so.3`); its
    /// current directory is the run's scratch directory. An error from `f` is returned by
    /// [`run_once`](Self::run_once) or [`start_daemon`](Self::start_daemon).
    pub fn configure(mut self, f: impl FnOnce(&mut Command) -> io::Result<()>) -> Self {
        if let Ok((cmd, _)) = &mut self.command {
            if let Err(e) = f(cmd) {
                self.command = Err(e);
            }
        }
        self
    }

    /// Runs one sweep, `opensm -o`: afterwards all connected ports are Active and have LIDs.
    ///
    /// # Errors
    /// opensm is not installed, a [`configure`](Self::configure) step failed, opensm exited
    /// non-zero, or it did not finish within 120 s (it is then stopped); the error holds its
    /// output and the tails of its log and of `ibsim.log`.
    pub fn run_once(self) -> io::Result<SmOnce> {
        let (sim, (mut cmd, scratch)) = (self.sim, self.command?);
        cmd.arg("-o");
        let started = Instant::now();
        let output = match run_with_timeout(&mut cmd, SM_ONCE_TIMEOUT) {
            Ok(output) => output,
            Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("opensm -o: {e}{}", diagnostics(sim, &scratch, "")),
                ));
            }
            Err(e) => return Err(e),
        };
        let run = SmOnce {
            output,
            scratch,
            elapsed: started.elapsed(),
        };
        if run.output.status.success() {
            Ok(run)
        } else {
            Err(io::Error::other(format!(
                "opensm -o failed ({}){}",
                run.output.status,
                diagnostics(sim, &run.scratch, &run.output_text())
            )))
        }
    }

    /// Starts a resident opensm (`-d2`: the log is flushed after every message, otherwise
    /// `SUBNET UP` would stay in a buffer) and waits until it logs `SUBNET UP`. Needed for SA
    /// queries and SM-forwarded MADs. Stopped by [`SmDaemon::stop`] or on drop, so always
    /// before the [`Ibsim`] it borrows.
    ///
    /// # Errors
    /// opensm is not installed, a [`configure`](Self::configure) step failed, it exited, or
    /// `SUBNET UP` did not appear within 60 s (it is then stopped); the error holds its output.
    pub fn start_daemon(self) -> io::Result<SmDaemon<'a>> {
        self.start_daemon_until("SUBNET UP")
    }

    /// Like [`start_daemon`](Self::start_daemon), but waits until opensm's log contains
    /// `marker` instead of `SUBNET UP`: e.g. `Entering STANDBY state` for a second SM of lower
    /// priority, which never brings the subnet up itself.
    ///
    /// # Errors
    /// As [`start_daemon`](Self::start_daemon), with `marker` for `SUBNET UP`.
    pub fn start_daemon_until(self, marker: &str) -> io::Result<SmDaemon<'a>> {
        let (sim, (mut cmd, scratch)) = (self.sim, self.command?);
        let out = File::create(scratch.join(OUT_FILE))?;
        cmd.arg("-d2")
            .stdout(Stdio::from(out.try_clone()?))
            .stderr(Stdio::from(out));
        let mut p = DaemonProcess {
            child: cmd.spawn()?,
            scratch,
        };
        let deadline = Instant::now() + SM_DAEMON_TIMEOUT;
        loop {
            if read_lossy(&p.scratch.join(LOG_FILE)).contains(marker) {
                return Ok(SmDaemon {
                    sim,
                    process: Some(p),
                });
            }
            let diag = || diagnostics(sim, &p.scratch, &read_lossy(&p.scratch.join(OUT_FILE)));
            if let Some(status) = p.child.try_wait()? {
                return Err(io::Error::other(format!(
                    "opensm daemon exited ({status}) before {marker:?}{}",
                    diag()
                )));
            }
            if Instant::now() >= deadline {
                let diag = diag();
                let _ = p.stop();
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("opensm daemon: no {marker:?} within {SM_DAEMON_TIMEOUT:?}{diag}"),
                ));
            }
            std::thread::sleep(POLL);
        }
    }
}

/// The output, log tail and `ibsim.log` tail of an opensm run, for error messages.
fn diagnostics(sim: &Ibsim, scratch: &Path, output: &str) -> String {
    format!(
        "\n--- opensm output ---\n{}\n--- {LOG_FILE} (tail) ---\n{}\n--- ibsim.log (tail) ---\n{}",
        output.trim_end(),
        tail(&read_lossy(&scratch.join(LOG_FILE)), 40),
        tail(&sim.log(), 20)
    )
}

/// A finished, successful `opensm -o` ([`Opensm::run_once`]).
#[derive(Debug)]
pub struct SmOnce {
    /// Exit status and captured stdout and stderr.
    pub output: Output,
    /// The run's scratch directory (its cwd; holds `opensm.log`).
    pub scratch: PathBuf,
    /// Wall time of the run.
    pub elapsed: Duration,
}

impl SmOnce {
    /// opensm's log file (`-f`).
    pub fn log(&self) -> String {
        read_lossy(&self.scratch.join(LOG_FILE))
    }

    /// stdout followed by stderr, lossily decoded.
    pub fn output_text(&self) -> String {
        format!(
            "{}{}",
            String::from_utf8_lossy(&self.output.stdout),
            String::from_utf8_lossy(&self.output.stderr)
        )
    }
}

/// A resident opensm process, stopped on drop; [`SmDaemon`] borrows its [`Ibsim`], this does
/// not (it is what [`Ibsim::start_sm_daemon`] keeps).
#[derive(Debug)]
pub(crate) struct DaemonProcess {
    child: Child,
    scratch: PathBuf,
}

impl DaemonProcess {
    /// SIGTERM (opensm exits cleanly and frees its ibsim client slot), SIGKILL after the
    /// grace period. Stopping again returns the same status.
    pub(crate) fn stop(&mut self) -> io::Result<ExitStatus> {
        process::terminate(&mut self.child, crate::TERM_GRACE)
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for DaemonProcess {
    fn drop(&mut self) {
        if let Err(e) = self.stop() {
            eprintln!("ibsim-harness: stopping opensm (pid {}): {e}", self.pid());
        }
    }
}

/// A resident opensm ([`Opensm::start_daemon`]), stopped on drop (before the [`Ibsim`] it
/// borrows).
#[derive(Debug)]
pub struct SmDaemon<'a> {
    sim: &'a Ibsim,
    /// `None` once stopped or detached.
    process: Option<DaemonProcess>,
}

impl SmDaemon<'_> {
    /// The ibsim instance this SM runs on.
    pub fn sim(&self) -> &Ibsim {
        self.sim
    }

    /// The process id, or `None` once stopped.
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(DaemonProcess::pid)
    }

    /// The daemon's scratch directory (its cwd; holds `opensm.log` and `opensm.out`).
    /// Empty once stopped.
    pub fn scratch(&self) -> &Path {
        self.process
            .as_ref()
            .map_or(Path::new(""), |p| p.scratch.as_path())
    }

    /// opensm's log so far (empty once stopped).
    pub fn log(&self) -> String {
        read_lossy(&self.scratch().join(LOG_FILE))
    }

    /// Stops the daemon: SIGTERM, SIGKILL after 5 s. Returns its exit status (`None` if it
    /// was already stopped); an exit code rather than a signal means it shut down by itself.
    ///
    /// # Errors
    /// Waiting for it failed.
    pub fn stop(&mut self) -> io::Result<Option<ExitStatus>> {
        self.process.take().map(|mut p| p.stop()).transpose()
    }

    /// Gives up the borrow: the process is handed over without being stopped.
    pub(crate) fn detach(mut self) -> Option<DaemonProcess> {
        self.process.take()
    }
}
