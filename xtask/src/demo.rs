//! `cargo xtask demo`: the umad-rs tools on the example fabric simulated in this process
//! (`UMAD_SIM`, nothing installed), then — when ibsim, umad2sim and opensm are installed, or
//! with `--with-c` — ibsim on the same fabric, brought up by opensm, with the C tools next to
//! ours.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use ibsim_harness::{
    example_fabric, example_net, find_tool, missing_packages, run_with_timeout, Ibsim, Need,
};

use umad::carrier::ibsim::{ENV_NODE, ENV_SOCKET};
use umad::carrier::sim::{ENV_SIM, ENV_SIM_NODE, ENV_SIM_UNCONFIGURED};

use crate::{cargo, workspace_root};

const RUN_TIMEOUT: Duration = Duration::from_secs(60);

/// Lines of `umad ibnetdiscover --json` shown.
const JSON_LINES: usize = 12;

/// `cargo xtask demo [--with-c]`.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Opts {
    /// Run the side-by-side with the C tools even when they are not installed (installing
    /// them as root, else naming the command), instead of skipping it.
    pub with_c: bool,
}

/// Parses the arguments after `demo`.
pub fn parse_args(args: &[String]) -> Result<Opts, String> {
    let mut opts = Opts::default();
    for a in args {
        match a.as_str() {
            "--with-c" => opts.with_c = true,
            other => {
                return Err(format!(
                    "demo: unknown argument {other:?} (expected --with-c)"
                ))
            }
        }
    }
    Ok(opts)
}

/// What happens to the part with the C tools.
#[derive(Debug, PartialEq, Eq)]
enum CPart {
    /// Everything it needs is installed: run it (apt is not touched).
    Run,
    /// `--with-c`: install what is missing (as [`crate::packages::ensure`] does), then run it.
    Install,
    /// Not installed and not asked for: skip it, naming these missing packages.
    Skip(Vec<&'static str>),
}

fn c_part(with_c: bool, missing: Vec<&'static str>) -> CPart {
    if with_c {
        CPart::Install
    } else if missing.is_empty() {
        CPart::Run
    } else {
        CPart::Skip(missing)
    }
}

/// Runs the demo. `Err` carries a message for the user.
pub fn run(opts: &Opts) -> Result<(), String> {
    let root = workspace_root();
    let mut failures = in_process(&root)?;

    match c_part(opts.with_c, missing_packages(&[Need::Ibsim])) {
        CPart::Skip(missing) => {
            println!(
                "\nThe same tools next to the C ones (ibsim + umad2sim + opensm) were skipped: \
                 {} not installed; `cargo xtask demo --with-c` installs them (as root, else \
                 names the command) and runs that part too.",
                missing.join(" ")
            );
        }
        part => {
            if part == CPart::Install {
                crate::packages::ensure(&[Need::Ibsim], "cargo xtask demo --with-c")?;
            }
            failures.extend(with_ibsim()?);
        }
    }

    println!();
    if failures.is_empty() {
        println!("demo finished");
        Ok(())
    } else {
        Err(format!(
            "demo had {} failure(s):\n  {}",
            failures.len(),
            failures.join("\n  ")
        ))
    }
}

/// The example fabric as the demo names it: relative to the workspace root (where the
/// commands run and where a user types them) when it is inside it.
fn shown_netfile(root: &Path) -> PathBuf {
    let net = example_fabric();
    net.strip_prefix(root).map(Path::to_owned).unwrap_or(net)
}

/// The LIDs the configured start gives the nodes the demo queries by LID: what
/// `umad::Port::open` sees under `UMAD_SIM` (ibnetsim's `Fabric::configure`).
#[derive(Debug, Clone, Copy)]
struct Lids {
    host1: u16,
    host3: u16,
    sw1: u16,
}

fn lids(netfile: &Path) -> Result<Lids, String> {
    let mut fabric = ibnetsim::Fabric::load(netfile)
        .map_err(|e| format!("loading {}: {e}", netfile.display()))?;
    fabric.configure(None);
    let lid = |id: &str, port: u8| {
        let node = fabric
            .find_id(id)
            .ok_or_else(|| format!("{} has no node {id:?}", netfile.display()))?;
        match fabric.lid_of(node, port) {
            0 => Err(format!("{id} port {port} got no LID")),
            lid => Ok(lid),
        }
    };
    Ok(Lids {
        host1: lid(example_net::ATTACH_NODE, 1)?,
        host3: lid("H-host3", 1)?,
        sw1: lid("S-sw1", 0)?,
    })
}

/// What one step of the in-process part runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bin {
    /// `umad` (crates/umad-cli).
    Cli,
    /// An example of the umad crate.
    Example(&'static str),
}

/// One command of the in-process part.
#[derive(Debug)]
struct Step {
    bin: Bin,
    args: Vec<String>,
    /// Shown after the command as a shell comment.
    note: String,
    /// Print only this many lines of its output.
    max_lines: Option<usize>,
}

impl Step {
    fn cargo_args(&self) -> Vec<String> {
        let mut a: Vec<String> = match self.bin {
            Bin::Cli => ["run", "--quiet", "-p", "umad-cli", "--bin", "umad", "--"]
                .map(String::from)
                .to_vec(),
            Bin::Example(name) => ["run", "--quiet", "-p", "umad", "--example", name, "--"]
                .map(String::from)
                .to_vec(),
        };
        a.extend(self.args.iter().cloned());
        a
    }

