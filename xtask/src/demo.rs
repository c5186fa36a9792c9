//! `cargo xtask demo`: start ibsim on the example fabric, bring the subnet up and show the C
//! tools next to the umad-rs examples.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use ibsim_harness::{example_fabric, example_net, find_tool, run_with_timeout, Ibsim, Need};

use umad::carrier::ibsim::ENV_SOCKET;

use crate::{cargo, workspace_root};

const RUN_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs the demo. `Err` carries a message for the user.
pub fn run() -> Result<(), String> {
    crate::packages::ensure(&[Need::Ibsim], "cargo xtask demo")?;
    let sim = Ibsim::start(example_fabric()).map_err(|e| format!("starting ibsim: {e}"))?;
    println!(
        "ibsim is running on {} (IBSIM_SOCKNAME={}, logs in {})",
        sim.netfile().display(),
        sim.socket_name(),
        sim.workdir().display()
    );
    sim.run_sm_once().map_err(|e| format!("opensm: {e}"))?;
    println!("opensm -o: subnet configured, all connected ports Active\n");

    let dr_host3 = dr_string(example_net::DR_HOST3);
    let mut failures = Vec::new();

    header("C ibstat (libibumad under LD_PRELOAD=libumad2sim.so)");
    if let Err(e) = c_tool(&sim, "ibstat", &[]) {
        failures.push(e);
    }
    header(&format!(
        "umad-rs ibstat: cargo run --quiet -p umad-cli --bin umad -- ibstat ({ENV_SOCKET}={})",
        sim.socket_name()
    ));
    if let Err(e) = umad_tool(&sim, &["ibstat"]) {
        failures.push(e);
    }
    header(&format!(
        "C smpquery -D nodeinfo {dr_host3} (H-host3, 3 hops away)"
    ));
    if let Err(e) = c_tool(&sim, "smpquery", &["-D", "nodeinfo", &dr_host3]) {
        failures.push(e);
    }
    header(&format!(
        "umad-rs smpquery: cargo run --quiet -p umad-cli --bin umad -- smpquery -D nodeinfo {dr_host3}"
    ));
    if let Err(e) = umad_tool(&sim, &["smpquery", "-D", "nodeinfo", &dr_host3]) {
        failures.push(e);
    }
    header(&format!(
        "umad-rs nodeinfo: cargo run --quiet -p umad --example nodeinfo -- {dr_host3}"
    ));
    if let Err(e) = example(&sim, "nodeinfo", &[&dr_host3]) {
        failures.push(e);
    }
    let dr_sw1 = dr_string(example_net::DR_SW1);
    header(&format!(
        "umad-rs nodeinfo: cargo run --quiet -p umad --example nodeinfo -- {dr_sw1} (S-sw1)"
    ));
    if let Err(e) = example(&sim, "nodeinfo", &[&dr_sw1]) {
        failures.push(e);
    }

    if let Err(e) = ibnetdiscover_side_by_side(&sim) {
        failures.push(e);
    }

    drop(sim);
    println!();
    if failures.is_empty() {
        println!("demo finished; ibsim stopped and its scratch directory removed");
        Ok(())
    } else {
        Err(format!(
            "demo had {} failure(s):\n  {}",
            failures.len(),
            failures.join("\n  ")
        ))
    }
}

fn header(title: &str) {
    println!("\n===== {title} =====");
}

/// `0,1,8,1`-style directed route (the leading 0 is the local port, as in the C tools).
fn dr_string(path: &[u8]) -> String {
    std::iter::once("0".to_owned())
        .chain(path.iter().map(u8::to_string))
        .collect::<Vec<_>>()
        .join(",")
}

/// Runs a C infiniband-diags tool under umad2sim and prints its output.
fn c_tool(sim: &Ibsim, tool: &str, args: &[&str]) -> Result<(), String> {
    let path = find_tool(tool).ok_or_else(|| {
        let msg = format!("{tool} not found");
        println!("{msg}");
        msg
    })?;
    let mut cmd = sim.umad2sim_command(path);
    cmd.args(args);
    run_and_print(&mut cmd, tool)
}

/// Builds and runs `cargo run --quiet -p umad --example NAME -- ARGS` with `UMAD_IBSIM` set.
fn example(sim: &Ibsim, name: &str, args: &[&str]) -> Result<(), String> {
    let root = workspace_root();
    let examples = root.join("crates/umad/examples");
    if !example_exists(&examples, name) {
        let msg = format!(
            "missing example `{name}`: expected {}/{name}.rs (or {name}/main.rs) in the umad crate",
            examples.display()
        );
        println!("{msg}");
        return Err(msg);
    }
    // Build first (output streamed, no time limit), then run with a time limit.
    let built = Command::new(cargo())
        .args(["build", "--quiet", "-p", "umad", "--example", name])
        .current_dir(&root)
        .status()
        .map_err(|e| format!("cargo build --example {name}: {e}"))?;
    if !built.success() {
        let msg = format!("cargo build -p umad --example {name} failed: {built}");
        println!("{msg}");
        return Err(msg);
    }
    let mut cmd = Command::new(cargo());
    cmd.args(["run", "--quiet", "-p", "umad", "--example", name, "--"])
        .args(args)
        .current_dir(&root)
        .env(ENV_SOCKET, sim.socket_name());
    run_and_print(&mut cmd, &format!("example {name}"))
}

