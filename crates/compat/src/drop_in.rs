//! Running unchanged C programs (infiniband-diags, opensm) under ibsim's umad2sim shim, once
//! on the system `libibumad.so.3` and once on ours (`LD_LIBRARY_PATH=<our dir>`), and
//! comparing what they print.
//!
//! Every run records which `libibumad.so.3` the dynamic loader initialised
//! (`LD_DEBUG=libs`, written to a file with `LD_DEBUG_OUTPUT` so the program's own stderr
//! stays untouched): a comparison is only valid if the "ours" run really ran on ours.
//!
//! The library is chosen with the crate's [`Library`] (our directory from
//! [`require_drop_in`](crate::require_drop_in)).

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fmt::Write as _;
use std::io;
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

use ibsim_harness::{run_with_timeout, Ibsim, SmDaemon};

use crate::fabric::Topology;
use crate::{line_diff, Library, SONAME};

/// How often [`Case::compare`] runs the system tool when it dies by a signal.
const SYSTEM_ATTEMPTS: u32 = 3;

/// Programs whose own code crashes now and then under umad2sim whichever library is below it
/// (ibqueryerrors: umad2sim cuts its PathRecord table to one MAD and it indexes its SL table
/// with a DLID read from uninitialised heap). Ours is run again too when one of these dies by
/// SIGSEGV, at most once, loudly; any other crash of ours fails at once.
const CRASH_UNDER_UMAD2SIM: &[&str] = &["ibqueryerrors"];
/// The segmentation-fault signal's number (Linux).
const SIGSEGV: i32 = 11;

/// Default time limit of one tool run.
pub const TOOL_TIMEOUT: Duration = Duration::from_secs(60);
/// Prefix of the `LD_DEBUG_OUTPUT` files in a client's scratch directory.
const LD_DEBUG_FILE: &str = "ld-debug";

/// Checks that the loader initialised exactly one `libibumad.so.3` (`loaded`, from
/// [`loaded_libibumad`]) and that it is `lib` (see [`Library::verify_loaded`]).
///
/// # Errors
/// A message naming what was loaded instead.
pub fn check_loaded(lib: &Library, loaded: &[PathBuf]) -> Result<(), String> {
    match loaded {
        [path] => lib.verify_loaded(&path.to_string_lossy()),
        _ => Err(format!(
            "expected exactly one {SONAME} to be initialised on the {} library, the loader \
             reported {loaded:?}",
            lib.label()
        )),
    }
}

/// One finished program run.
#[derive(Debug, Clone)]
pub struct ToolRun {
    /// `"system"` or `"ours"`.
    pub lib: &'static str,
    /// The command line, for messages (`smpquery nodeinfo 2`).
    pub command: String,
    /// Exit status.
    pub status: ExitStatus,
    /// Standard output (lossily decoded).
    pub stdout: String,
    /// Standard error (lossily decoded).
    pub stderr: String,
    /// Every `libibumad.so.3` the loader initialised (from `LD_DEBUG=libs`).
    pub libibumad: Vec<PathBuf>,
    /// Wall time of the run.
    pub elapsed: Duration,
}

impl ToolRun {
    /// The exit code, or `-<signal>` when killed by a signal.
    pub fn code(&self) -> i32 {
        use std::os::unix::process::ExitStatusExt;
        self.status
            .code()
            .unwrap_or_else(|| -self.status.signal().unwrap_or(0))
    }

    /// A readable dump for failure messages.
    pub fn describe(&self) -> String {
        format!(
            "[{}] `{}` exit {} in {:.2?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.lib,
            self.command,
            self.code(),
            self.elapsed,
            self.stdout.trim_end(),
            self.stderr.trim_end()
        )
    }
}

