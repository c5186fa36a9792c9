//! The Debian packages the workspace needs, and whether each one is installed.
//!
//! The list is the file `debian-packages` next to this crate's `Cargo.toml` (compiled in), so
//! the harness's install hint, `cargo xtask demo --with-c`/`test` (which install what is
//! missing when run as root) and `.ci/run` (which reads the file with `sed`) all name the
//! same packages.
//! Whether a package is installed is decided by cheap checks of the files the workspace
//! actually uses (an executable, a header, the umad2sim shim), not by asking dpkg, so a
//! machine that has everything never needs apt and a tool built from source counts too.

use std::path::Path;

use crate::tools::{find_tool, umad2sim_path};

/// The package list (see the comment at the top of the file for its format).
const LIST: &str = include_str!("../debian-packages");

/// What a package is needed for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Need {
    /// The simulator stack: ibsim, libumad2sim.so, opensm and the C diagnostic tools (the
    /// harness, `cargo xtask demo`'s side-by-side with the C tools and every ibsim-backed
    /// test).
    Ibsim,
    /// What `cargo xtask test` needs on top of [`Need::Ibsim`]: a C compiler with the libc,
    /// kernel and libibumad headers, readelf and valgrind.
    Test,
    /// The real-kernel guest (`cargo xtask realkernel`): QEMU, a static busybox for the
    /// guest's userland, iproute2's `ip` and `rdma`.
    RealKernel,
}

/// One line of the package list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Package {
    name: &'static str,
    need: Need,
    checks: Vec<Check>,
}

/// How one installed file of a package is recognised.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Check {
    /// An executable, looked up with [`find_tool`].
    Tool(&'static str),
    /// A file at an absolute path.
    File(&'static str),
    /// ibsim's `libumad2sim.so`, looked up with [`umad2sim_path`].
    Umad2sim,
}

impl Package {
    /// The Debian package name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// What the package is needed for.
    pub fn need(&self) -> Need {
        self.need
    }

    /// Whether every file the workspace uses from this package is present.
    pub fn is_installed(&self) -> bool {
        self.checks.iter().all(|c| match c {
            Check::Tool(name) => find_tool(name).is_some(),
            Check::File(path) => Path::new(path).is_file(),
            Check::Umad2sim => umad2sim_path().is_some(),
        })
    }
}

/// Every package of the list, in file order.
///
/// # Panics
/// The compiled-in list is malformed (a unit test parses it, so this does not happen in a
/// tested build).
pub fn debian_packages() -> Vec<Package> {
    parse(LIST).unwrap_or_else(|e| panic!("ibsim-harness/debian-packages: {e}"))
}

/// The names of the packages needed for any of `needs` that are not installed, in list order.
pub fn missing_packages(needs: &[Need]) -> Vec<&'static str> {
    debian_packages()
        .into_iter()
        .filter(|p| needs.contains(&p.need) && !p.is_installed())
        .map(|p| p.name)
        .collect()
}

/// `apt-get install -y <packages>` (without `sudo` or `apt-get update`).
pub fn apt_install_command(packages: &[&str]) -> String {
    format!("apt-get install -y {}", packages.join(" "))
}

/// The command that installs the simulator stack ([`Need::Ibsim`]), for error messages.
pub fn install_hint() -> String {
    let names: Vec<&str> = debian_packages()
        .iter()
        .filter(|p| p.need == Need::Ibsim)
        .map(Package::name)
        .collect();
    apt_install_command(&names)
}

fn parse(text: &'static str) -> Result<Vec<Package>, String> {
    let mut packages: Vec<Package> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or_default();
        let mut words = line.split_whitespace();
        let Some(name) = words.next() else {
            continue;
        };
        let at = || format!("line {}", n + 1);
        let need = match words.next() {
            Some("ibsim") => Need::Ibsim,
            Some("test") => Need::Test,
            Some("realkernel") => Need::RealKernel,
            other => {
                return Err(format!(
                    "{}: need `ibsim`, `test` or `realkernel`, got {other:?}",
                    at()
                ))
            }
        };
        let checks = words
            .map(|w| match w.split_once(':') {
                Some(("tool", t)) if !t.is_empty() => Ok(Check::Tool(t)),
                Some(("file", f)) if f.starts_with('/') => Ok(Check::File(f)),
                None if w == "umad2sim" => Ok(Check::Umad2sim),
                _ => Err(format!("{}: unknown check {w:?}", at())),
            })
            .collect::<Result<Vec<_>, _>>()?;
        if checks.is_empty() {
            return Err(format!("{}: {name} has no check", at()));
        }
        if packages.iter().any(|p| p.name == name) {
            return Err(format!("{}: {name} listed twice", at()));
        }
        packages.push(Package { name, need, checks });
    }
    Ok(packages)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_parses() {
        let all = parse(LIST).unwrap();
        let ibsim: Vec<&str> = all
            .iter()
            .filter(|p| p.need == Need::Ibsim)
            .map(Package::name)
            .collect();
        assert_eq!(ibsim, ["ibsim-utils", "opensm", "infiniband-diags"]);
        assert!(all.iter().any(|p| p.name == "libibumad-dev"));
        let guest: Vec<&str> = all
            .iter()
            .filter(|p| p.need == Need::RealKernel)
            .map(Package::name)
            .collect();
        assert_eq!(guest, ["qemu-system-x86", "busybox-static", "iproute2"]);
        assert_eq!(
            install_hint(),
            "apt-get install -y ibsim-utils opensm infiniband-diags"
        );
    }

    #[test]
    fn parse_rules() {
        let p =
            parse("# c\n\n a ibsim tool:x file:/y umad2sim # trailing\nb test tool:z\n").unwrap();
        assert_eq!(p.len(), 2);
        assert_eq!(
            p[0].checks,
            [Check::Tool("x"), Check::File("/y"), Check::Umad2sim]
        );
        assert_eq!(p[1].need, Need::Test);
        for bad in [
            "a",
            "a other tool:x",
            "a test",
            "a test file:relative",
            "a test tool:",
            "a test what:x",
            "a test tool:x\na ibsim tool:y",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn checks_look_at_the_file_system() {
        let pkg = |checks| Package {
            name: "p",
            need: Need::Test,
            checks,
        };
        assert!(pkg(vec![Check::Tool("sh"), Check::File("/proc/self/status")]).is_installed());
        assert!(!pkg(vec![Check::Tool("sh"), Check::File("/nonexistent/umadrs")]).is_installed());
        assert!(!pkg(vec![Check::Tool("definitely-not-a-tool-umadrs")]).is_installed());
    }

    #[test]
    fn apt_command() {
        assert_eq!(apt_install_command(&["a", "b"]), "apt-get install -y a b");
    }
}