/// The first line of ibnetdiscover's output carries the time it ran.
fn mask_date(text: &str) -> String {
    text.lines()
        .map(|l| {
            if l.starts_with("# Topology file: generated on ") {
                "# Topology file: generated on <date>"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `umad ibnetdiscover` (native ibsim transport) next to the C `ibnetdiscover` (umad2sim) on
/// the same fabric: ours printed, then the two compared byte for byte but the date line;
/// then the start of `--json`.
fn ibnetdiscover_side_by_side(sim: &Ibsim) -> Result<(), String> {
    let root = workspace_root();
    let built = Command::new(cargo())
        .args(["build", "--quiet", "-p", "umad-cli", "--bin", "umad"])
        .current_dir(&root)
        .status()
        .map_err(|e| format!("cargo build -p umad-cli: {e}"))?;
    if !built.success() {
        return Err(format!("cargo build -p umad-cli failed: {built}"));
    }
    let umad = |args: &[&str]| {
        let mut cmd = Command::new(cargo());
        cmd.args(["run", "--quiet", "-p", "umad-cli", "--bin", "umad", "--"])
            .args(args)
            .current_dir(&root)
            .env(ENV_SOCKET, sim.socket_name());
        run_with_timeout(&mut cmd, RUN_TIMEOUT).map_err(|e| format!("umad {args:?}: {e}"))
    };
    header(&format!(
        "umad ibnetdiscover: cargo run --quiet -p umad-cli -- ibnetdiscover ({ENV_SOCKET}={})",
        sim.socket_name()
    ));
    let ours = umad(&["ibnetdiscover"])?;
    let ours_text = String::from_utf8_lossy(&ours.stdout).into_owned();
    print!("{ours_text}");
    eprint!("{}", String::from_utf8_lossy(&ours.stderr));
    if !ours.status.success() {
        return Err(format!("umad ibnetdiscover failed: {}", ours.status));
    }
    let path = find_tool("ibnetdiscover").ok_or("the C ibnetdiscover is not installed")?;
    let c = run_with_timeout(&mut sim.umad2sim_command(path), RUN_TIMEOUT)
        .map_err(|e| format!("C ibnetdiscover: {e}"))?;
    let c_text = String::from_utf8_lossy(&c.stdout).into_owned();
    header("C ibnetdiscover (libibumad under LD_PRELOAD=libumad2sim.so), compared");
    if mask_date(&c_text) == mask_date(&ours_text) {
        println!(
            "identical to umad ibnetdiscover ({} lines; only the date line masked)",
            c_text.lines().count()
        );
    } else {
        print!("{c_text}");
        return Err("umad ibnetdiscover differs from the C ibnetdiscover".into());
    }
    header("umad ibnetdiscover --json (first 12 lines; schema in docs/json/)");
    let json = umad(&["ibnetdiscover", "--json"])?;
    for line in String::from_utf8_lossy(&json.stdout).lines().take(12) {
        println!("{line}");
    }
    if json.status.success() {
        Ok(())
    } else {
        Err(format!("umad ibnetdiscover --json failed: {}", json.status))
    }
}

/// Builds and runs `cargo run --quiet -p umad-cli --bin umad -- ARGS` with `UMAD_IBSIM` set.
fn umad_tool(sim: &Ibsim, args: &[&str]) -> Result<(), String> {
    let root = workspace_root();
    let built = Command::new(cargo())
        .args(["build", "--quiet", "-p", "umad-cli", "--bin", "umad"])
        .current_dir(&root)
        .status()
        .map_err(|e| format!("cargo build -p umad-cli: {e}"))?;
    if !built.success() {
        let msg = format!("cargo build -p umad-cli --bin umad failed: {built}");
        println!("{msg}");
        return Err(msg);
    }
    let mut cmd = Command::new(cargo());
    cmd.args(["run", "--quiet", "-p", "umad-cli", "--bin", "umad", "--"])
        .args(args)
        .current_dir(&root)
        .env(ENV_SOCKET, sim.socket_name());
    run_and_print(&mut cmd, &format!("umad {}", args.join(" ")))
}

fn example_exists(examples: &Path, name: &str) -> bool {
    examples.join(format!("{name}.rs")).is_file() || examples.join(name).join("main.rs").is_file()
}

fn run_and_print(cmd: &mut Command, what: &str) -> Result<(), String> {
    let out = run_with_timeout(cmd, RUN_TIMEOUT).map_err(|e| {
        let msg = format!("{what}: {e}");
        println!("{msg}");
        msg
    })?;
    print!("{}", String::from_utf8_lossy(&out.stdout));
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    if out.status.success() {
        Ok(())
    } else {
        let msg = format!("{what} failed: {}", out.status);
        println!("{msg}");
        Err(msg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dr_strings() {
        assert_eq!(dr_string(&[]), "0");
        assert_eq!(dr_string(example_net::DR_HOST3), "0,1,8,1");
    }
}