/// Runs `program args…` as a umad2sim client of `sim` on `lib` (private scratch cwd,
/// `LD_DEBUG` bookkeeping, [`TOOL_TIMEOUT`]). A non-zero exit is not an error.
///
/// # Errors
/// Spawning failed or the time limit was hit.
pub fn run_tool<S: AsRef<OsStr>>(
    sim: &Ibsim,
    lib: &Library,
    program: &str,
    args: &[S],
) -> io::Result<ToolRun> {
    run_tool_with(sim, lib, program, args, &[], TOOL_TIMEOUT)
}

/// Like [`run_tool`] with extra environment variables and a time limit.
///
/// # Errors
/// Spawning failed or the time limit was hit.
pub fn run_tool_with<S: AsRef<OsStr>>(
    sim: &Ibsim,
    lib: &Library,
    program: &str,
    args: &[S],
    env: &[(&str, &OsStr)],
    timeout: Duration,
) -> io::Result<ToolRun> {
    let mut cmd = client_command(sim, lib, program)?;
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let command = command_line(program, args);
    let started = Instant::now();
    let out = run_with_timeout(&mut cmd, timeout)?;
    let elapsed = started.elapsed();
    Ok(ToolRun {
        lib: lib.label(),
        command,
        status: out.status,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        libibumad: loaded_libibumad(&scratch_of(&cmd)?),
        elapsed,
    })
}

/// A umad2sim client command on `lib` with `LD_DEBUG=libs` going to a file in its scratch
/// directory (read back by [`loaded_libibumad`]).
///
/// # Errors
/// The scratch directory was not created.
pub fn client_command(sim: &Ibsim, lib: &Library, program: &str) -> io::Result<Command> {
    let mut cmd = sim.umad2sim_command(program);
    use_library(&mut cmd, lib)?;
    Ok(cmd)
}

/// Points a umad2sim client command (cwd = its scratch directory) at `lib`, with
/// `LD_DEBUG=libs` going to a file in the scratch directory.
fn use_library(cmd: &mut Command, lib: &Library) -> io::Result<()> {
    let scratch = scratch_of(cmd)?;
    lib.apply(cmd);
    cmd.env("LD_DEBUG", "libs")
        .env("LD_DEBUG_OUTPUT", scratch.join(LD_DEBUG_FILE));
    Ok(())
}

fn scratch_of(cmd: &Command) -> io::Result<PathBuf> {
    cmd.get_current_dir()
        .filter(|d| d.is_dir())
        .map(Path::to_owned)
        .ok_or_else(|| io::Error::other("umad2sim client scratch directory missing"))
}

fn command_line<S: AsRef<OsStr>>(program: &str, args: &[S]) -> String {
    std::iter::once(program.to_owned())
        .chain(args.iter().map(|a| {
            let a = a.as_ref().to_string_lossy();
            if a.is_empty() || a.contains(' ') {
                format!("'{a}'")
            } else {
                a.into_owned()
            }
        }))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The `libibumad.so.3` files initialised by the processes whose `LD_DEBUG_OUTPUT` files
/// (`ld-debug.<pid>`) are in `scratch`, in order, without duplicates.
pub fn loaded_libibumad(scratch: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(scratch)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(OsStr::to_str)
                .is_some_and(|n| n.starts_with(&format!("{LD_DEBUG_FILE}.")))
        })
        .collect();
    files.sort();
    let mut found = Vec::new();
    for f in files {
        let text = std::fs::read(&f).unwrap_or_default();
        for path in initialised_libibumad(&String::from_utf8_lossy(&text)) {
            if !found.contains(&path) {
                found.push(path);
            }
        }
    }
    found
}

/// Parses `LD_DEBUG=libs` output: the paths of `calling init: …/libibumad.so.3` lines.
pub fn initialised_libibumad(ld_debug: &str) -> Vec<PathBuf> {
    ld_debug
        .lines()
        .filter_map(|l| l.split_once("calling init: ").map(|(_, p)| p.trim()))
        .filter(|p| Path::new(p).file_name() == Some(OsStr::new(SONAME)))
        .map(PathBuf::from)
        .collect()
}

