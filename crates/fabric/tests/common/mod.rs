//! What the fixture tests share: the fabrics, the flag sets and how the C tool is run.
#![allow(dead_code)]

use std::path::PathBuf;
use std::time::Duration;

use ibsim_harness::{fabrics_dir, run_with_timeout, Ibsim};

/// The fabrics captured: file stems under `fabrics/` or, for `mixed`, `tests/data/`.
pub const FABRICS: [&str; 3] = ["example", "fattree-1008", "mixed"];

/// One captured `ibnetdiscover` invocation.
pub struct Case {
    /// File-name part: `tests/data/<fabric>.<name>.txt`.
    pub name: &'static str,
    /// Arguments to `ibnetdiscover`.
    pub args: &'static [&'static str],
}

/// Every flag set captured.
pub const CASES: &[Case] = &[
    Case {
        name: "default",
        args: &[],
    },
    Case {
        name: "ports",
        args: &["-p"],
    },
    Case {
        name: "show",
        args: &["-s"],
    },
    Case {
        name: "hca_list",
        args: &["-H"],
    },
    Case {
        name: "switch_list",
        args: &["-S"],
    },
    Case {
        name: "router_list",
        args: &["-R"],
    },
    Case {
        name: "list",
        args: &["-l"],
    },
    Case {
        name: "grouping",
        args: &["-g"],
    },
    Case {
        name: "full",
        args: &["-f"],
    },
    Case {
        name: "max_hops",
        args: &["-m"],
    },
    Case {
        name: "node_name_map",
        args: &["--node-name-map", "@MAP@"],
    },
];

/// `tests/data/<fabric>.<case>.txt`.
pub fn fixture_path(fabric: &str, case: &str) -> PathBuf {
    data_dir().join(format!("{fabric}.{case}.txt"))
}

/// `crates/fabric/tests/data`.
pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// The node-name map used by the `node_name_map` case.
pub fn name_map_path() -> PathBuf {
    data_dir().join("node-name-map")
}

/// ibsim on `fabrics/<fabric>.net` after one opensm sweep (so LIDs exist).
pub fn start(fabric: &str) -> Ibsim {
    let file = format!("{fabric}.net");
    let path = if data_dir().join(&file).exists() {
        data_dir().join(file)
    } else {
        fabrics_dir().join(file)
    };
    let sim = Ibsim::start(&path).expect("start ibsim");
    sim.run_sm_once().expect("opensm sweep");
    sim
}

/// Runs the C `ibnetdiscover` with `args` against `sim`; its stdout.
pub fn run_c(sim: &Ibsim, args: &[&str]) -> String {
    let map = name_map_path();
    let mut cmd = sim.umad2sim_command("ibnetdiscover");
    for a in args {
        if *a == "@MAP@" {
            cmd.arg(&map);
        } else {
            cmd.arg(a);
        }
    }
    let out = run_with_timeout(&mut cmd, Duration::from_secs(120)).expect("run ibnetdiscover");
    assert!(
        out.status.success(),
        "ibnetdiscover {args:?}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}