    /// The command a user types from the workspace root.
    fn command_line(&self, netfile: &Path) -> String {
        format!(
            "{ENV_SIM}={} cargo {}",
            netfile.display(),
            self.cargo_args().join(" ")
        )
    }

    /// That command, run from `root`, with only `UMAD_SIM` of the simulator variables.
    fn command(&self, root: &Path, netfile: &Path) -> Command {
        let mut cmd = Command::new(cargo());
        cmd.args(self.cargo_args())
            .current_dir(root)
            .env(ENV_SIM, netfile);
        for var in [ENV_SIM_NODE, ENV_SIM_UNCONFIGURED, ENV_SOCKET, ENV_NODE] {
            cmd.env_remove(var);
        }
        cmd
    }
}

/// The in-process part's commands, in order.
fn in_process_steps(lids: Lids) -> Vec<Step> {
    let dr_host3 = dr_string(example_net::DR_HOST3);
    let cli = |args: &[&str], note: &str| Step {
        bin: Bin::Cli,
        args: args.iter().map(|s| s.to_string()).collect(),
        note: note.to_owned(),
        max_lines: None,
    };
    let (h1, h3, sw1) = (
        lids.host1.to_string(),
        lids.host3.to_string(),
        lids.sw1.to_string(),
    );
    vec![
        cli(&["ibstat"], "the simulated CA, at H-host1"),
        cli(&["ibnetdiscover"], ""),
        Step {
            max_lines: Some(JSON_LINES),
            ..cli(
                &["ibnetdiscover", "--json"],
                &format!("first {JSON_LINES} lines; schema in docs/json/"),
            )
        },
        cli(
            &["smpquery", "-D", "nodeinfo", &dr_host3],
            "H-host3, 3 hops away",
        ),
        cli(&["smpquery", "nodedesc", &h3], "H-host3 by LID"),
        cli(&["iblinkinfo"], ""),
        cli(&["ibroute", &sw1], "S-sw1's forwarding table"),
        cli(&["ibtracert", &h1, &h3], "H-host1 to H-host3"),
        cli(&["ibswitches"], ""),
        cli(&["ibhosts"], ""),
        Step {
            bin: Bin::Example("nodeinfo"),
            args: vec![dr_host3],
            note: "the library example of the README".into(),
            max_lines: None,
        },
    ]
}

/// The umad-rs tools on the example fabric simulated in this process: needs nothing
/// installed. `Ok` holds the failed steps; `Err` a build that failed.
fn in_process(root: &Path) -> Result<Vec<String>, String> {
    let netfile = shown_netfile(root);
    let steps = in_process_steps(lids(&root.join(&netfile))?);
    println!(
        "umad-rs on {} simulated in this process ({ENV_SIM}): no ibsim, no SM, no kernel module",
        netfile.display()
    );
    build(&["-p", "umad-cli", "--bin", "umad"])?;
    build(&["-p", "umad", "--example", "nodeinfo"])?;
    let mut failures = Vec::new();
    for step in &steps {
        let line = step.command_line(&netfile);
        if step.note.is_empty() {
            header(&line);
        } else {
            header(&format!("{line}   # {}", step.note));
        }
        if let Err(e) = run_and_print(&mut step.command(root, &netfile), &line, step.max_lines) {
            failures.push(e);
        }
    }
    Ok(failures)
}

/// `cargo build --quiet ARGS` in the workspace, output streamed, no time limit.
fn build(args: &[&str]) -> Result<(), String> {
    let built = Command::new(cargo())
        .args(["build", "--quiet"])
        .args(args)
        .current_dir(workspace_root())
        .status()
        .map_err(|e| format!("cargo build {}: {e}", args.join(" ")))?;
    if built.success() {
        Ok(())
    } else {
        Err(format!("cargo build {} failed: {built}", args.join(" ")))
    }
}

/// ibsim on the example fabric, opensm once, and the C tools next to ours on the same ports.
/// `Ok` holds the failed steps; `Err` a simulator that did not come up.
fn with_ibsim() -> Result<Vec<String>, String> {
    println!("\nThe same fabric on ibsim, next to the C tools (libibumad under umad2sim)");
    let sim = Ibsim::start(example_fabric()).map_err(|e| format!("starting ibsim: {e}"))?;
    println!(
        "ibsim is running on {} ({ENV_SOCKET}={}, logs in {})",
        sim.netfile().display(),
        sim.socket_name(),
        sim.workdir().display()
    );
    sim.run_sm_once().map_err(|e| format!("opensm: {e}"))?;
    println!("opensm -o: subnet configured, all connected ports Active");

    let dr_host3 = dr_string(example_net::DR_HOST3);
    let mut failures = Vec::new();

    header("C ibstat (libibumad under LD_PRELOAD=libumad2sim.so)");
    if let Err(e) = c_tool(&sim, "ibstat", &[]) {
        failures.push(e);
    }
    let ibstat = ["ibstat"];
    header(&umad_ibsim_line(&sim, &ibstat));
    if let Err(e) = umad_tool(&sim, &ibstat) {
        failures.push(e);
    }
    header(&format!(
        "C smpquery -D nodeinfo {dr_host3} (H-host3, 3 hops away)"
    ));
    if let Err(e) = c_tool(&sim, "smpquery", &["-D", "nodeinfo", &dr_host3]) {
        failures.push(e);
    }
    let smpquery = ["smpquery", "-D", "nodeinfo", &dr_host3];
    header(&umad_ibsim_line(&sim, &smpquery));
    if let Err(e) = umad_tool(&sim, &smpquery) {
        failures.push(e);
    }

    if let Err(e) = ibnetdiscover_side_by_side(&sim) {
        failures.push(e);
    }

    drop(sim);
    println!("\nibsim stopped and its scratch directory removed");
    Ok(failures)
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
    run_and_print(&mut cmd, tool, None)
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

/// `cargo run --quiet -p umad-cli --bin umad -- ARGS` over ibsim's socket (`UMAD_IBSIM`),
/// with none of the in-process simulator's variables (both kinds set is refused).
fn umad_ibsim_command(sim: &Ibsim, args: &[&str]) -> Command {
    let mut cmd = Command::new(cargo());
    cmd.args(["run", "--quiet", "-p", "umad-cli", "--bin", "umad", "--"])
        .args(args)
        .current_dir(workspace_root())
        .env(ENV_SOCKET, sim.socket_name());
    for var in [ENV_SIM, ENV_SIM_NODE, ENV_SIM_UNCONFIGURED, ENV_NODE] {
        cmd.env_remove(var);
    }
    cmd
}

fn umad_ibsim_line(sim: &Ibsim, args: &[&str]) -> String {
    format!(
        "{ENV_SOCKET}={} cargo run --quiet -p umad-cli --bin umad -- {}",
        sim.socket_name(),
        args.join(" ")
    )
}

/// `umad ibnetdiscover` (native ibsim transport) next to the C `ibnetdiscover` (umad2sim) on
/// the same fabric: ours printed, then the two compared byte for byte but the date line.
fn ibnetdiscover_side_by_side(sim: &Ibsim) -> Result<(), String> {
    let args = ["ibnetdiscover"];
    header(&umad_ibsim_line(sim, &args));
    let ours = run_with_timeout(&mut umad_ibsim_command(sim, &args), RUN_TIMEOUT)
        .map_err(|e| format!("umad ibnetdiscover: {e}"))?;
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
        Ok(())
    } else {
        print!("{c_text}");
        Err("umad ibnetdiscover differs from the C ibnetdiscover".into())
    }
}

/// Runs `cargo run --quiet -p umad-cli --bin umad -- ARGS` over ibsim (built by the
/// in-process part already).
fn umad_tool(sim: &Ibsim, args: &[&str]) -> Result<(), String> {
    run_and_print(
        &mut umad_ibsim_command(sim, args),
        &format!("umad {}", args.join(" ")),
        None,
    )
}

/// Runs `cmd` with a time limit and prints its output (stdout cut to `max_lines` lines when
/// given); `Err` (also printed) unless it succeeds.
fn run_and_print(cmd: &mut Command, what: &str, max_lines: Option<usize>) -> Result<(), String> {
    let out = run_with_timeout(cmd, RUN_TIMEOUT).map_err(|e| {
        let msg = format!("{what}: {e}");
        println!("{msg}");
        msg
    })?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    match max_lines {
        Some(n) => stdout.lines().take(n).for_each(|l| println!("{l}")),
        None => print!("{stdout}"),
    }
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

    #[test]
    fn args() {
        assert_eq!(parse_args(&[]), Ok(Opts { with_c: false }));
        assert_eq!(parse_args(&["--with-c".into()]), Ok(Opts { with_c: true }));
        assert!(parse_args(&["--with-C".into()]).is_err());
    }

    /// Without ibsim and without `--with-c`, the C part is skipped (nothing is installed);
    /// `--with-c` installs; everything present runs it without apt.
    #[test]
    fn c_part_decision() {
        let missing = vec!["ibsim-utils", "opensm", "infiniband-diags"];
        assert_eq!(c_part(false, missing.clone()), CPart::Skip(missing.clone()));
        assert_eq!(c_part(true, missing), CPart::Install);
        assert_eq!(c_part(false, vec![]), CPart::Run);
        assert_eq!(c_part(true, vec![]), CPart::Install);
    }

    /// The in-process part needs no ibsim: its LIDs come from ibnetsim here, and every
    /// command it runs is cargo running our own binaries with `UMAD_SIM` set and ibsim's
    /// socket variable removed, exactly as its header says.
    #[test]
    fn in_process_part_needs_no_ibsim() {
        let root = workspace_root();
        let netfile = shown_netfile(&root);
        assert_eq!(netfile, Path::new("fabrics/example.net"));
        let lids = lids(&root.join(&netfile)).unwrap();
        assert!(lids.host1 != lids.host3 && lids.host3 != lids.sw1);
        let steps = in_process_steps(lids);
        assert_eq!(
            steps[0].command_line(&netfile),
            "UMAD_SIM=fabrics/example.net cargo run --quiet -p umad-cli --bin umad -- ibstat"
        );
        let tools: Vec<&str> = steps.iter().map(|s| s.args[0].as_str()).collect();
        for tool in [
            "ibstat",
            "ibnetdiscover",
            "smpquery",
            "iblinkinfo",
            "ibroute",
            "ibtracert",
            "ibswitches",
            "ibhosts",
        ] {
            assert!(tools.contains(&tool), "{tool} missing from {tools:?}");
        }
        for step in &steps {
            let cmd = step.command(&root, &netfile);
            assert_eq!(cmd.get_program(), cargo());
            let args: Vec<String> = cmd
                .get_args()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            assert!(step
                .command_line(&netfile)
                .ends_with(&format!("cargo {}", args.join(" "))));
            let envs: Vec<_> = cmd.get_envs().collect();
            assert!(envs.contains(&(ENV_SIM.as_ref(), Some(netfile.as_os_str()))));
            assert!(envs.contains(&(ENV_SOCKET.as_ref(), None)));
            assert!(!args
                .iter()
                .any(|a| a.contains("umad2sim") || a.contains("ibsim")));
        }
    }
}
