//! Differential runs of C test programs: run the same program twice — once on the system
//! `libibumad.so.3`, once on ours (the Rust drop-in built by `cargo xtask libibumad`) — and
//! compare what they print.
//!
//! * Locating the drop-in: [`drop_in_dir`], [`require_drop_in`] (the gate every test calls
//!   first), [`system_library`].
//! * Building C test programs: [`compile_c`] (against the system headers, `-libumad -ldl`).
//! * Running: [`Library`] (which `libibumad.so.3` a run should load), [`run_program`] →
//!   [`Transcript`] (masked output, the library that answered, per-section access),
//!   [`run_differential`] → [`Differential`] (both runs, [`Differential::check`]).
//! * Comparing: [`mask`], [`line_diff`] (unified-diff-like report), [`match_expected`]
//!   (expected text with `*` wildcards).
//!
//! The C programs under `crates/compat/c` follow a convention these helpers rely on: the first
//! output line is `LIB <path>` (the file `umad_size` was resolved from, via `dladdr`), stderr
//! is merged into stdout, and sections start with `== <name> ==` lines.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;

/// Environment variable that overrides where the drop-in `libibumad.so.3` is looked for.
pub const LIBIBUMAD_DIR_ENV: &str = "UMAD_LIBIBUMAD_DIR";
/// The SONAME (and file name) of libibumad.
pub const SONAME: &str = "libibumad.so.3";
/// The command that builds the drop-in.
pub const BUILD_HINT: &str = "run `cargo xtask libibumad` first";
/// The sections of `c/umad_calls.c` that need neither ibsim nor a HEAD-only function, in an
/// order where global state carries over (debug level, ABI cache, header layout): run in one
/// process with no device (`tests/c_differential.rs`) and on a real kernel's RoCE devices
/// (`tests/realkernel.rs`).
pub const DEVICE_SECTIONS: &[&str] = &[
    "debug",
    "init",
    "cas",
    "portguids",
    "ca",
    "port",
    "issm",
    "devlist",
    "sort",
    "open",
    "addr",
    "dump",
    "sendrecv",
    "register",
    "str",
];
/// Time limit of one test-program run.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(60);

/// `<workspace root>` (two levels above this crate's manifest).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .unwrap_or_else(|| Path::new("."))
        .to_path_buf()
}

/// `crates/compat/c`: the C test programs and their shared header `compat.h`.
pub fn c_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("c")
}

/// The directory holding the drop-in: `$UMAD_LIBIBUMAD_DIR` if set (and not empty), else
/// `<workspace>/target/libibumad`.
pub fn drop_in_dir() -> PathBuf {
    match std::env::var_os(LIBIBUMAD_DIR_ENV).filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => workspace_root().join("target").join("libibumad"),
    }
}

/// Gate for every test that needs the drop-in: call first and `return` on `None`.
///
/// Returns the drop-in directory when `<dir>/libibumad.so.3` exists. Otherwise panics (with
/// [`BUILD_HINT`]) when [`ibsim_required`](ibsim_harness::ibsim_required) (e.g. `CI=true`),
/// and prints a loud `SKIPPED <test>` line to stderr and returns `None` when it is not.
///
/// # Panics
/// The drop-in is missing and `CI` (or `UMAD_REQUIRE_IBSIM`) is set.
pub fn require_drop_in(test: &str) -> Option<PathBuf> {
    let dir = drop_in_dir();
    let lib = dir.join(SONAME);
    if lib.is_file() {
        return Some(dir);
    }
    assert!(
        !ibsim_harness::ibsim_required(),
        "{test}: the drop-in {} is missing: {BUILD_HINT} (or set {LIBIBUMAD_DIR_ENV})",
        lib.display()
    );
    eprintln!(
        "SKIPPED {test}: the drop-in {} is missing; {BUILD_HINT} (or set {LIBIBUMAD_DIR_ENV}); \
         with CI=true this is a failure",
        lib.display()
    );
    None
}

