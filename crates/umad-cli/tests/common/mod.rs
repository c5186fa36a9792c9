//! What the umad-cli tests share.
#![allow(dead_code)]

pub mod schema;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use ibfabric::Fabric;

/// The built `umad` binary.
pub fn umad() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_umad"))
}

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The JSON schema of `--json`, parsed.
pub fn topology_schema() -> serde_json::Value {
    let p = repo_root().join("docs/json/ibnetdiscover-v1.schema.json");
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
}

/// The JSON schema of `--diff --json`, parsed.
pub fn diff_schema() -> serde_json::Value {
    let p = repo_root().join("docs/json/ibnetdiscover-diff-v1.schema.json");
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
}

/// Asserts that `json` is valid against `schema`.
pub fn assert_valid(schema: &serde_json::Value, json: &str) {
    let v: serde_json::Value = serde_json::from_str(json).expect("output is JSON");
    let errors = schema::validate(schema, &v);
    assert!(
        errors.is_empty(),
        "schema violations:\n{}",
        errors.join("\n")
    );
}

/// Runs `cmd` (at most 120 s), returning its output.
pub fn run(cmd: &mut Command) -> Output {
    ibsim_harness::run_with_timeout(cmd, Duration::from_secs(120)).expect("command runs")
}

/// ibfabric's small hand-built fabric ([`ibfabric::test_fabrics::small`]).
pub fn small_fabric() -> Fabric {
    ibfabric::test_fabrics::small()
}

/// The C `ibnetdiscover` outputs captured by ibfabric's tests.
pub fn c_fixture(name: &str) -> PathBuf {
    repo_root().join("crates/fabric/tests/data").join(name)
}

