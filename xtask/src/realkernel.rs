//! `cargo xtask realkernel`: the kernel transport and the drop-in on a real Linux kernel.
//!
//! A stock Debian kernel (only downloaded and unpacked, never installed on the host) boots in
//! QEMU (TCG: no KVM needed) with an initramfs holding busybox, iproute2, the test binaries
//! and their libraries. Its `/init` loads `ib_core`, `ib_umad` and Soft-RoCE (`rdma_rxe`),
//! makes two RoCE devices `rxe0`/`rxe1` on a veth pair, runs the tests that are gated on being
//! in the guest (`UMAD_REALKERNEL`), and powers off. Results come back on a second serial port;
//! the kernel's console goes to the first. Facts and timings: `shared/docs/real-kernel.md`.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ibsim_harness::{missing_packages, Need};

use crate::initramfs::Initramfs;
use crate::{cargo, workspace_root};

/// The kernel modules the guest loads, each after the ones it depends on (checked against
/// each module's `depends=` when the cache is filled).
const MODULES: [&str; 8] = [
    "crc32_generic",
    "udp_tunnel",
    "ip6_udp_tunnel",
    "ib_core",
    "ib_uverbs",
    "ib_umad",
    "rdma_rxe",
    "veth",
];

/// How many distinct guest-gated tests a full run must report (a ratchet, as
/// `testrun::IBSIM_TESTS` for ibsim): a test that silently stops reaching the guest's
/// devices is noticed. Raise it with new tests.
pub const REALKERNEL_TESTS: usize = 23;

/// Options of `cargo xtask realkernel`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opts {
    /// A libtest filter for the guest's test binaries (default: every guest test).
    pub filter: Option<String>,
    /// How long the guest may run, boot included.
    pub timeout: Duration,
    /// The kernel package (default: what `linux-image-amd64` depends on).
    pub kernel_pkg: Option<String>,
}

const USAGE: &str = "cargo xtask realkernel [--tests FILTER] [--timeout SECS] [--kernel-pkg PKG]";

/// Parses the options of `cargo xtask realkernel`.
pub fn parse_opts(args: &[String]) -> Result<Opts, String> {
    let mut opts = Opts {
        filter: None,
        timeout: Duration::from_secs(900),
        kernel_pkg: std::env::var("RK_KERNEL_PKG")
            .ok()
            .filter(|p| !p.is_empty()),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .ok_or(format!("{a} needs a value; usage: {USAGE}"))
        };
        match a.as_str() {
            "--tests" => opts.filter = Some(value()?.clone()),
            "--timeout" => {
                let v = value()?;
                let secs: u64 = v
                    .parse()
                    .map_err(|_| format!("--timeout: not a number of seconds: {v:?}"))?;
                opts.timeout = Duration::from_secs(secs.max(1));
            }
            "--kernel-pkg" => opts.kernel_pkg = Some(value()?.clone()),
            other => return Err(format!("unknown option {other:?}; usage: {USAGE}")),
        }
    }
    Ok(opts)
}

/// `cargo xtask realkernel`: everything, or an error.
pub fn run(opts: &Opts) -> Result<(), String> {
    crate::packages::ensure(&[Need::RealKernel], "cargo xtask realkernel")?;
    boot_and_test(opts)
}

/// The real-kernel step of `cargo xtask test`: like [`run`], but where QEMU is missing and
/// cannot be installed (not root), a loud NOT RUN line instead of an error — unless `CI` is
/// set, where everything must run.
pub fn run_in_test() -> Result<(), String> {
    let missing = missing_packages(&[Need::RealKernel]);
    if !missing.is_empty() && !crate::packages::is_root() {
        let msg = format!(
            "the real-kernel tests need {} (install: sudo apt-get update && sudo {}), then \
             `cargo xtask realkernel`",
            missing.join(" "),
            ibsim_harness::apt_install_command(&missing)
        );
        if ibsim_harness::ibsim_required() {
            return Err(format!("CI: {msg}"));
        }
        println!("\nxtask: realkernel: NOT RUN: {msg}");
        return Ok(());
    }
    run(&parse_opts(&[])?)
}

/// The cached guest kernel: `vmlinuz` and the modules of [`MODULES`].
struct Kernel {
    vmlinuz: PathBuf,
    modules: Vec<PathBuf>,
    package: String,
}