/// The system `libibumad.so.3` as the dynamic linker finds it without `LD_LIBRARY_PATH`
/// (from `ldconfig -p`), canonicalized; `None` if it is not installed.
pub fn system_library() -> Option<PathBuf> {
    static CACHE: OnceLock<Option<PathBuf>> = OnceLock::new();
    CACHE
        .get_or_init(|| {
            let ldconfig = ["/sbin/ldconfig", "/usr/sbin/ldconfig", "ldconfig"]
                .into_iter()
                .find(|p| !p.starts_with('/') || Path::new(p).exists())?;
            let out = Command::new(ldconfig).arg("-p").output().ok()?;
            let text = String::from_utf8_lossy(&out.stdout);
            text.lines()
                .filter(|l| l.trim_start().starts_with(&format!("{SONAME} ")))
                .filter(|l| cfg!(not(target_pointer_width = "64")) || l.contains("64"))
                .find_map(|l| l.split("=> ").nth(1))
                .and_then(|p| std::fs::canonicalize(p.trim()).ok())
        })
        .clone()
}

/// Compiles the C program `source` (a path, or a file name inside [`c_dir`]) into `out_dir`
/// (e.g. `env!("CARGO_TARGET_TMPDIR")`) against the system libibumad headers:
/// `cc -std=gnu11 -O1 -g -Wall -Wextra -I<c_dir> -o <out>/<stem> <source> -libumad -ldl`.
///
/// Each program is built once per process; the binary is written under a temporary name and
/// renamed, so parallel test processes never run a half-written file.
///
/// # Errors
/// The compiler cannot be run or fails (the error carries its output; install `gcc` and
/// `libibumad-dev`).
pub fn compile_c(source: impl AsRef<Path>, out_dir: impl AsRef<Path>) -> io::Result<PathBuf> {
    static BUILT: OnceLock<Mutex<HashMap<(PathBuf, PathBuf), PathBuf>>> = OnceLock::new();
    let source = source.as_ref();
    let source = if source.components().count() == 1 {
        c_dir().join(source)
    } else {
        source.to_path_buf()
    };
    let out_dir = out_dir.as_ref();
    let stem = source
        .file_stem()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "source has no file name"))?;
    let out = out_dir.join(stem);
    let built = BUILT.get_or_init(|| Mutex::new(HashMap::new()));
    let mut built = built.lock().unwrap_or_else(PoisonError::into_inner);
    let key = (source.clone(), out_dir.to_path_buf());
    if let Some(bin) = built.get(&key) {
        return Ok(bin.clone());
    }
    std::fs::create_dir_all(out_dir)?;
    let tmp = out_dir.join(format!(
        "{}.tmp-{}",
        stem.to_string_lossy(),
        std::process::id()
    ));
    let output = Command::new(std::env::var_os("CC").unwrap_or_else(|| "cc".into()))
        .args(["-std=gnu11", "-O1", "-g", "-Wall", "-Wextra"])
        .arg(format!("-I{}", c_dir().display()))
        .arg("-o")
        .arg(&tmp)
        .arg(&source)
        .args(["-libumad", "-ldl"])
        .output()
        .map_err(|e| io::Error::new(e.kind(), format!("running cc: {e} (install gcc)")))?;
    if !output.status.success() {
        let _ = std::fs::remove_file(&tmp);
        return Err(io::Error::other(format!(
            "cc {} failed ({}); install gcc and libibumad-dev\n{}{}",
            source.display(),
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    let warnings = String::from_utf8_lossy(&output.stderr);
    if !warnings.trim().is_empty() {
        eprintln!(
            "compat: warnings compiling {}:\n{warnings}",
            source.display()
        );
    }
    std::fs::rename(&tmp, &out)?;
    built.insert(key, out.clone());
    Ok(out)
}

/// Which `libibumad.so.3` a run should load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Library {
    /// The system library (`LD_LIBRARY_PATH` removed).
    System,
    /// The drop-in in this directory (`LD_LIBRARY_PATH=<dir>`).
    DropIn(PathBuf),
}

impl Library {
    /// A short label for reports: `system` or `ours`.
    pub fn label(&self) -> &'static str {
        match self {
            Library::System => "system",
            Library::DropIn(_) => "ours",
        }
    }

    /// Sets up `cmd`'s environment so that it loads this library.
    pub fn apply(&self, cmd: &mut Command) {
        match self {
            Library::System => {
                cmd.env_remove("LD_LIBRARY_PATH");
            }
            Library::DropIn(dir) => {
                cmd.env("LD_LIBRARY_PATH", dir);
            }
        }
    }

    /// Checks that `loaded` (the path a program reported in its `LIB` line) is this library:
    /// for [`Library::DropIn`] its directory must be the drop-in directory, for
    /// [`Library::System`] it must not be, and must be [`system_library`] when that is known.
    ///
    /// # Errors
    /// A description of the mismatch.
    pub fn verify_loaded(&self, loaded: &str) -> Result<(), String> {
        let path = Path::new(loaded);
        let dir = path.parent().and_then(|d| std::fs::canonicalize(d).ok());
        match self {
            Library::DropIn(expected) => {
                let expected = std::fs::canonicalize(expected).ok();
                if dir.is_some() && dir == expected {
                    Ok(())
                } else {
                    Err(format!(
                        "the \"ours\" run loaded {loaded}, not the drop-in in {}",
                        expected.as_deref().unwrap_or(Path::new("?")).display()
                    ))
                }
            }
            Library::System => {
                let drop_in = std::fs::canonicalize(drop_in_dir()).ok();
                if dir.is_none() || (drop_in.is_some() && dir == drop_in) {
                    return Err(format!(
                        "the \"system\" run loaded {loaded} (drop-in directory or unknown)"
                    ));
                }
                match (system_library(), std::fs::canonicalize(path).ok()) {
                    (Some(sys), Some(got)) if sys != got => Err(format!(
                        "the \"system\" run loaded {} instead of {}",
                        got.display(),
                        sys.display()
                    )),
                    _ => Ok(()),
                }
            }
        }
    }
}

/// The output of one run of a C test program.
#[derive(Debug, Clone)]
pub struct Transcript {
    /// Which library the run was meant to load.
    pub library: Library,
    /// The path from the program's `LIB` line (empty if there was none).
    pub loaded: String,
    /// stdout (with stderr merged in by the program), masked, without the `LIB` line; any
    /// output on the real stderr is appended after a `--- stderr ---` line.
    pub text: String,
    /// The exit status.
    pub status: ExitStatus,
}

impl Transcript {
    /// The lines of section `name` (between `== name ==` and the next `== … ==` line), or
    /// `None` if the section is absent. With a section run several times, the first.
    pub fn section(&self, name: &str) -> Option<String> {
        section(&self.text, name)
    }

    /// Checks the `LIB` line against [`Library::verify_loaded`] and that the run exited 0.
    ///
    /// # Errors
    /// A description of every problem found.
    pub fn verify(&self) -> Result<(), String> {
        let mut problems = Vec::new();
        if let Err(e) = self.library.verify_loaded(&self.loaded) {
            problems.push(e);
        }
        if !self.status.success() {
            problems.push(format!(
                "the \"{}\" run exited with {}",
                self.library.label(),
                self.status
            ));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("\n"))
        }
    }
}

