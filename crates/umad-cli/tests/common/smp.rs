//! What the SMP tool tests (`ibsim_smpquery.rs`, `ibsim_sminfo.rs`, `ibsim_ibaddr.rs`,
//! `ibsim_smpdump.rs`, `ibsim_ibstat.rs`) share: a fabric with a resident SM, the tools run
//! both ways, and a table of argument lists compared between C and ours.

use std::path::Path;

use ibsim_harness::{fabrics_dir, Ibsim};

use super::{assert_valid, native, repo_root, run, umad};

/// An ibsim on `fabric` with a resident opensm (SUBNET UP: LIDs assigned, the SA answers).
pub fn start(fabric: &str) -> Ibsim {
    let mut sim = Ibsim::start(fabrics_dir().join(fabric)).expect("ibsim starts");
    sim.start_sm_daemon().expect("opensm comes up");
    sim
}

/// `umad <tool> <args>` natively against `sim`: (exit code, stdout, stderr).
pub fn ours(sim: &Ibsim, tool: &str, args: &[String]) -> (i32, String, String) {
    let out = run(native(sim, &umad()).arg(tool).args(args));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// C `<tool> <args>` under umad2sim against `sim`: (exit code, stdout).
pub fn c(sim: &Ibsim, tool: &str, args: &[String]) -> (i32, String) {
    let out = run(sim.umad2sim_command(tool).args(args));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// Values of the fabric the argument tables refer to as `{name}`.
pub struct Vars {
    /// `{sw}`: the LID of the switch next to the local port (DR `0,1`).
    pub sw_lid: u16,
    /// `{swg}`: its port GUID.
    pub sw_guid: String,
    /// `{hg}`: the local port's GUID.
    pub host_guid: String,
    /// `{map}`: a node name map naming the local node and that switch.
    pub map: String,
    /// `{dead}`: a directed route to nowhere (through the first Down port of that switch),
    /// if it has one; cases using it are skipped otherwise.
    pub dead: Option<String>,
}

/// The value of `Name:....value` line `name` in C's text.
fn field<'a>(text: &'a str, name: &str) -> &'a str {
    let prefix = format!("{name}:");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map(|v| v.trim_start_matches('.'))
        .unwrap_or_else(|| panic!("no {name} in {text}"))
}

/// Finds [`Vars`] with C's `smpquery` (so the tables don't depend on ours).
pub fn vars(sim: &Ibsim) -> Vars {
    let q = |args: &[&str]| {
        let (code, out) = c(sim, "smpquery", &strings(args));
        assert_eq!(code, 0, "smpquery {args:?}: {out}");
        out
    };
    let sw_pi = q(&["-D", "portinfo", "0,1", "0"]);
    let sw_lid: u16 = field(&sw_pi, "Lid").parse().unwrap();
    assert!(sw_lid > 0, "the SM assigned LIDs");
    let sw_ni = q(&["-D", "nodeinfo", "0,1"]);
    assert_eq!(field(&sw_ni, "NodeType"), "Switch");
    let host_ni = q(&["-D", "nodeinfo", "0"]);
    let map = sim.workdir().join("smp-node-name-map");
    std::fs::write(
        &map,
        format!(
            "{} \"the local node\"\n{} \"a switch with a name longer than thirty-two characters\"\n",
            field(&host_ni, "Guid"),
            field(&sw_ni, "Guid")
        ),
    )
    .unwrap();
    let ports: u8 = field(&sw_ni, "NumPorts").parse().unwrap();
    let dead = (1..=ports).find_map(|n| {
        let pi = q(&["-D", "portinfo", "0,1", &n.to_string()]);
        (field(&pi, "LinkState") == "Down").then(|| format!("0,1,{n}"))
    });
    Vars {
        dead,
        sw_lid,
        sw_guid: field(&sw_ni, "PortGuid").to_string(),
        host_guid: field(&host_ni, "PortGuid").to_string(),
        map: map.to_str().unwrap().to_string(),
    }
}

/// `args` as owned strings.
pub fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// `args` with `{sw}`, `{swg}`, `{hg}`, `{map}` and `{dead}` replaced.
pub fn expand(args: &[&str], v: &Vars) -> Vec<String> {
    args.iter()
        .map(|a| {
            a.replace("{sw}", &v.sw_lid.to_string())
                .replace("{swg}", &v.sw_guid)
                .replace("{hg}", &v.host_guid)
                .replace("{map}", &v.map)
                .replace("{dead}", v.dead.as_deref().unwrap_or("0"))
        })
        .collect()
}

/// Runs every argument list of `cases` through C `tool` and `umad tool`: the same exit code
/// and the same stdout after `mask`. Returns how many cases succeeded in C (exit 0), so a
/// test can check that the table exercises real answers, not only errors.
pub fn compare(
    sim: &Ibsim,
    fabric: &str,
    tool: &str,
    cases: &[&[&str]],
    v: &Vars,
    mask: fn(&str) -> String,
) -> usize {
    let mut ok = 0;
    for case in cases {
        if v.dead.is_none() && case.contains(&"{dead}") {
            continue;
        }
        let args = expand(case, v);
        let (c_code, c_out) = c(sim, tool, &args);
        let (our_code, our_out, our_err) = ours(sim, tool, &args);
        assert_eq!(
            our_code, c_code,
            "{fabric}: {tool} {args:?}: exit codes; C stdout:\n{c_out}\nours:\n{our_out}\nour stderr:\n{our_err}"
        );
        assert_eq!(
            mask(&our_out),
            mask(&unpath(&c_out, tool)),
            "{fabric}: {tool} {args:?}: stdout differs; our stderr:\n{our_err}"
        );
        if c_code == 0 {
            ok += 1;
        }
    }
    ok
}

/// Runs `umad tool --json <args>` for each case, asserting success and that the output is
/// valid against `docs/json/<tool>-v1.schema.json`; returns the parsed documents.
pub fn json_cases(sim: &Ibsim, tool: &str, cases: &[&[&str]], v: &Vars) -> Vec<serde_json::Value> {
    let p = repo_root().join(format!("docs/json/{tool}-v1.schema.json"));
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    cases
        .iter()
        .map(|case| {
            let mut args = strings(&["--json"]);
            args.extend(expand(case, v));
            let (code, out, err) = ours(sim, tool, &args);
            assert_eq!(code, 0, "{tool} {args:?}: {out}{err}");
            assert_valid(&schema, &out);
            serde_json::from_str(&out).unwrap()
        })
        .collect()
}

/// Runs `tool <args>` through a link named `tool` to the `umad` binary; returns stdout.
pub fn through_link(sim: &Ibsim, tool: &str, args: &[String]) -> (i32, String) {
    let dir = sim.new_scratch_dir("link").unwrap();
    let link = dir.join(tool);
    std::os::unix::fs::symlink(umad(), &link).unwrap();
    let out = run(native(sim, Path::new(&link)).args(args));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// C's output with its program name as `tool` where it names itself: C prints `argv[0]`,
/// and the harness runs it by its path (`/usr/sbin/<tool>`); ours prints the tool name.
pub fn unpath(text: &str, tool: &str) -> String {
    match ibsim_harness::find_tool(tool) {
        Some(path) => text.replace(
            &format!("{}: iberror: ", path.display()),
            &format!("{tool}: iberror: "),
        ),
        None => text.to_string(),
    }
}

/// No masking.
pub fn same(s: &str) -> String {
    s.to_string()
}