/// Masks what legitimately differs from run to run in the diags' output, and nothing else:
///
/// * the pid in `ibwarn: [1234]`, `ibpanic: [1234]`, `iberror: [1234]` → `[PID]`;
/// * the date in ibnetdiscover's `# Topology file: generated on <date>` → `<DATE>`;
/// * the SM's `activity count N` in sminfo (it counts the SM's own sweeps) → `N`.
pub fn mask_run_to_run(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        let mut l = body.to_owned();
        for tag in ["ibwarn: [", "ibpanic: [", "iberror: ["] {
            l = mask_number_after(&l, tag, "PID");
        }
        l = mask_number_after(&l, "activity count ", "N");
        if let Some(pos) = l.find("# Topology file: generated on ") {
            l.truncate(pos + "# Topology file: generated on ".len());
            l.push_str("<DATE>");
        }
        out.push_str(&l);
        out.push_str(nl);
    }
    out
}

/// Replaces the value of every `Field:.....value` line whose field name is in `fields`
/// with `<masked>` (the name and the dots stay, so a renamed or missing field still shows).
pub fn mask_field_values(text: &str, fields: &[String]) -> String {
    if fields.is_empty() {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let masked = line.split_once(':').and_then(|(name, rest)| {
            let dots = rest.len() - rest.trim_start_matches('.').len();
            (fields.iter().any(|f| f == name) && dots > 0)
                .then(|| format!("{name}:{}<masked>", &rest[..dots]))
        });
        match masked {
            Some(m) => {
                out.push_str(&m);
                if line.ends_with('\n') {
                    out.push('\n');
                }
            }
            None => out.push_str(line),
        }
    }
    out
}

/// Replaces the decimal number right after every occurrence of `tag` with `with`.
pub fn mask_number_after(line: &str, tag: &str, with: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(pos) = rest.find(tag) {
        let after = pos + tag.len();
        out.push_str(&rest[..after]);
        let digits = rest[after..].bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 {
            out.push_str(with);
        }
        rest = &rest[after + digits..];
    }
    out.push_str(rest);
    out
}

/// A diff report of `a` (system) and `b` (ours), `None` if equal: the crate's unified
/// [`line_diff`] for outputs of moderate size, else (its LCS table would be too big, e.g.
/// two 9000-line discoveries) [`diff_excerpt`].
pub fn diff_report(a: &str, b: &str) -> Option<String> {
    const MAX_CELLS: usize = 4_000_000;
    if a.lines().count().saturating_mul(b.lines().count()) <= MAX_CELLS {
        line_diff(a, b, "system", "ours")
    } else {
        diff_excerpt(a, b)
    }
}

/// A short line diff of `a` (system) and `b` (ours): the first differing line with a few
/// lines of context from both sides, and the number of differing lines. `None` if equal.
pub fn diff_excerpt(a: &str, b: &str) -> Option<String> {
    if a == b {
        return None;
    }
    let al: Vec<&str> = a.lines().collect();
    let bl: Vec<&str> = b.lines().collect();
    let first = al
        .iter()
        .zip(&bl)
        .position(|(x, y)| x != y)
        .unwrap_or(al.len().min(bl.len()));
    let differing =
        al.iter().zip(&bl).filter(|(x, y)| x != y).count() + al.len().abs_diff(bl.len());
    let from = first.saturating_sub(2);
    let mut s = format!(
        "first difference at line {} ({differing} differing lines; system {} lines, ours {} lines)\n",
        first + 1,
        al.len(),
        bl.len()
    );
    if differing == 0 {
        // Same lines, different line endings / trailing newline.
        let _ = writeln!(s, "  (only the trailing newline differs)");
    }
    for (name, lines) in [("system", &al), ("ours", &bl)] {
        let _ = writeln!(s, "  --- {name}:");
        for (i, l) in lines.iter().enumerate().skip(from).take(first - from + 5) {
            let mark = if i == first { '>' } else { ' ' };
            let _ = writeln!(s, "  {mark}{:5}: {l}", i + 1);
        }
    }
    Some(s)
}