/// The text of section `name` in `text` (see [`Transcript::section`]).
pub fn section(text: &str, name: &str) -> Option<String> {
    let header = format!("== {name} ==");
    let mut lines = text.lines().skip_while(|l| *l != header);
    lines.next()?;
    let mut out = String::new();
    for line in lines.take_while(|l| !(l.starts_with("== ") && l.ends_with(" =="))) {
        out.push_str(line);
        out.push('\n');
    }
    Some(out)
}

/// Masks what legitimately differs between two runs: the pid in libibumad's
/// `ibwarn: [<pid>]` prefix (→ `[PID]`), user-space pointers as `%p` prints them (`0x` and
/// 9 to 13 hex digits without a leading zero → `0xPTR`; 8-digit values such as Q_Keys and
/// zero-padded 16/32-digit GUIDs and GIDs stay) and umad2sim's ibsim client slot in
/// `attached as client <n>` (→ `N`).
pub fn mask(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let line = mask_pid(line);
        let line = mask_pointers(&line);
        out.push_str(&mask_client(&line));
    }
    out
}

fn mask_pid(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(pos) = rest.find("ibwarn: [") {
        let (head, tail) = rest.split_at(pos + "ibwarn: [".len());
        out.push_str(head);
        let digits = tail.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && tail[digits..].starts_with(']') {
            out.push_str("PID");
            rest = &tail[digits..];
        } else {
            rest = tail;
        }
    }
    out.push_str(rest);
    out
}

