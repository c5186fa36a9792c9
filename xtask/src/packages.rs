//! Installing the Debian packages a command needs (the list is `ibsim_harness::debian_packages`).

use std::process::Command;

use ibsim_harness::{apt_install_command, missing_packages, Need};

/// What [`ensure`] does about a set of missing packages.
#[derive(Debug, PartialEq, Eq)]
enum Plan {
    /// Everything is there: apt is not touched.
    Nothing,
    /// Root: `apt-get update`, then `apt-get install -y` these.
    Install(Vec<&'static str>),
    /// Not root: stop with this message (it holds the exact command to run).
    Stop(String),
}

/// Makes sure every package needed for `needs` is installed before `command` (e.g.
/// `cargo xtask test`) goes on. Nothing missing: returns at once, without apt. Missing and
/// root: `apt-get update` once, then one `apt-get install -y` of exactly the missing ones.
/// Missing and not root: `Err` with the command to run.
pub fn ensure(needs: &[Need], command: &str) -> Result<(), String> {
    match plan(missing_packages(needs), is_root(), command) {
        Plan::Nothing => Ok(()),
        Plan::Stop(msg) => Err(msg),
        Plan::Install(missing) => {
            println!(
                "xtask: {command} needs {}; installing (running as root)",
                missing.join(" ")
            );
            apt(&["update"])?;
            let mut install = vec!["install", "-y"];
            install.extend(&missing);
            apt(&install)?;
            match missing_packages(needs).as_slice() {
                [] => Ok(()),
                still => Err(format!(
                    "still missing after apt-get install: {} (see the checks in \
                     crates/ibsim-harness/debian-packages)",
                    still.join(" ")
                )),
            }
        }
    }
}

fn plan(missing: Vec<&'static str>, root: bool, command: &str) -> Plan {
    if missing.is_empty() {
        Plan::Nothing
    } else if root {
        Plan::Install(missing)
    } else {
        Plan::Stop(format!(
            "{command} needs Debian packages that are not installed: {}. Install them with:\n    \
             sudo apt-get update && sudo {}",
            missing.join(" "),
            apt_install_command(&missing)
        ))
    }
}

/// Runs `apt-get ARGS` non-interactively; `Err` unless it succeeds.
pub(crate) fn apt(args: &[&str]) -> Result<(), String> {
    let mut cmd = Command::new("apt-get");
    cmd.args(args).env("DEBIAN_FRONTEND", "noninteractive");
    match cmd.status() {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("{cmd:?} failed: {s}")),
        Err(e) => Err(format!("{cmd:?}: {e}")),
    }
}

/// Effective uid 0, from `/proc/self/status` (xtask has no libc dependency).
pub(crate) fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().nth(1).map(|e| e == "0"))
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans() {
        assert_eq!(plan(vec![], true, "x"), Plan::Nothing);
        assert_eq!(plan(vec![], false, "x"), Plan::Nothing);
        assert_eq!(
            plan(vec!["valgrind", "gcc"], true, "x"),
            Plan::Install(vec!["valgrind", "gcc"])
        );
        assert_eq!(
            plan(vec!["valgrind", "gcc"], false, "cargo xtask test"),
            Plan::Stop(
                "cargo xtask test needs Debian packages that are not installed: valgrind gcc. \
                 Install them with:\n    sudo apt-get update && sudo apt-get install -y \
                 valgrind gcc"
                    .into()
            )
        );
    }

    #[test]
    fn is_root_does_not_panic() {
        let _ = is_root();
    }
}