/// One program invocation compared on the system library and on ours.
#[derive(Debug, Clone)]
pub struct Case {
    program: String,
    args: Vec<String>,
    expect_success: bool,
    expect: Vec<String>,
    before_each: Option<Vec<String>>,
    mask_values: Vec<String>,
}

impl Case {
    /// `program args…`, expected to exit 0.
    pub fn new<I, S>(program: &str, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Case {
            program: program.to_owned(),
            args: args.into_iter().map(Into::into).collect(),
            expect_success: true,
            expect: Vec::new(),
            before_each: None,
            mask_values: Vec::new(),
        }
    }

    /// The system run's stdout+stderr must contain `text` (so that equal outputs are not
    /// equally wrong).
    #[must_use]
    pub fn expect(mut self, text: &str) -> Self {
        self.expect.push(text.to_owned());
        self
    }

    /// The program is expected to fail (non-zero exit) on both libraries: an error path.
    #[must_use]
    pub fn fails(mut self) -> Self {
        self.expect_success = false;
        self
    }

    /// Runs `argv` (on the system library) right before each of the two runs, e.g.
    /// `perfquery -R <lid> <port>` to reset the counters the runs then read.
    #[must_use]
    pub fn before_each<I, S>(mut self, argv: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.before_each = Some(argv.into_iter().map(Into::into).collect());
        self
    }

    /// Masks the value (not the name) of the `Field:....value` lines named in `fields` in
    /// both runs before comparing: for counters that move between the two runs for
    /// reasons outside the library (e.g. ibsim does not reset the extended
    /// `PortRcvPkts`).
    #[must_use]
    pub fn mask_values(mut self, fields: &[&str]) -> Self {
        self.mask_values
            .extend(fields.iter().map(|f| (*f).to_owned()));
        self
    }

    /// The command line, for messages.
    pub fn command(&self) -> String {
        command_line(&self.program, &self.args)
    }

    fn prepare(&self, sim: &Ibsim) -> Result<(), String> {
        let Some(argv) = &self.before_each else {
            return Ok(());
        };
        let (prog, args) = argv.split_first().ok_or("empty before_each command")?;
        let run = run_tool(sim, &Library::System, prog, args).map_err(|e| e.to_string())?;
        if run.status.success() {
            Ok(())
        } else {
            Err(format!("preparation failed:\n{}", run.describe()))
        }
    }