fn mask_pointers(line: &str) -> String {
    let bytes = line.as_bytes();
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    let mut copied = 0;
    while i + 1 < bytes.len() {
        let boundary = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
        if boundary && bytes[i] == b'0' && bytes[i + 1] == b'x' {
            let digits = bytes[i + 2..]
                .iter()
                .take_while(|b| b.is_ascii_hexdigit())
                .count();
            let first_nonzero = bytes.get(i + 2).is_some_and(|b| *b != b'0');
            let ends_word = bytes
                .get(i + 2 + digits)
                .map_or(true, |b| !b.is_ascii_alphanumeric());
            if (9..=13).contains(&digits) && first_nonzero && ends_word {
                out.push_str(&line[copied..i]);
                out.push_str("0xPTR");
                i += 2 + digits;
                copied = i;
                continue;
            }
        }
        i += 1;
    }
    out.push_str(&line[copied..]);
    out
}

/// umad2sim's ibsim client slot in `attached as client <n>` → `N` (one line).
pub(crate) fn mask_client(line: &str) -> String {
    const NEEDLE: &str = "attached as client ";
    match line.find(NEEDLE) {
        Some(pos) => {
            let start = pos + NEEDLE.len();
            let digits = line[start..].bytes().take_while(u8::is_ascii_digit).count();
            format!("{}N{}", &line[..start], &line[start + digits..])
        }
        None => line.to_owned(),
    }
}

/// Runs `cmd` (a C test program) with `library` and a time limit of [`RUN_TIMEOUT`], and
/// returns its masked transcript (see the crate docs for the output conventions).
///
/// # Errors
/// Spawning failed or the program did not finish in time.
pub fn run_program(mut cmd: Command, library: &Library) -> io::Result<Transcript> {
    library.apply(&mut cmd);
    let output = ibsim_harness::run_with_timeout(&mut cmd, RUN_TIMEOUT)?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let mut loaded = String::new();
    let mut body = stdout.as_ref();
    if let Some(rest) = body.strip_prefix("LIB ") {
        let (line, tail) = rest.split_once('\n').unwrap_or((rest, ""));
        loaded = line.to_owned();
        body = tail;
    }
    let mut text = mask(body);
    if !stderr.is_empty() {
        text.push_str("--- stderr ---\n");
        text.push_str(&mask(&stderr));
    }
    Ok(Transcript {
        library: library.clone(),
        loaded,
        text,
        status: output.status,
    })
}

/// Both runs of one program: on the system library and on ours.
#[derive(Debug, Clone)]
pub struct Differential {
    /// The run on the system library.
    pub system: Transcript,
    /// The run on the drop-in.
    pub ours: Transcript,
}