/// `text` without the `# Topology file: generated on <date>` line.
pub fn mask_date(text: &str) -> String {
    text.lines()
        .filter(|l| !l.starts_with("# Topology file: generated on "))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// `umad <args>` (or the program at `program`, e.g. a link) as a native ibsim client of
/// `sim`: a fresh scratch cwd, `UMAD_IBSIM=<socket>`, nothing preloaded.
pub fn native(sim: &ibsim_harness::Ibsim, program: &Path) -> Command {
    let scratch = sim.new_scratch_dir("umad").expect("scratch directory");
    let mut cmd = Command::new(program);
    cmd.current_dir(scratch)
        .env("UMAD_IBSIM", sim.socket_name())
        .env_remove("UMAD_IBSIM_NODE")
        .env_remove("LD_PRELOAD")
        .env_remove("IBSIM_SOCKNAME")
        .env_remove("SIM_HOST")
        .stdin(std::process::Stdio::null());
    cmd
}

/// `umad ibnetdiscover <args>` against `sim`; returns (exit code, stdout).
pub fn ours(sim: &ibsim_harness::Ibsim, args: &[&str]) -> (i32, String) {
    let out = run(native(sim, &umad()).arg("ibnetdiscover").args(args));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// C `ibnetdiscover <args>` against `sim` under umad2sim; returns (exit code, stdout).
pub fn c_tool(sim: &ibsim_harness::Ibsim, args: &[&str]) -> (i32, String) {
    let out = run(sim.umad2sim_command("ibnetdiscover").args(args));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// C `<tool> <args>` under umad2sim: exit code and stdout. C names itself by `argv[0]`, the full path the harness ran: the
/// `iberror` lines are compared with the tool's name.
pub fn c_run(sim: &ibsim_harness::Ibsim, tool: &str, args: &[&str]) -> (i32, String) {
    let out = run(sim.umad2sim_command(tool).args(args));
    let text = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| match l.split_once(": iberror: ") {
            Some((p, rest)) if p.ends_with(&format!("/{tool}")) => {
                format!("{tool}: iberror: {rest}\n")
            }
            _ => format!("{l}\n"),
        })
        .collect();
    (out.status.code().unwrap_or(-1), text)
}

/// `umad <tool> <args>` natively: exit code and stdout.
pub fn our_run(sim: &ibsim_harness::Ibsim, tool: &str, args: &[&str]) -> (i32, String) {
    let out = run(native(sim, &umad()).arg(tool).args(args));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// (GUID, LID) of every switch in C `ibnetdiscover` output.
pub fn switches(text: &str) -> Vec<(String, String)> {
    let mut guid = None;
    let mut out = Vec::new();
    for l in text.lines() {
        if let Some(g) = l.strip_prefix("switchguid=") {
            guid = g.split('(').next().map(str::to_string);
        }
        if l.starts_with("Switch") {
            let lid = l
                .split(" lid ")
                .nth(1)
                .and_then(|r| r.split_whitespace().next());
            if let (Some(g), Some(lid)) = (guid.take(), lid) {
                out.push((g, lid.to_string()));
            }
        }
    }
    out
}

/// The LID of each CA's first port in C `ibnetdiscover` output.
pub fn ca_lids(text: &str) -> Vec<String> {
    let mut in_ca = false;
    let mut out = Vec::new();
    for l in text.lines() {
        if l.starts_with("Ca") {
            in_ca = true;
        } else if in_ca && l.starts_with('[') {
            if let Some(lid) = l
                .split("# lid ")
                .nth(1)
                .and_then(|r| r.split_whitespace().next())
            {
                out.push(lid.to_string());
            }
            in_ca = false;
        }
    }
    out
}

/// Joins the port of the ibsim node `node` (a description) to the multicast group `mgid` as
/// a full member: an SA Set(MCMemberRecord) from that port.
pub fn join(sim: &ibsim_harness::Ibsim, node: &str, mgid: ibmad::Gid) {
    let mut o = umad::IbsimOptions::new(sim.socket_name());
    o.node = Some(node.to_string());
    let port = umad::Port::open_ibsim(&o).expect("attach");
    let attrs = port.ca().unwrap().port(port.port_num()).unwrap().clone();
    let rpc = umad::rpc::Rpc::new(port);
    let rec = ibmad::sa::McMemberRecord {
        mgid,
        port_gid: ibmad::Gid::new(attrs.gid_prefix, attrs.port_guid),
        join_state: ibmad::sa::mc_member_record::join_state::FULL_MEMBER,
        ..ibmad::sa::McMemberRecord::default()
    };
    let mad = ibmad::SaMad::record_request(
        ibmad::Method::Set,
        &rec,
        {
            use ibmad::sa::mc_member_record::comp;
            comp::MGID | comp::PORT_GID | comp::JOIN_STATE
        },
        0,
    );
    let done = rpc
        .call(rpc.request(mad, rpc.sa_addr().unwrap()))
        .unwrap()
        .into_response(rpc.port())
        .unwrap();
    let sa = ibmad::SaMad::new_checked(&done.mad[..]).unwrap();
    assert_eq!(sa.status().raw(), 0, "join of {node}");
}

/// `[PortXmitData == 123 (0.480KB)]` and the like with the numbers masked.
pub fn mask_data(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(" [") {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        let end = tail.find(']').map_or(tail.len(), |e| e + 1);
        let item = &tail[..end];
        let traffic = ["Data ==", "Pkts =="].iter().any(|k| item.contains(k));
        if traffic {
            let name_end = item.find(" ==").unwrap_or(item.len());
            out.push_str(&item[..name_end]);
            out.push_str(" == N]");
        } else {
            out.push_str(item);
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// The counters ibsim changes with the tools' own traffic.
pub const TRAFFIC: &[&str] = &[
    "PortXmitData:",
    "PortRcvData:",
    "PortXmitPkts:",
    "PortRcvPkts:",
    "PortUnicastXmitPkts:",
    "PortUnicastRcvPkts:",
    "PortMulticastXmitPkts:",
    "PortMulticastRcvPkts:",
    "PortRcvSwitchRelayErrors:",
];

/// `text` with the traffic counters masked, and C's `argv[0]` (the harness runs C by its
/// full path, which C's iberror line repeats) shortened to the tool name.
pub fn mask_traffic(text: &str) -> String {
    text.lines()
        .map(|l| l.strip_prefix("/usr/sbin/").unwrap_or(l))
        .map(|l| match TRAFFIC.iter().find(|t| l.starts_with(*t)) {
            Some(t) => format!("{t}<traffic>\n"),
            None => format!("{l}\n"),
        })
        .collect()
}

pub mod mcast;
pub mod sa;
pub mod smp;

/// The schema `docs/json/<name>`, parsed.
pub fn json_schema(name: &str) -> serde_json::Value {
    let p = repo_root().join("docs/json").join(name);
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
}

/// The LIDs of the local port and of the switch next to it (DR path 1), read with SMPs
/// through a native ibsim port.
pub fn local_and_neighbor_lids(sim: &ibsim_harness::Ibsim) -> (u16, u16) {
    use umad::rpc::{Rpc, Target};
    let port =
        umad::Port::open_ibsim(&umad::IbsimOptions::new(sim.socket_name())).expect("ibsim port");
    let rpc = Rpc::new(std::sync::Arc::new(port));
    let local: ibmad::attr::PortInfo = rpc
        .smp_get(&Target::Dr(ibmad::DrPath::local()), 0)
        .expect("local PortInfo");
    let sw: ibmad::attr::PortInfo = rpc
        .smp_get(&Target::Dr(ibmad::DrPath::from_hops(&[1]).unwrap()), 0)
        .expect("neighbor PortInfo");
    (local.lid, sw.lid)
}
