#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

use std::ffi::{OsStr, OsString};
use std::path::Path;

pub mod common;
pub mod debug;
pub mod dest;
pub mod dump_fts;
pub mod ibaddr;
pub mod iblinkinfo;
pub mod ibnetdiscover;
pub mod ibnodes;
pub mod ibportstate;
pub mod ibqueryerrors;
pub mod ibroute;
pub mod ibstat;
pub mod ibtracert;
pub mod perfquery;
pub mod saquery;
pub mod sim_ctl;
pub mod sim_serve;
pub mod sminfo;
pub mod smpdump;
pub mod smpquery;

/// Exit codes, as the C tools use them.
pub mod exit {
    /// Success (`--diff`: no differences).
    pub const OK: i32 = 0;
    /// `--diff`: the topologies differ.
    pub const DIFFERENCES: i32 = 1;
    /// Bad usage, or `-h` (infiniband-diags' `ibdiag_show_usage` exits 2).
    pub const USAGE: i32 = 2;
    /// A run-time failure (infiniband-diags' `IBEXIT`, i.e. `exit(-1)`).
    pub const FAILURE: i32 = 255;
    /// The output is printed but partial: the fabric stopped answering in the middle of a
    /// discovery (nothing answered, not even a probe of the node that answered last), so
    /// what was found is a prefix of the fabric. C's tools exit 0 there; scattered SMPs without
    /// an answer still exit 0, as in C.
    pub const PARTIAL: i32 = 3;
}

/// One tool of the multi-call binary.
pub struct Tool {
    /// Its name: `umad <name>`, or a link named `<name>`.
    pub name: &'static str,
    /// One line for `umad --help`.
    pub about: &'static str,
    /// Runs it: the program name to show in messages, the arguments after the tool name;
    /// returns the exit code.
    pub main: fn(prog: &'static str, args: Vec<OsString>) -> i32,
}

/// The tools, in `umad --help` order.
pub const TOOLS: &[Tool] = &[
    Tool {
        name: "ibnetdiscover",
        about: "discover the fabric's topology (text as infiniband-diags, --json, --diff)",
        main: ibnetdiscover::main,
    },
    Tool {
        name: "dump_fts",
        about: "dump every switch's unicast (or -M multicast) forwarding table",
        main: dump_fts::main,
    },
    Tool {
        name: "dump_lfts",
        about: "dump_fts, as infiniband-diags' dump_lfts.sh wrapper",
        main: dump_fts::main_lfts,
    },
    Tool {
        name: "dump_mfts",
        about: "dump_fts -M, as infiniband-diags' dump_mfts.sh wrapper",
        main: dump_fts::main_mfts,
    },
    Tool {
        name: "ibroute",
        about: "dump a switch's unicast or multicast forwarding table",
        main: ibroute::main,
    },
    Tool {
        name: "ibtracert",
        about: "trace the unicast (or -m multicast) route between two ports",
        main: ibtracert::main,
    },
    Tool {
        name: "saquery",
        about: "query the subnet administrator's records (text as infiniband-diags, --json)",
        main: saquery::main,
    },
    Tool {
        name: "smpquery",
        about: "query one SMP attribute (NodeInfo, PortInfo, SwitchInfo, PKeys, SL2VL, ...)",
        main: smpquery::main,
    },
    Tool {
        name: "ibstat",
        about: "show the local CAs and ports (-l names, -s short, -p port GUIDs)",
        main: ibstat::main,
    },
    Tool {
        name: "ibaddr",
        about: "show a port's GID and LID range (-g, -l, -L)",
        main: ibaddr::main,
    },
    Tool {
        name: "sminfo",
        about: "query (or set) a subnet manager's SMInfo",
        main: sminfo::main,
    },
    Tool {
        name: "smpdump",
        about: "dump one SMP attribute in hex (-s as a string)",
        main: smpdump::main,
    },
    Tool {
        name: "ibportstate",
        about: "query or change a port's state, width and speed (enable, disable, speed, ...)",
        main: ibportstate::main,
    },
    Tool {
        name: "ibswitches",
        about: "list the fabric's switches (ibnetdiscover's, or a topology file's)",
        main: ibnodes::ibswitches_main,
    },
    Tool {
        name: "ibhosts",
        about: "list the fabric's CAs (ibnetdiscover's, or a topology file's)",
        main: ibnodes::ibhosts_main,
    },
    Tool {
        name: "ibrouters",
        about: "list the fabric's routers (ibnetdiscover's, or a topology file's)",
        main: ibnodes::ibrouters_main,
    },
    Tool {
        name: "ibnodes",
        about: "list the fabric's CAs, then its switches (ibhosts; ibswitches)",
        main: ibnodes::ibnodes_main,
    },
    Tool {
        name: "perfquery",
        about: "read (and reset) performance counters (-x, -a, -l, -r, -R, -X, -S, -T, ...)",
        main: perfquery::main,
    },
    Tool {
        name: "iblinkinfo",
        about: "show every link of the fabric (-l line mode, -p, -d, --switches-only, -D/-G)",
        main: iblinkinfo::main,
    },
    Tool {
        name: "ibqueryerrors",
        about: "report port error counters beyond thresholds over the fabric (-k, -K, --data, ...)",
        main: ibqueryerrors::main,
    },
    Tool {
        name: "sim",
        about: "sim serve <netfile|name>: serve a simulated fabric over ibsim's socket \
                protocol; sim ctl <command>: control it (links, faults, counters, status)",
        main: sim_serve::main,
    },
];

/// The tool called `name`, if there is one.
pub fn find_tool(name: &str) -> Option<&'static Tool> {
    TOOLS.iter().find(|t| t.name == name)
}