/// Runs the command built by `make` twice — first on the system library, then on the drop-in
/// in `drop_in` — see [`run_program`]. `make` is called once per run (e.g.
/// `|| sim.umad2sim_command(&bin)` gives each run its own scratch directory).
///
/// # Errors
/// Either run could not be spawned or timed out.
pub fn run_differential(make: impl Fn() -> Command, drop_in: &Path) -> io::Result<Differential> {
    let system = run_program(make(), &Library::System)?;
    let ours = run_program(make(), &Library::DropIn(drop_in.to_path_buf()))?;
    Ok(Differential { system, ours })
}

impl Differential {
    /// A unified-diff-like report of the two transcripts (`None` when they are equal).
    pub fn diff(&self) -> Option<String> {
        line_diff(&self.system.text, &self.ours.text, "system", "ours")
    }

    /// Like [`diff`](Self::diff) after removing the sections named in `skip` from both sides.
    pub fn diff_without(&self, skip: &[&str]) -> Option<String> {
        line_diff(
            &without_sections(&self.system.text, skip),
            &without_sections(&self.ours.text, skip),
            "system",
            "ours",
        )
    }

    /// Everything a differential test asserts, as one report: both runs loaded the right
    /// library and exited 0, every entry of `expected_in_both` occurs in both transcripts
    /// (see [`contains_lines`]: one or more consecutive lines, `*` at a line's end matches any
    /// rest), and the transcripts are equal apart from the sections in `skip`.
    ///
    /// # Errors
    /// The report of every problem found, ending with the diff.
    pub fn check(&self, expected_in_both: &[&str], skip: &[&str]) -> Result<(), String> {
        let mut report = String::new();
        for t in [&self.system, &self.ours] {
            if let Err(e) = t.verify() {
                let _ = writeln!(report, "{e}");
            }
            for want in expected_in_both {
                if !contains_lines(&t.text, want) {
                    let _ = writeln!(
                        report,
                        "the \"{}\" transcript lacks the expected line: {want}",
                        t.library.label()
                    );
                }
            }
        }
        if let Some(diff) = self.diff_without(skip) {
            let _ = writeln!(report, "system and ours differ:\n{diff}");
        }
        if report.is_empty() {
            Ok(())
        } else {
            Err(report)
        }
    }
}

/// Whether `text` contains the lines of `pattern` as consecutive whole lines. A pattern line
/// ending in `*` matches any line starting with the part before the `*`.
pub fn contains_lines(text: &str, pattern: &str) -> bool {
    let lines: Vec<&str> = text.lines().collect();
    let want: Vec<&str> = pattern.lines().collect();
    if want.is_empty() {
        return true;
    }
    lines.windows(want.len()).any(|w| {
        w.iter().zip(&want).all(|(l, p)| match p.strip_suffix('*') {
            Some(prefix) => l.starts_with(prefix),
            None => l == p,
        })
    })
}