    /// Runs the case on the system library, then on ours (each after
    /// [`before_each`](Self::before_each)) and compares exit codes and the masked
    /// ([`mask_run_to_run`]) stdout and stderr exactly. Also checks that each run loaded
    /// the right library and that the system run meets the expectations.
    ///
    /// Returns the system run.
    ///
    /// # Errors
    /// A report of everything that went wrong, with diff excerpts.
    pub fn compare(&self, sim: &Ibsim, ours: &Library) -> Result<ToolRun, String> {
        let mut runs = Vec::with_capacity(2);
        // A run killed by a signal never said goodbye to ibsim: its client slot stays taken,
        // so the runs after it attach at another slot.
        let mut crashed = false;
        for lib in [&Library::System, ours] {
            let mut attempt = 1;
            let run = loop {
                self.prepare(sim)?;
                let run = run_tool(sim, lib, &self.program, &self.args)
                    .map_err(|e| format!("[{}] {}: {e}", lib.label(), self.command()))?;
                // The reference can crash on its own: umad2sim hands the system library
                // only the first MAD of an RMPP answer, and C tools then read records
                // past it from uninitialised heap (ibqueryerrors indexes its SL table
                // with such a DLID and dies by SIGSEGV, a few runs in a hundred). A
                // crashed reference says nothing about ours, so it is run again; ours
                // never is.
                match run.status.signal() {
                    Some(sig) if *lib == Library::System && attempt < SYSTEM_ATTEMPTS => {
                        eprintln!(
                            "[system] {}: killed by signal {sig}, run again (attempt {} of \
                             {SYSTEM_ATTEMPTS})",
                            self.command(),
                            attempt + 1
                        );
                        attempt += 1;
                        crashed = true;
                    }
                    Some(sig)
                        if *lib != Library::System
                            && sig == SIGSEGV
                            && attempt == 1
                            && CRASH_UNDER_UMAD2SIM
                                .iter()
                                .any(|p| self.program.ends_with(p)) =>
                    {
                        eprintln!(
                            "[ours] {}: killed by SIGSEGV, a crash of the program's own code \
                             under umad2sim (see CRASH_UNDER_UMAD2SIM): run again once",
                            self.command()
                        );
                        attempt += 1;
                        crashed = true;
                    }
                    _ => break run,
                }
            };
            check_loaded(lib, &run.libibumad)
                .map_err(|e| format!("{}: {e}\n{}", self.command(), run.describe()))?;
            runs.push(run);
        }
        let ours_run = runs.pop().unwrap_or_else(|| unreachable!());
        let sys = runs.pop().unwrap_or_else(|| unreachable!());
        let mut problems = String::new();
        if sys.code() != ours_run.code() {
            let _ = writeln!(
                problems,
                "exit code: system {}, ours {}",
                sys.code(),
                ours_run.code()
            );
        }
        for (what, a, b) in [
            ("stdout", &sys.stdout, &ours_run.stdout),
            ("stderr", &sys.stderr, &ours_run.stderr),
        ] {
            let mask = |t: &str| {
                let t = mask_field_values(&mask_run_to_run(t), &self.mask_values);
                if crashed {
                    t.split_inclusive('\n')
                        .map(crate::differential::mask_client)
                        .collect()
                } else {
                    t
                }
            };
            if let Some(d) = diff_report(&mask(a), &mask(b)) {
                let _ = write!(problems, "{what}: {d}");
            }
        }
        if sys.status.success() != self.expect_success {
            let _ = writeln!(
                problems,
                "system run: expected {}, got exit {}",
                if self.expect_success {
                    "success"
                } else {
                    "failure"
                },
                sys.code()
            );
        }
        let both = format!("{}{}", sys.stdout, sys.stderr);
        for e in &self.expect {
            if !both.contains(e.as_str()) {
                let _ = writeln!(problems, "system run: expected output containing {e:?}");
            }
        }
        if problems.is_empty() {
            Ok(sys)
        } else {
            Err(format!(
                "{}\n{problems}{}\n{}",
                self.command(),
                sys.describe(),
                ours_run.describe()
            ))
        }
    }
}

/// Collects the outcome of many [`Case`]s so one test reports every difference at once.
#[derive(Debug, Default)]
pub struct Report {
    checked: Vec<String>,
    failures: Vec<String>,
}

impl Report {
    /// An empty report.
    pub fn new() -> Self {
        Self::default()
    }

    /// Compares `case` (see [`Case::compare`]) and records the result; returns the system
    /// run on success.
    pub fn check(&mut self, sim: &Ibsim, ours: &Library, case: &Case) -> Option<ToolRun> {
        self.checked.push(case.command());
        match case.compare(sim, ours) {
            Ok(run) => Some(run),
            Err(e) => {
                self.failures.push(e);
                None
            }
        }
    }

    /// Compares two texts produced outside [`check`](Self::check) (e.g. the same system tool
    /// on two fabrics, one configured by opensm on each library) and records the outcome.
    /// Returns whether they were equal.
    pub fn check_same(&mut self, what: &str, system: &str, ours: &str) -> bool {
        self.checked.push(what.to_owned());
        match diff_report(system, ours) {
            None => true,
            Some(d) => {
                self.failures.push(format!("{what}:\n{d}"));
                false
            }
        }
    }

    /// Records a failure found outside [`check`](Self::check).
    pub fn fail(&mut self, what: impl Into<String>) {
        self.failures.push(what.into());
    }