/// Runs the binary with the process's own arguments; returns the exit code.
pub fn main_from_env() -> i32 {
    run(std::env::args_os())
}

/// Runs the binary with `args` (`args[0]` = how it was called); returns the exit code.
///
/// The basename of `args[0]` picks a tool when it names one; otherwise the first argument
/// does (`umad ibnetdiscover -p`).
pub fn run<I: IntoIterator<Item = OsString>>(args: I) -> i32 {
    let mut args: Vec<OsString> = args.into_iter().collect();
    let argv0 = if args.is_empty() {
        OsString::from("umad")
    } else {
        args.remove(0)
    };
    let called = Path::new(&argv0)
        .file_name()
        .map(OsStr::to_string_lossy)
        .unwrap_or_default()
        .into_owned();
    if let Some(tool) = find_tool(&called) {
        return common::run_tool(tool.main, tool.name, args);
    }
    let Some(first) = args.first().cloned() else {
        eprint!("{}", usage());
        return exit::USAGE;
    };
    match first.to_str() {
        Some("-h" | "--help" | "help") => {
            match args.get(1).and_then(|a| a.to_str()).and_then(find_tool) {
                // `umad help <tool>`: the tool's own help.
                Some(tool) => {
                    common::run_tool(tool.main, tool.name, vec![OsString::from("--help")])
                }
                None => {
                    print!("{}", usage());
                    exit::OK
                }
            }
        }
        Some("-V" | "--version") => {
            println!("umad {}", env!("CARGO_PKG_VERSION"));
            exit::OK
        }
        Some(name) => match find_tool(name) {
            Some(tool) => {
                args.remove(0);
                common::run_tool(tool.main, tool.name, args)
            }
            None => {
                eprintln!("umad: unknown tool {name:?}");
                eprint!("{}", usage());
                exit::USAGE
            }
        },
        None => {
            eprintln!("umad: unknown tool {:?}", first);
            exit::USAGE
        }
    }
}

/// `umad --help`: the tools and how to call them.
pub fn usage() -> String {
    let mut s = String::from(
        "umad: InfiniBand diagnostic tools over user MADs (umad-rs)\n\n\
         Usage: umad <tool> [options]   (or call a link named after the tool)\n\
         \x20      umad <tool> --help       the tool's options\n\nTools:\n",
    );
    let width = TOOLS.iter().map(|t| t.name.len()).max().unwrap_or(0);
    for t in TOOLS {
        s.push_str(&format!("  {:width$}  {}\n", t.name, t.about));
    }
    s.push_str(
        "\nThe port: -C/-P as infiniband-diags (kernel umad devices), or the ibsim simulator\n\
         when UMAD_IBSIM names its socket (UMAD_IBSIM_NODE: the node to attach to).\n",
    );
    s
}
