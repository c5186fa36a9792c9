//! `umad sim serve <netfile>` as a test fixture: started on a socket name of its own, ready
//! once its control socket is bound, killed and reaped on drop. Its stderr goes to a file,
//! shown when a test fails while it runs.
//!
//! Declared by the tests that use it with `#[path = "common/serve.rs"] mod serve;` (next to
//! `mod common;`, whose helpers it uses).
#![allow(dead_code)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use ibsim_harness::{Ibsim, SmOnce, TempDir};

/// How long a daemon gets to load its netfile and bind its socket.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// A running `umad sim serve`.
pub struct Serve {
    child: Child,
    socket: String,
    dir: TempDir,
}

impl Serve {
    /// `umad sim serve <netfile>`: unconfigured, as ibsim starts (no LIDs, ports Initialize).
    pub fn start(netfile: &Path) -> Serve {
        Serve::spawn(netfile, &[])
    }

    /// `umad sim serve --configured <netfile>`: as after an SM's sweep (ibnetsim's LIDs,
    /// Active ports, min-hop LFTs), as `UMAD_SIM` is in process.
    pub fn start_configured(netfile: &Path) -> Serve {
        Serve::spawn(netfile, &["--configured"])
    }

    fn spawn(netfile: &Path, extra: &[&str]) -> Serve {
        static N: AtomicU32 = AtomicU32::new(0);
        let socket = format!(
            "umadrs-srv-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let dir = TempDir::new("umad-serve").expect("a scratch directory for the daemon");
        let log = std::fs::File::create(dir.join("serve.log")).expect("the daemon's log");
        let child = Command::new(super::common::umad())
            .args(["sim", "serve"])
            .args(extra)
            .arg(netfile)
            .args(["--socket", &socket])
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("umad sim serve starts");
        let mut s = Serve { child, socket, dir };
        s.wait_ready();
        s
    }

    /// Until `@<socket>:ctl` is bound (the daemon binds it once the fabric is loaded), as
    /// the harness waits for ibsim.
    fn wait_ready(&mut self) {
        let needle = format!("@{}:ctl@", self.socket);
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for umad sim serve") {
                panic!(
                    "umad sim serve exited during start-up ({status}):\n{}",
                    self.log()
                );
            }
            let unix = std::fs::read("/proc/net/unix").unwrap_or_default();
            if String::from_utf8_lossy(&unix).contains(&needle) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "umad sim serve is not ready within {READY_TIMEOUT:?}:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The socket base name (what `IBSIM_SOCKNAME` and `UMAD_IBSIM` take).
    pub fn socket(&self) -> &str {
        &self.socket
    }

    /// The daemon's stderr so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("serve.log")).unwrap_or_default()
    }

    /// Whether the daemon still runs.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// C `program` under umad2sim as a client of this daemon (in a scratch directory of
    /// `sim`'s, which only lends its workdir).
    pub fn umad2sim_command(&self, sim: &Ibsim, program: &str) -> Command {
        let mut cmd = sim.umad2sim_command(program);
        cmd.env("IBSIM_SOCKNAME", &self.socket);
        cmd
    }

    /// `program` (e.g. the `umad` binary) as a native client of this daemon.
    pub fn native(&self, sim: &Ibsim, program: &Path) -> Command {
        let mut cmd = super::common::native(sim, program);
        cmd.env("UMAD_IBSIM", &self.socket);
        cmd
    }

    /// `opensm -o` (with `args` before the `-o`) under umad2sim on this daemon.
    ///
    /// # Errors
    /// As [`ibsim_harness::Opensm::run_once`].
    pub fn opensm_once(&self, sim: &Ibsim, args: &[&str]) -> std::io::Result<SmOnce> {
        let socket = self.socket.clone();
        sim.opensm()
            .args(args)
            .configure(move |c| {
                c.env("IBSIM_SOCKNAME", &socket);
                Ok(())
            })
            .run_once()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let log = self.log();
            if !log.trim().is_empty() {
                eprintln!("umad sim serve {} stderr:\n{log}", self.socket);
            }
        }
    }
}