    /// Number of cases checked so far.
    pub fn checked(&self) -> usize {
        self.checked.len()
    }

    /// Prints a summary; panics listing every failure if there was one.
    ///
    /// # Panics
    /// At least one case failed.
    pub fn finish(self, name: &str) {
        eprintln!(
            "{name}: {} cases compared, {} failed",
            self.checked.len(),
            self.failures.len()
        );
        assert!(
            self.failures.is_empty(),
            "{name}: {} of {} cases differ between the system libibumad and ours:\n\n{}",
            self.failures.len(),
            self.checked.len(),
            self.failures
                .join("\n=====================================================\n")
        );
    }
}

/// Runs one opensm sweep (`opensm -o`) under umad2sim on `lib` ([`Opensm::run_once`](ibsim_harness::Opensm::run_once) with
/// the library chosen). Returns the run; its stdout is followed by opensm's log.
///
/// # Errors
/// See [`Opensm::run_once`](ibsim_harness::Opensm::run_once) (the error starts with the library's label).
pub fn run_opensm_once(sim: &Ibsim, lib: &Library) -> io::Result<ToolRun> {
    let sweep = sim
        .opensm()
        .configure(|cmd| use_library(cmd, lib))
        .run_once()
        .map_err(|e| io::Error::new(e.kind(), format!("[{}] {e}", lib.label())))?;
    Ok(ToolRun {
        lib: lib.label(),
        command: "opensm -o".into(),
        status: sweep.output.status,
        stdout: format!(
            "{}\n--- opensm.log ---\n{}",
            String::from_utf8_lossy(&sweep.output.stdout),
            sweep.log()
        ),
        stderr: String::from_utf8_lossy(&sweep.output.stderr).into_owned(),
        libibumad: loaded_libibumad(&sweep.scratch),
        elapsed: sweep.elapsed,
    })
}

/// Starts a resident opensm under umad2sim on `lib` ([`Opensm::start_daemon`](ibsim_harness::Opensm::start_daemon) with the
/// library chosen); [`loaded_libibumad`] of its [`scratch`](SmDaemon::scratch) tells which
/// library it runs on.
///
/// # Errors
/// See [`Opensm::start_daemon`](ibsim_harness::Opensm::start_daemon) (the error starts with the library's label).
pub fn start_opensm_daemon<'a>(sim: &'a Ibsim, lib: &Library) -> io::Result<SmDaemon<'a>> {
    sim.opensm()
        .configure(|cmd| use_library(cmd, lib))
        .start_daemon()
        .map_err(|e| io::Error::new(e.kind(), format!("[{}] {e}", lib.label())))
}

/// LIDs by node description from `ibnetdiscover` output: a switch's LID from its
/// `Switch … # "<desc>" … lid N` line, a CA's from the first port line after its `Ca`
/// header (`[1](guid) … # lid N lmc 0 …`); see [`Topology`]. Empty if the output does not
/// parse.
pub fn lids_by_description(ibnetdiscover: &str) -> BTreeMap<String, u16> {
    Topology::parse(ibnetdiscover)
        .map(|t| t.lids_by_description())
        .unwrap_or_default()
}

/// One valgrind error from its XML output (`--xml=yes`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValgrindError {
    /// `<kind>`, e.g. `InvalidRead`, `SyscallParam`, `Leak_DefinitelyLost`.
    pub kind: String,
    /// `<what>` (or `<xwhat><text>` for leaks).
    pub what: String,
    /// The objects (`<obj>`) of every frame of every stack of the error (main stack,
    /// allocation / origin stacks), in order.
    pub objects: Vec<String>,
    /// The raw `<error>` element, for messages.
    pub raw: String,
}

impl ValgrindError {
    /// Whether any frame of the error lies in the shared object `lib` (compared by path,
    /// also after resolving symlinks).
    pub fn touches(&self, lib: &Path) -> bool {
        let canon = lib.canonicalize().ok();
        self.objects.iter().any(|o| {
            let o = Path::new(o);
            o == lib || canon.as_deref() == Some(o)
        })
    }
}