fn boot_and_test(opts: &Opts) -> Result<(), String> {
    let started = Instant::now();
    let target = crate::libibumad::target_dir(&workspace_root())?;
    let cache = target.join("realkernel");
    let kernel = kernel(&cache, opts.kernel_pkg.as_deref())?;
    println!(
        "xtask realkernel: kernel {} ({:.1} s)",
        kernel.package,
        started.elapsed().as_secs_f64()
    );

    // What runs in the guest, built on the host.
    crate::libibumad::run()?;
    let umad_tests = test_executable(&["-p", "umad", "--lib", "--features", "umad/async"], "umad")?;
    let compat_tests = test_executable(&["-p", "compat", "--test", "realkernel"], "realkernel")?;
    let umad_bin = bin_executable("umad-cli", "umad")?;
    let c_dir = cache.join("c");
    let mut c_programs = Vec::new();
    for source in ["umad_calls.c", "umad_rk.c"] {
        c_programs.push(
            compat::differential::compile_c(source, &c_dir)
                .map_err(|e| format!("compiling {source}: {e}"))?,
        );
    }

    let mut fs = Initramfs::new();
    for dir in ["/proc", "/sys", "/dev", "/tmp", "/run", "/rk/bb", "/etc"] {
        fs.dir(dir)?;
    }
    fs.elf(which("busybox")?)?;
    for tool in ["ip", "rdma", "ibstat"] {
        fs.elf(which(tool)?)?;
    }
    for (path, label) in [
        ("/sbin/ldconfig", "ldconfig"),
        ("/etc/ld.so.cache", "cache"),
    ] {
        if Path::new(path).is_file() {
            fs.host_file(path).map_err(|e| format!("{label}: {e}"))?;
        }
    }
    for m in &kernel.modules {
        let name = m.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        fs.copy(m, Path::new("/rk/mods").join(name))?;
    }
    fs.elf_at(&umad_tests, "/rk/t/umad")?;
    fs.elf_at(&compat_tests, "/rk/t/compat")?;
    fs.elf_at(&umad_bin, "/rk/bin/umad")?;
    for p in &c_programs {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        fs.elf_at(p, Path::new("/rk/c").join(name))?;
    }
    let drop_in = compat::differential::drop_in_dir().join(compat::differential::SONAME);
    fs.copy(&drop_in, "/rk/libibumad/libibumad.so.3")?;
    fs.bytes("/init", init_script(opts.filter.as_deref()), 0o755)?;

    let work = ibsim_harness::TempDir::new("umadrs-realkernel").map_err(|e| e.to_string())?;
    let initrd = work.join("initrd.cpio");
    {
        let file =
            std::fs::File::create(&initrd).map_err(|e| format!("{}: {e}", initrd.display()))?;
        let mut out = std::io::BufWriter::new(file);
        fs.write(&mut out)
            .and_then(|()| std::io::Write::flush(&mut out))
            .map_err(|e| format!("writing {}: {e}", initrd.display()))?;
    }
    let size = std::fs::metadata(&initrd).map(|m| m.len()).unwrap_or(0);
    println!(
        "xtask realkernel: initramfs {:.0} MB ({:.1} s); booting (TCG, time limit {} s)",
        size as f64 / 1e6,
        started.elapsed().as_secs_f64(),
        opts.timeout.as_secs()
    );

    let console = work.join("console.log");
    let results = work.join("results.log");
    let boot = Instant::now();
    let finished = boot_qemu(
        &kernel.vmlinuz,
        &initrd,
        &console,
        &results,
        opts.timeout,
        size,
    )?;
    let text = std::fs::read_to_string(&results).unwrap_or_default();
    let console_text = std::fs::read_to_string(&console).unwrap_or_default();
    let report = Report::parse(&text);
    println!("{}", report.render());
    println!(
        "xtask realkernel: guest {:.1} s, whole run {:.1} s",
        boot.elapsed().as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
    let min = if opts.filter.is_none() {
        REALKERNEL_TESTS
    } else {
        0
    };
    let verdict = report.verdict(finished, min);
    if verdict.is_err() {
        println!("---- guest results channel ----\n{text}");
        println!("---- guest console (last 60 lines) ----");
        let lines: Vec<&str> = console_text.lines().collect();
        for l in &lines[lines.len().saturating_sub(60)..] {
            println!("{l}");
        }
    }
    verdict
}

/// Boots the guest and waits for it to power off; `Ok(false)` when it ran out of time
/// (then it is killed).
fn boot_qemu(
    vmlinuz: &Path,
    initrd: &Path,
    console: &Path,
    results: &Path,
    timeout: Duration,
    initrd_size: u64,
) -> Result<bool, String> {
    // The initramfs is unpacked into RAM: room for it twice over plus the tests' own.
    let mem_mb = 1024 + 2 * initrd_size.div_ceil(1 << 20);
    let mut cmd = Command::new(which("qemu-system-x86_64")?);
    cmd.args(["-accel", "tcg", "-cpu", "max", "-smp", "1", "-nodefaults"])
        .args(["-m", &mem_mb.to_string()])
        .args(["-no-reboot", "-display", "none", "-monitor", "none"])
        .arg("-kernel")
        .arg(vmlinuz)
        .arg("-initrd")
        .arg(initrd)
        .args(["-append", "console=ttyS0 quiet loglevel=4 panic=-1"])
        .arg("-serial")
        .arg(format!("file:{}", console.display()))
        .arg("-serial")
        .arg(format!("file:{}", results.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| format!("starting {cmd:?}: {e}"))?;
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                if !status.success() {
                    let mut err = String::new();
                    if let Some(mut e) = child.stderr.take() {
                        let _ = std::io::Read::read_to_string(&mut e, &mut err);
                    }
                    return Err(format!("qemu exited with {status}: {err}"));
                }
                return Ok(true);
            }
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                println!(
                    "xtask realkernel: the guest did not finish in {} s: killed",
                    timeout.as_secs()
                );
                return Ok(false);
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(100)),
            Err(e) => return Err(format!("waiting for qemu: {e}")),
        }
    }
}

