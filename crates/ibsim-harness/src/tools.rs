//! Locating the simulator binaries and the `libumad2sim.so` shim.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// Directories searched after `$PATH` (opensm and infiniband-diags live in `sbin`, which is not
/// on a normal user's `$PATH`).
const EXTRA_BIN_DIRS: &[&str] = &["/usr/sbin", "/sbin", "/usr/local/sbin", "/usr/bin", "/bin"];

/// Environment variable that overrides the location of `libumad2sim.so`.
pub const UMAD2SIM_ENV: &str = "IBSIM_UMAD2SIM";

/// Well-known locations of `libumad2sim.so` (Debian/Ubuntu multiarch first, then RPM layouts).
const UMAD2SIM_CANDIDATES: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so",
    "/usr/lib/aarch64-linux-gnu/umad2sim/libumad2sim.so",
    "/usr/lib64/umad2sim/libumad2sim.so",
    "/usr/lib/umad2sim/libumad2sim.so",
    "/usr/local/lib/umad2sim/libumad2sim.so",
    "/usr/lib64/libumad2sim.so",
    "/usr/lib/libumad2sim.so",
];

/// Finds an executable by name: first in `$PATH`, then in the usual `sbin`/`bin` directories.
///
/// A name containing a `/` is returned as is if it is an executable file.
pub fn find_tool(name: impl AsRef<OsStr>) -> Option<PathBuf> {
    let name = name.as_ref();
    if Path::new(name).components().count() > 1 {
        let p = PathBuf::from(name);
        return is_executable(&p).then_some(p);
    }
    let path_dirs = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    path_dirs
        .into_iter()
        .chain(EXTRA_BIN_DIRS.iter().map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

/// The path of ibsim's `libumad2sim.so` preload shim, if installed.
///
/// Order: the `IBSIM_UMAD2SIM` environment variable (if it names an existing file), a list of
/// well-known locations, then any `/usr/lib/<multiarch>/umad2sim/libumad2sim.so`.
pub fn umad2sim_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(UMAD2SIM_ENV) {
        let p = PathBuf::from(p);
        if p.is_file() {
            return Some(p);
        }
    }
    if let Some(p) = UMAD2SIM_CANDIDATES
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
    {
        return Some(p);
    }
    // Any multiarch directory: /usr/lib/*/umad2sim/libumad2sim.so
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib")
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path().join("umad2sim/libumad2sim.so"))
        .filter(|p| p.is_file())
        .collect();
    found.sort();
    found.into_iter().next()
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_sh() {
        assert!(find_tool("sh").is_some());
        assert!(find_tool("/bin/sh").is_some());
        assert!(find_tool("definitely-not-a-tool-umadrs").is_none());
    }
}