/// Parses the `<error>` elements of valgrind's XML output (errors that were not
/// suppressed).
pub fn parse_valgrind_xml(xml: &str) -> Vec<ValgrindError> {
    let mut errors = Vec::new();
    let mut rest = xml;
    while let Some(start) = rest.find("<error>") {
        let Some(len) = rest[start..].find("</error>") else {
            break;
        };
        let raw = &rest[start..start + len + "</error>".len()];
        rest = &rest[start + len..];
        let what = element(raw, "what")
            .or_else(|| element(raw, "text"))
            .unwrap_or_default();
        errors.push(ValgrindError {
            kind: element(raw, "kind").unwrap_or_default(),
            what: unescape_xml(&what),
            objects: elements(raw, "obj")
                .into_iter()
                .map(|o| unescape_xml(&o))
                .collect(),
            raw: raw.to_owned(),
        });
    }
    errors
}

/// The number of suppressed errors per suppression name (`<suppcounts>`).
pub fn valgrind_suppressed(xml: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    let Some(start) = xml.find("<suppcounts>") else {
        return out;
    };
    let end = xml[start..]
        .find("</suppcounts>")
        .map_or(xml.len(), |e| start + e);
    for pair in xml[start..end].split("<pair>").skip(1) {
        if let (Some(count), Some(name)) = (element(pair, "count"), element(pair, "name")) {
            *out.entry(unescape_xml(&name)).or_insert(0) += count.trim().parse().unwrap_or(0);
        }
    }
    out
}

fn element(s: &str, tag: &str) -> Option<String> {
    elements(s, tag).into_iter().next()
}

fn elements(s: &str, tag: &str) -> Vec<String> {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(a) = rest.find(&open) {
        let from = a + open.len();
        let Some(len) = rest[from..].find(&close) else {
            break;
        };
        out.push(rest[from..from + len].to_owned());
        rest = &rest[from + len..];
    }
    out
}