/// The guest's `/init` (busybox `sh`). Everything it prints goes to the results channel
/// (`ttyS1`); the lines starting with `RK-` are the protocol [`Report::parse`] reads.
fn init_script(filter: Option<&str>) -> String {
    let mut s = String::from(
        r#"#!/bin/busybox sh
# Generated by `cargo xtask realkernel` (xtask/src/realkernel.rs).
/bin/busybox --install -s /rk/bb
export PATH=/rk/bb:/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
exec >/dev/ttyS1 2>&1 </dev/null
fatal() { echo "RK-FATAL $*"; dmesg >/dev/ttyS0; poweroff -f; }
echo "RK-BOOT $(cut -d' ' -f1 /proc/uptime)"
"#,
    );
    let _ = writeln!(
        s,
        "for m in {}; do insmod /rk/mods/$m.ko || fatal insmod $m; done",
        MODULES.join(" ")
    );
    s.push_str(
        r#"# No duplicate address detection: the link-local addresses (= the GIDs) are usable at once.
echo 0 >/proc/sys/net/ipv6/conf/default/accept_dad
echo 0 >/proc/sys/net/ipv6/conf/all/accept_dad
# iproute2 by full path: busybox's own `ip` ignores `peer name`.
/usr/bin/ip link set lo up
/usr/bin/ip link add veth0 type veth peer name veth1 || fatal veth
/usr/bin/ip link set veth0 up || fatal veth0 up
/usr/bin/ip link set veth1 up || fatal veth1 up
/usr/bin/rdma link add rxe0 type rxe netdev veth0 || fatal rdma link add rxe0
/usr/bin/rdma link add rxe1 type rxe netdev veth1 || fatal rdma link add rxe1
n=0
until grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null &&
      grep -q ACTIVE /sys/class/infiniband/rxe1/ports/1/state 2>/dev/null &&
      [ -e /dev/infiniband/umad1 ]; do
    n=$((n + 1)); [ $n -gt 100 ] && fatal ports not ACTIVE; sleep 0.1
done
export RK_GID0=$(cat /sys/class/infiniband/rxe0/ports/1/gids/0)
export RK_GID1=$(cat /sys/class/infiniband/rxe1/ports/1/gids/0)
echo "RK-PORTS rxe0 $RK_GID0 rxe1 $RK_GID1 at $(cut -d' ' -f1 /proc/uptime)"
# Resolve the IPv6 neighbours once, as any network would have: the first write() to an
# unresolved RoCE neighbour blocks about 1 s in the kernel (the tests measure that on their own).
ping -6 -c 1 -W 2 -I veth0 "$RK_GID1" >/dev/null || echo "RK-WARN ping veth0 -> veth1 failed"
ping -6 -c 1 -W 2 -I veth1 "$RK_GID0" >/dev/null || echo "RK-WARN ping veth1 -> veth0 failed"
export UMAD_REALKERNEL=1 UMAD_RK_RAN=/tmp/rk-ran UMAD_LIBIBUMAD_DIR=/rk/libibumad
export UMAD_RK_C_DIR=/rk/c UMAD_RK_UMAD=/rk/bin/umad RUST_BACKTRACE=1 HOME=/tmp TMPDIR=/tmp
: >/tmp/rk-ran
cd /tmp
"#,
    );
    let quote = |f: &str| format!("'{}'", f.replace('\'', "'\\''"));
    for (label, binary, default_filter) in [
        ("umad", "/rk/t/umad", Some("realkernel::")),
        ("compat", "/rk/t/compat", None),
    ] {
        let filter = filter
            .map(quote)
            .or(default_filter.map(quote))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "echo \"RK-RUN {label} at $(cut -d' ' -f1 /proc/uptime)\"\n\
             {binary} --test-threads=1 {filter}\n\
             echo \"RK-EXIT {label} $?\""
        );
    }
    s.push_str(
        r#"echo RK-RAN-BEGIN
cat /tmp/rk-ran
echo RK-RAN-END
dmesg | grep -iE 'warn|oops|bug:|call trace' | sed 's/^/RK-DMESG /'
echo "RK-DONE $(cut -d' ' -f1 /proc/uptime)"
dmesg >/dev/ttyS0
poweroff -f
"#,
    );
    s
}

