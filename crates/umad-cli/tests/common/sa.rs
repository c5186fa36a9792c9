//! A fabric whose SA answers whole RMPP tables: opensm resident on the project's drop-in
//! `libibumad` over `UMAD_IBSIM` (natively, no umad2sim: umad2sim cuts RMPP answers to one
//! MAD), attached at the netfile's first HCA; the C tools run on the drop-in natively too,
//! and ours natively, both from the second HCA. So both sides see whole tables.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use compat::Library;
use ibsim_harness::{find_tool, Ibsim, SmDaemon};

use super::{native, run, umad};

/// Exit code, stdout, stderr.
pub type Ran = (i32, String, String);

/// `out` as a [`Ran`].
pub fn ran(out: std::process::Output) -> Ran {
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The `Hca` node names of a netfile, in order.
pub fn hca_names(netfile: &Path) -> Vec<String> {
    std::fs::read_to_string(netfile)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("Hca"))
        .filter_map(|l| l.split('"').nth(1).map(str::to_string))
        .collect()
}

/// The tools' side of a drop-in SA fabric.
pub struct DropInSa<'a> {
    /// The simulator.
    pub sim: &'a Ibsim,
    /// The drop-in's directory.
    pub drop_in: PathBuf,
    /// The node opensm attaches to (the first HCA).
    pub sm_node: String,
    /// The node the tools attach to (the second HCA).
    pub tool_node: String,
}

impl<'a> DropInSa<'a> {
    /// The nodes of `sim`'s netfile; no SM started yet.
    pub fn new(sim: &'a Ibsim, drop_in: PathBuf) -> Self {
        let hcas = hca_names(sim.netfile());
        DropInSa {
            sim,
            drop_in,
            sm_node: hcas[0].clone(),
            tool_node: hcas[1].clone(),
        }
    }

    /// opensm resident on the drop-in, natively at [`Self::sm_node`] (SUBNET UP).
    pub fn start_sm(&self) -> SmDaemon<'a> {
        self.start_sm_with(&[])
    }

    /// [`Self::start_sm`] with extra opensm arguments (e.g. `["--lmc", "2"]`).
    pub fn start_sm_with(&self, args: &[&str]) -> SmDaemon<'a> {
        let sock = self.sim.socket_name().to_string();
        let node = self.sm_node.clone();
        let dir = self.drop_in.clone();
        self.sim
            .opensm()
            .configure(move |cmd| {
                cmd.env_remove("LD_PRELOAD")
                    .env_remove("IBSIM_SOCKNAME")
                    .env_remove("SIM_HOST")
                    .env("UMAD_IBSIM", &sock)
                    .env("UMAD_IBSIM_NODE", &node);
                Library::DropIn(dir).apply(cmd);
                Ok(())
            })
            .args(args)
            .start_daemon()
            .expect("opensm on the drop-in")
    }

    /// C `<tool> <args>` on the drop-in, natively at the tool node. C's `argv[0]` (its full
    /// path) is shortened to the tool name in its `iberror` lines.
    pub fn c(&self, tool: &str, args: &[&str]) -> Ran {
        let path = find_tool(tool).unwrap_or_else(|| panic!("{tool} installed"));
        let scratch = self.sim.new_scratch_dir(&format!("c-{tool}")).unwrap();
        let mut cmd = Command::new(&path);
        cmd.current_dir(scratch)
            .env("UMAD_IBSIM", self.sim.socket_name())
            .env("UMAD_IBSIM_NODE", &self.tool_node)
            .env_remove("LD_PRELOAD")
            .env_remove("IBSIM_SOCKNAME")
            .env_remove("SIM_HOST")
            .stdin(Stdio::null())
            .args(args);
        Library::DropIn(self.drop_in.clone()).apply(&mut cmd);
        let (code, out, err) = ran(run(&mut cmd));
        let prefix = format!("{}: iberror: ", path.display());
        let short = format!("{tool}: iberror: ");
        (
            code,
            out.replace(&prefix, &short),
            err.replace(&prefix, &short),
        )
    }

    /// `umad <tool> <args>`, natively at the tool node.
    pub fn ours(&self, tool: &str, args: &[&str]) -> Ran {
        let mut cmd = native(self.sim, &umad());
        cmd.env("UMAD_IBSIM_NODE", &self.tool_node)
            .arg(tool)
            .args(args);
        ran(run(&mut cmd))
    }
}