fn unescape_xml(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_pids_dates_and_activity_count() {
        let text = "ibwarn: [6771] sim_connect: attached as client 0 at node \"H-host1\"\n\
                    # Topology file: generated on Mon Nov 30 03:51:01 2026\n\
                    sminfo: sm lid 1 sm guid 0x100001, activity count 106 priority 0\n\
                    ibpanic: [12] main: x\nPortXmitData:....12024\n";
        assert_eq!(
            mask_run_to_run(text),
            "ibwarn: [PID] sim_connect: attached as client 0 at node \"H-host1\"\n\
             # Topology file: generated on <DATE>\n\
             sminfo: sm lid 1 sm guid 0x100001, activity count N priority 0\n\
             ibpanic: [PID] main: x\nPortXmitData:....12024\n"
        );
        assert_eq!(mask_run_to_run("no newline"), "no newline");
    }

    #[test]
    fn masks_named_field_values_only() {
        let text = "PortRcvPkts:.....................65\nPortXmitPkts:....2\nPortRcvPktsX: 3\n";
        assert_eq!(
            mask_field_values(text, &["PortRcvPkts".to_owned()]),
            "PortRcvPkts:.....................<masked>\nPortXmitPkts:....2\nPortRcvPktsX: 3\n"
        );
        assert_eq!(mask_field_values(text, &[]), text);
    }

    #[test]
    fn diff_excerpt_points_at_first_difference() {
        assert_eq!(diff_excerpt("a\nb\n", "a\nb\n"), None);
        let d = diff_excerpt("a\nb\nc\n", "a\nX\nc\n").unwrap();
        assert!(
            d.starts_with("first difference at line 2 (1 differing lines"),
            "{d}"
        );
        assert!(d.contains(">    2: b") && d.contains(">    2: X"), "{d}");
        let d = diff_excerpt("a\n", "a\nb\n").unwrap();
        assert!(d.contains("line 2 (1 differing"), "{d}");
        let d = diff_excerpt("a\n", "a").unwrap();
        assert!(d.contains("only the trailing newline"), "{d}");
    }

    #[test]
    fn parses_ld_debug_libs() {
        let text = "      7772:\tfind library=libibumad.so.3 [0]; searching\n\
                    \x20     7772:\t  trying file=/x/libibumad.so.3\n\
                    \x20     7772:\tcalling init: /x/libibumad.so.3\n\
                    \x20     7772:\tcalling init: /lib/libibmad.so.5\n\
                    \x20     7772:\tcalling fini: /x/libibumad.so.3 [0]\n";
        assert_eq!(
            initialised_libibumad(text),
            vec![PathBuf::from("/x/libibumad.so.3")]
        );
    }

    #[test]
    fn check_loaded_wants_exactly_one_library() {
        let tmp = std::env::temp_dir();
        let ours = Library::DropIn(tmp.clone());
        assert!(check_loaded(&ours, &[tmp.join(SONAME)]).is_ok());
        assert!(check_loaded(&ours, &[]).is_err());
        assert!(check_loaded(&ours, &[tmp.join(SONAME), tmp.join(SONAME)]).is_err());
        assert!(check_loaded(&ours, &[PathBuf::from("/nonexistent/x/libibumad.so.3")]).is_err());
    }

    #[test]
    fn diff_report_is_unified_for_small_outputs() {
        let d = diff_report("a\nb\n", "a\nc\n").unwrap();
        assert!(d.contains("-b") && d.contains("+c"), "{d}");
        assert_eq!(diff_report("x\n", "x\n"), None);
    }

    #[test]
    fn finds_lids_in_ibnetdiscover_output() {
        // The C tool's output on fabrics/example.net (captured in ibfabric's fixtures).
        let out = include_str!("../../fabric/tests/data/example.default.txt");
        let lids = lids_by_description(out);
        assert_eq!(lids.get("sw2"), Some(&3));
        assert_eq!(lids.get("host2 HCA-1"), Some(&4));
        assert_eq!(lids.len(), 6);
        assert!(lids_by_description("Switch\tx\n").is_empty());
    }

    #[test]
    fn parses_valgrind_xml() {
        let xml = "<valgrindoutput>\n<error>\n  <unique>0x1</unique>\n  <kind>InvalidRead</kind>\n  \
                   <what>Invalid read of size 8</what>\n  <stack>\n    <frame>\n      \
                   <obj>/usr/lib/umad2sim/libumad2sim.so</obj>\n      <fn>read</fn>\n    </frame>\n    \
                   <frame>\n      <obj>/x/libibumad.so.3</obj>\n    </frame>\n  </stack>\n</error>\n\
                   <error>\n  <kind>Leak_DefinitelyLost</kind>\n  <xwhat>\n    \
                   <text>8 bytes in 1 blocks are definitely lost</text>\n  </xwhat>\n  \
                   <stack><frame><obj>/lib/libc.so.6</obj></frame></stack>\n</error>\n\
                   <suppcounts>\n  <pair>\n    <count>4</count>\n    <name>umad2sim-read</name>\n  \
                   </pair>\n</suppcounts>\n</valgrindoutput>\n";
        let errors = parse_valgrind_xml(xml);
        assert_eq!(errors.len(), 2);
        assert_eq!(errors[0].kind, "InvalidRead");
        assert_eq!(errors[0].what, "Invalid read of size 8");
        assert!(errors[0].touches(Path::new("/x/libibumad.so.3")));
        assert!(!errors[1].touches(Path::new("/x/libibumad.so.3")));
        assert_eq!(errors[1].what, "8 bytes in 1 blocks are definitely lost");
        assert_eq!(
            valgrind_suppressed(xml),
            BTreeMap::from([("umad2sim-read".to_owned(), 4)])
        );
    }
}