/// What the guest reported.
#[derive(Debug, Default, PartialEq, Eq)]
struct Report {
    /// `(binary, test, outcome)` for every libtest result line.
    results: Vec<(String, String, String)>,
    /// `(binary, exit status)`.
    exits: Vec<(String, i32)>,
    /// Tests that reached the guest's devices (their gate ran).
    ran: BTreeSet<String>,
    fatal: Option<String>,
    done: bool,
    /// Kernel warnings seen in dmesg.
    dmesg: Vec<String>,
}

impl Report {
    fn parse(text: &str) -> Report {
        let mut r = Report::default();
        let mut current = String::new();
        let mut in_ran = false;
        for line in text.lines() {
            let line = line.trim_end_matches('\r');
            if in_ran {
                if line == "RK-RAN-END" {
                    in_ran = false;
                } else if !line.trim().is_empty() {
                    r.ran.insert(line.trim().to_owned());
                }
                continue;
            }
            if let Some(rest) = line.strip_prefix("RK-RUN ") {
                current = rest
                    .split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_owned();
            } else if let Some(rest) = line.strip_prefix("RK-EXIT ") {
                let mut w = rest.split_whitespace();
                if let (Some(b), Some(code)) = (w.next(), w.next().and_then(|c| c.parse().ok())) {
                    r.exits.push((b.to_owned(), code));
                }
            } else if line == "RK-RAN-BEGIN" {
                in_ran = true;
            } else if let Some(rest) = line.strip_prefix("RK-FATAL ") {
                r.fatal = Some(rest.to_owned());
            } else if let Some(rest) = line.strip_prefix("RK-DMESG ") {
                r.dmesg.push(rest.to_owned());
            } else if line.starts_with("RK-DONE") {
                r.done = true;
            } else if let Some(rest) = line.strip_prefix("test ") {
                if let Some((name, outcome)) = rest.rsplit_once(" ... ") {
                    let outcome = outcome.split_whitespace().next().unwrap_or_default();
                    if matches!(outcome, "ok" | "FAILED" | "ignored") {
                        r.results
                            .push((current.clone(), name.to_owned(), outcome.to_owned()));
                    }
                }
            }
        }
        r
    }

    fn count(&self, outcome: &str) -> usize {
        self.results.iter().filter(|(_, _, o)| o == outcome).count()
    }