/// `text` without the sections named in `skip` (their `== name ==` line and body).
pub fn without_sections(text: &str, skip: &[&str]) -> String {
    let mut out = String::new();
    let mut skipping = false;
    for line in text.lines() {
        if line.starts_with("== ") && line.ends_with(" ==") {
            let name = &line[3..line.len() - 3];
            skipping = skip.contains(&name);
        }
        if !skipping {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Compares `actual` with `expected` line by line, where an expected line may end in `*` to
/// match any line with that prefix (e.g. `… = 0 errno=*`). Returns a diff-like report
/// (`None` when everything matches).
pub fn match_expected(actual: &str, expected: &str) -> Option<String> {
    let a: Vec<&str> = actual.lines().collect();
    let e: Vec<&str> = expected.lines().collect();
    let matches = |exp: &str, act: &str| match exp.strip_suffix('*') {
        Some(prefix) => act.starts_with(prefix),
        None => exp == act,
    };
    if a.len() == e.len() && a.iter().zip(&e).all(|(x, y)| matches(y, x)) {
        return None;
    }
    // Substitute the matched actual lines into the expectation so the diff shows only the
    // real differences.
    let normalized: Vec<&str> = e
        .iter()
        .enumerate()
        .map(|(i, exp)| match a.get(i) {
            Some(act) if matches(exp, act) => *act,
            _ => *exp,
        })
        .collect();
    line_diff(
        &(normalized.join("\n") + "\n"),
        actual,
        "expected",
        "actual",
    )
    .or_else(|| Some("(lines differ only in count)".to_owned()))
}

/// A unified-diff-like report (3 lines of context, `-` = `a`, `+` = `b`) of two texts, or
/// `None` when they are equal.
pub fn line_diff(a: &str, b: &str, a_label: &str, b_label: &str) -> Option<String> {
    if a == b {
        return None;
    }
    let a: Vec<&str> = a.lines().collect();
    let b: Vec<&str> = b.lines().collect();
    let ops = diff_ops(&a, &b);
    const CONTEXT: usize = 3;
    let mut out = format!("--- {a_label}\n+++ {b_label}\n");
    // Indices of ops that are changes; print hunks around them.
    let changed: Vec<usize> = ops
        .iter()
        .enumerate()
        .filter(|(_, op)| !matches!(op, Op::Same(..)))
        .map(|(i, _)| i)
        .collect();
    if changed.is_empty() {
        // Only a trailing-newline difference.
        out.push_str("(texts differ only in line endings)\n");
        return Some(out);
    }
    let mut i = 0;
    while i < changed.len() {
        let start = changed[i].saturating_sub(CONTEXT);
        let mut end = changed[i] + CONTEXT + 1;
        let mut j = i + 1;
        while j < changed.len() && changed[j] <= end + CONTEXT {
            end = changed[j] + CONTEXT + 1;
            j += 1;
        }
        let end = end.min(ops.len());
        let (a_line, b_line) = ops[start].positions();
        let _ = writeln!(out, "@@ -{} +{} @@", a_line + 1, b_line + 1);
        for op in &ops[start..end] {
            match op {
                Op::Same(x, _) => {
                    let _ = writeln!(out, " {}", a[*x]);
                }
                Op::Del(x, _) => {
                    let _ = writeln!(out, "-{}", a[*x]);
                }
                Op::Add(_, y) => {
                    let _ = writeln!(out, "+{}", b[*y]);
                }
            }
        }
        i = j;
    }
    Some(out)
}

#[derive(Debug, Clone, Copy)]
enum Op {
    /// Equal line: (index in a, index in b).
    Same(usize, usize),
    /// Line only in a: (index in a, position in b).
    Del(usize, usize),
    /// Line only in b: (position in a, index in b).
    Add(usize, usize),
}

impl Op {
    fn positions(self) -> (usize, usize) {
        match self {
            Op::Same(x, y) | Op::Del(x, y) | Op::Add(x, y) => (x, y),
        }
    }
}

/// LCS-based edit script (quadratic; transcripts are a few thousand lines at most).
fn diff_ops(a: &[&str], b: &[&str]) -> Vec<Op> {
    let (n, m) = (a.len(), b.len());
    let mut lcs = vec![0u32; (n + 1) * (m + 1)];
    let idx = |i: usize, j: usize| i * (m + 1) + j;
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[idx(i, j)] = if a[i] == b[j] {
                lcs[idx(i + 1, j + 1)] + 1
            } else {
                lcs[idx(i + 1, j)].max(lcs[idx(i, j + 1)])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut ops = Vec::with_capacity(n + m);
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            ops.push(Op::Same(i, j));
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[idx(i + 1, j)] >= lcs[idx(i, j + 1)]) {
            ops.push(Op::Del(i, j));
            i += 1;
        } else {
            ops.push(Op::Add(i, j));
            j += 1;
        }
    }
    ops
}

/// A [`Command`] for `program` with `args` (convenience for [`run_differential`]).
pub fn command<I, S>(program: impl AsRef<OsStr>, args: I) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut cmd = Command::new(program);
    cmd.args(args);
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_pids_pointers_and_client_slots() {
        let text = "ibwarn: [1234] umad_send: fd 3 umad 0x55d0c0ffee10 timeout 100\n\
                    qkey 0x80010000 (nil) 0x1\n\
                    ibwarn: [99] sim_connect: attached as client 3 at node \"H-host1\"\n";
        assert_eq!(
            mask(text),
            "ibwarn: [PID] umad_send: fd 3 umad 0xPTR timeout 100\n\
             qkey 0x80010000 (nil) 0x1\n\
             ibwarn: [PID] sim_connect: attached as client N at node \"H-host1\"\n"
        );
        assert_eq!(mask("ibwarn: [x] a"), "ibwarn: [x] a");
        assert_eq!(
            mask(
                "guid 0x0000000000100000 gid 0xfe800000000000000000000000000001 m 0x7ffd12345678\n"
            ),
            "guid 0x0000000000100000 gid 0xfe800000000000000000000000000001 m 0xPTR\n"
        );
        assert_eq!(mask("a0x1234567890"), "a0x1234567890");
    }

    #[test]
    fn diff_reports_changes_with_context() {
        assert_eq!(line_diff("a\nb\n", "a\nb\n", "x", "y"), None);
        let d = line_diff(
            "1\n2\n3\n4\n5\n6\n7\n8\n",
            "1\n2\n3\n4\nFIVE\n6\n7\n8\n",
            "x",
            "y",
        )
        .unwrap();
        assert_eq!(
            d,
            "--- x\n+++ y\n@@ -2 +2 @@\n 2\n 3\n 4\n-5\n+FIVE\n 6\n 7\n 8\n"
        );
        let d = line_diff("a\n", "a\nb\n", "x", "y").unwrap();
        assert!(d.contains("+b"), "{d}");
        let d = line_diff("a\nb\n", "b\n", "x", "y").unwrap();
        assert!(d.contains("-a"), "{d}");
    }

    #[test]
    fn sections_are_split_and_removed() {
        let t = "== a ==\n1\n2\n== b ==\n3\n== end ==\n";
        assert_eq!(section(t, "a").unwrap(), "1\n2\n");
        assert_eq!(section(t, "b").unwrap(), "3\n");
        assert_eq!(section(t, "c"), None);
        assert_eq!(without_sections(t, &["a"]), "== b ==\n3\n== end ==\n");
    }

    #[test]
    fn expected_text_with_wildcards() {
        assert_eq!(
            match_expected("x = 0 errno=2\ny\n", "x = 0 errno=*\ny\n"),
            None
        );
        let d = match_expected("x = 1 errno=2\ny\n", "x = 0 errno=*\ny\n").unwrap();
        assert!(d.contains("+x = 1 errno=2"), "{d}");
        assert!(match_expected("x\n", "x\ny\n").is_some());
    }

    #[test]
    fn consecutive_lines_with_wildcards() {
        let t = "a = 1 errno=2\n  x\nb\n";
        assert!(contains_lines(t, "a = 1 *\n  x"));
        assert!(contains_lines(t, "b"));
        assert!(!contains_lines(t, "a = 1 *\nb"));
        assert!(!contains_lines(t, "  "));
    }

    #[test]
    fn verify_loaded_tells_the_libraries_apart() {
        let dir = ibsim_harness::TempDir::new("compat-verify").unwrap();
        let ours = Library::DropIn(dir.to_path_buf());
        let in_dir = dir.join(SONAME);
        assert!(ours.verify_loaded(&in_dir.to_string_lossy()).is_ok());
        let err = ours
            .verify_loaded("/usr/lib/x86_64-linux-gnu/libibumad.so.3")
            .unwrap_err();
        assert!(err.contains("not the drop-in"), "{err}");
        assert!(ours.verify_loaded("").is_err());
        assert!(Library::System.verify_loaded("").is_err());
    }

    #[test]
    fn drop_in_dir_defaults_to_target() {
        if std::env::var_os(LIBIBUMAD_DIR_ENV).is_none() {
            assert!(drop_in_dir().ends_with("target/libibumad"));
        }
    }
}