    fn render(&self) -> String {
        let mut s = String::from("\nxtask realkernel: results from the guest\n");
        for (binary, test, outcome) in &self.results {
            let _ = writeln!(s, "    {outcome:7} {binary}: {test}");
        }
        for d in &self.dmesg {
            let _ = writeln!(s, "    kernel: {d}");
        }
        let _ = write!(
            s,
            "realkernel: {} passed, {} failed, {} ignored; {} tests reached the guest's devices",
            self.count("ok"),
            self.count("FAILED"),
            self.count("ignored"),
            self.ran.len()
        );
        s
    }

    /// Pass or fail: the guest finished, every binary exited 0, no test failed, and at least
    /// `min` guest-gated tests ran.
    fn verdict(&self, finished: bool, min: usize) -> Result<(), String> {
        let mut errors = Vec::new();
        if !finished {
            errors.push("the guest did not finish in its time limit".to_owned());
        } else if let Some(f) = &self.fatal {
            errors.push(format!("the guest's set-up failed: {f}"));
        } else if !self.done {
            errors.push("the guest stopped before reporting RK-DONE".to_owned());
        }
        for (b, code) in &self.exits {
            if *code != 0 {
                errors.push(format!("{b} tests exited with {code}"));
            }
        }
        if self.count("FAILED") > 0 {
            errors.push(format!("{} test(s) failed", self.count("FAILED")));
        }
        if self.done && self.exits.len() < 2 {
            errors.push("not every test binary ran".to_owned());
        }
        if self.ran.len() < min {
            errors.push(format!(
                "only {} guest-gated test(s) reached the devices, at least {min} expected \
                 (realkernel::REALKERNEL_TESTS)",
                self.ran.len()
            ));
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join("; "))
        }
    }
}

/// An executable on `$PATH` (or in the sbin directories), or an error naming the package.
fn which(tool: &str) -> Result<PathBuf, String> {
    ibsim_harness::find_tool(tool).ok_or_else(|| {
        format!("{tool} not found: run `cargo xtask realkernel` as root to install it, or install the packages of crates/ibsim-harness/debian-packages marked `realkernel`")
    })
}

/// Builds a test target with `cargo test --no-run ARGS` and returns the executable of the
/// target named `name`.
fn test_executable(args: &[&str], name: &str) -> Result<PathBuf, String> {
    let mut cmd = Command::new(cargo());
    cmd.args([
        "test",
        "--no-run",
        "--message-format=json-render-diagnostics",
    ])
    .args(args);
    executable(cmd, name)
}

/// Builds binary `bin` of `package` (debug) and returns its path.
fn bin_executable(package: &str, bin: &str) -> Result<PathBuf, String> {
    let mut cmd = Command::new(cargo());
    cmd.args([
        "build",
        "--message-format=json-render-diagnostics",
        "-p",
        package,
        "--bin",
        bin,
    ]);
    executable(cmd, bin)
}

fn executable(mut cmd: Command, name: &str) -> Result<PathBuf, String> {
    cmd.current_dir(workspace_root()).stderr(Stdio::inherit());
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{cmd:?} failed: {}", out.status));
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["reason"] == "compiler-artifact" && v["target"]["name"] == name)
        .find_map(|v| v["executable"].as_str().map(PathBuf::from))
        .ok_or_else(|| format!("{cmd:?} named no executable for {name}"))
}

/// The cached kernel of `package` (default: `linux-image-amd64`'s dependency), downloaded
/// with `apt-get download` and unpacked into `cache` on first use.
fn kernel(cache: &Path, package: Option<&str>) -> Result<Kernel, String> {
    let package = match package {
        Some(p) => p.to_owned(),
        None => default_kernel_package()?,
    };
    let dir = cache.join(&package);
    if !dir.join(".complete").is_file() {
        fill_cache(&dir, &package)?;
    }
    let vmlinuz = dir.join("vmlinuz");
    let modules = MODULES
        .iter()
        .map(|m| dir.join(format!("{m}.ko")))
        .collect();
    Ok(Kernel {
        vmlinuz,
        modules,
        package,
    })
}

/// The kernel image package `linux-image-amd64` depends on (`apt-cache depends`).
fn default_kernel_package() -> Result<String, String> {
    let ask = || -> Option<String> {
        let out = Command::new("apt-cache")
            .args(["depends", "linux-image-amd64"])
            .output()
            .ok()?;
        String::from_utf8_lossy(&out.stdout).lines().find_map(|l| {
            l.trim()
                .strip_prefix("Depends: ")
                .filter(|p| p.starts_with("linux-image-"))
                .map(str::to_owned)
        })
    };
    if let Some(p) = ask() {
        return Ok(p);
    }
    if crate::packages::is_root() {
        crate::packages::apt(&["update"])?;
        if let Some(p) = ask() {
            return Ok(p);
        }
    }
    Err(
        "apt-cache knows no linux-image-amd64: run `sudo apt-get update` (or name the kernel \
         package with --kernel-pkg / RK_KERNEL_PKG)"
            .into(),
    )
}

/// Downloads `package` (never installing it) and unpacks `vmlinuz` and [`MODULES`] into
/// `dir`, through a temporary directory renamed into place (two runs may race; one wins).
fn fill_cache(dir: &Path, package: &str) -> Result<(), String> {
    let parent = dir.parent().ok_or("cache has no parent")?;
    std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    let tmp = parent.join(format!(".{package}.tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    println!("xtask realkernel: downloading {package} (apt-get download; not installed)");
    let status = Command::new("apt-get")
        .args(["download", "-q", package])
        .current_dir(&tmp)
        .status()
        .map_err(|e| format!("apt-get download: {e}"))?;
    if !status.success() {
        return Err(format!(
            "apt-get download {package} failed ({status}); run `sudo apt-get update` first"
        ));
    }
    let deb = std::fs::read_dir(&tmp)
        .map_err(|e| e.to_string())?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "deb"))
        .ok_or("apt-get download left no .deb")?;
    let x = tmp.join("x");
    std::fs::create_dir_all(&x).map_err(|e| e.to_string())?;
    let mut patterns = vec!["./boot/vmlinuz-*".to_owned()];
    patterns.extend(MODULES.iter().map(|m| format!("*/{m}.ko")));
    let script = format!(
        "dpkg-deb --fsys-tarfile {} | tar -x -C {} --wildcards {}",
        sh_quote(&deb.to_string_lossy()),
        sh_quote(&x.to_string_lossy()),
        patterns
            .iter()
            .map(|p| sh_quote(p))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let status = Command::new("sh")
        .args(["-c", &script])
        .status()
        .map_err(|e| format!("{script}: {e}"))?;
    if !status.success() {
        return Err(format!("{script}: {status}"));
    }
    let mut found = Vec::new();
    find_files(&x, &mut found);
    let pick = |pred: &dyn Fn(&str) -> bool| {
        found
            .iter()
            .find(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(pred))
            .cloned()
    };
    let vmlinuz = pick(&|n| n.starts_with("vmlinuz-")).ok_or("no vmlinuz in the package")?;
    std::fs::rename(&vmlinuz, tmp.join("vmlinuz")).map_err(|e| e.to_string())?;
    let mut depends = Vec::new();
    for m in MODULES {
        let file = format!("{m}.ko");
        let ko = pick(&|n| n == file).ok_or(format!("{package} has no {file}"))?;
        let bytes = std::fs::read(&ko).map_err(|e| e.to_string())?;
        depends.push((m, module_depends(&bytes)));
        std::fs::rename(&ko, tmp.join(&file)).map_err(|e| e.to_string())?;
    }
    check_order(&depends)?;
    std::fs::remove_dir_all(&x).map_err(|e| e.to_string())?;
    std::fs::remove_file(&deb).map_err(|e| e.to_string())?;
    std::fs::write(tmp.join(".complete"), package).map_err(|e| e.to_string())?;
    match std::fs::rename(&tmp, dir) {
        Ok(()) => Ok(()),
        // Another run filled it first.
        Err(_) if dir.join(".complete").is_file() => {
            let _ = std::fs::remove_dir_all(&tmp);
            Ok(())
        }
        Err(e) => Err(format!(
            "rename {} to {}: {e}",
            tmp.display(),
            dir.display()
        )),
    }
}

fn find_files(dir: &Path, out: &mut Vec<PathBuf>) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.filter_map(Result::ok) {
            let p = e.path();
            if p.is_dir() {
                find_files(&p, out);
            } else {
                out.push(p);
            }
        }
    }
}

/// The `depends=` of a kernel module's `.modinfo` (module names, `-` spelt `_`).
fn module_depends(ko: &[u8]) -> Vec<String> {
    const KEY: &[u8] = b"depends=";
    let Some(at) = ko.windows(KEY.len()).position(|w| w == KEY) else {
        return Vec::new();
    };
    let rest = &ko[at + KEY.len()..];
    let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
    String::from_utf8_lossy(&rest[..end])
        .split(',')
        .filter(|d| !d.is_empty())
        .map(|d| d.replace('-', "_"))
        .collect()
}

/// Every module's dependencies come before it in the load order, and are in the set.
fn check_order(depends: &[(&str, Vec<String>)]) -> Result<(), String> {
    for (i, (m, deps)) in depends.iter().enumerate() {
        for d in deps {
            if !depends[..i].iter().any(|(e, _)| e == d) {
                return Err(format!(
                    "module {m} depends on {d}, which is not loaded before it: update \
                     realkernel::MODULES"
                ));
            }
        }
    }
    Ok(())
}

fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn options() {
        let o = parse_opts(&args(&["--tests", "rmpp", "--timeout", "60"])).unwrap();
        assert_eq!(o.filter.as_deref(), Some("rmpp"));
        assert_eq!(o.timeout, Duration::from_secs(60));
        assert!(parse_opts(&args(&["--tests"])).is_err());
        assert!(parse_opts(&args(&["--timeout", "x"])).is_err());
        assert!(parse_opts(&args(&["--bogus"])).is_err());
    }

    #[test]
    fn module_info() {
        let ko = b"\x7fELF...\0license=GPL\0depends=ib_uverbs,ib_core,udp-tunnel\0retpoline=Y\0";
        assert_eq!(module_depends(ko), ["ib_uverbs", "ib_core", "udp_tunnel"]);
        assert!(module_depends(b"\0depends=\0").is_empty());
        let ok = [("a", vec![]), ("b", vec!["a".to_owned()])];
        assert!(check_order(&ok).is_ok());
        let bad = [("b", vec!["a".to_owned()]), ("a", vec![])];
        assert!(check_order(&bad).unwrap_err().contains("b depends on a"));
    }

    #[test]
    fn init_runs_every_binary_with_its_filter() {
        let s = init_script(None);
        assert!(
            s.contains("/rk/t/umad --test-threads=1 'realkernel::'"),
            "{s}"
        );
        assert!(s.contains("/rk/t/compat --test-threads=1 \n"), "{s}");
        let s = init_script(Some("it's"));
        assert!(
            s.contains("/rk/t/compat --test-threads=1 'it'\\''s'"),
            "{s}"
        );
        assert!(s.contains("insmod /rk/mods/$m.ko"));
    }

    #[test]
    fn reports() {
        let text = "RK-BOOT 1.7\nRK-RUN umad at 2.0\nrunning 2 tests\n\
                    test realkernel::a ... ok\ntest realkernel::b ... FAILED\n\
                    RK-EXIT umad 101\nRK-RUN compat at 3\ntest c ... ok\nRK-EXIT compat 0\n\
                    RK-RAN-BEGIN\nrealkernel::a\nrealkernel::b\nc\nRK-RAN-END\nRK-DONE 9.1\n";
        let r = Report::parse(text);
        assert_eq!(r.results.len(), 3);
        assert_eq!(
            r.results[1],
            ("umad".into(), "realkernel::b".into(), "FAILED".into())
        );
        assert_eq!(r.exits, [("umad".into(), 101), ("compat".into(), 0)]);
        assert_eq!(r.ran.len(), 3);
        assert!(r.done);
        let e = r.verdict(true, 3).unwrap_err();
        assert!(
            e.contains("umad tests exited with 101") && e.contains("1 test(s) failed"),
            "{e}"
        );
        assert!(r
            .render()
            .contains("realkernel: 2 passed, 1 failed, 0 ignored"));

        let good = Report::parse(&text.replace("FAILED", "ok").replace("umad 101", "umad 0"));
        assert_eq!(good.verdict(true, 3), Ok(()));
        assert!(good.verdict(true, 4).unwrap_err().contains("only 3"));
        assert!(good.verdict(false, 0).unwrap_err().contains("time limit"));
        let fatal = Report::parse("RK-BOOT 1\nRK-FATAL insmod ib_core\n");
        assert!(fatal
            .verdict(true, 0)
            .unwrap_err()
            .contains("insmod ib_core"));
        assert!(Report::parse("RK-BOOT 1\n")
            .verdict(true, 0)
            .unwrap_err()
            .contains("RK-DONE"));
    }
}
