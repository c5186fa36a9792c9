//! `umad saquery` against C `saquery` on live ibsim fabrics: the same stdout byte for byte
//! and the same exit code (and, for errors of saquery's own, the same first stderr line), for
//! every query type and command flag, on `example.net`, `mixed.net` and `fattree-1008.net`.
//!
//! The SA is opensm running resident on the project's drop-in `libibumad` with `UMAD_IBSIM`
//! (natively, no umad2sim: umad2sim cuts RMPP tables to one MAD), attached at the netfile's
//! first HCA. C `saquery` also runs on the drop-in natively; ours talks to ibsim natively
//! (`UMAD_IBSIM`). Both query from the second HCA. Every `--json` validates against
//! docs/json/saquery-v1.schema.json.

mod common;

use common::sa::{DropInSa, Ran};
use common::{assert_valid, join, native, repo_root, run, umad};
use compat::require_drop_in;
use ibsim_harness::{fabrics_dir, require_ibsim, Ibsim};

/// The `SA Request:`/`SA Response:` dumps of `text` (`-dd`), the TID (MAD bytes 8..16)
/// masked: C's is random.
fn sa_dumps(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut line = None;
    for l in text.lines() {
        if l == "SA Request:" || l == "SA Response:" {
            out.push(l.to_string());
            line = Some(0);
            continue;
        }
        let hex = !l.is_empty()
            && l.split(' ').all(|g| {
                g.is_empty() || (g.len() <= 4 && g.bytes().all(|b| b.is_ascii_hexdigit()))
            });
        match line {
            Some(0) if hex => {
                let mut g: Vec<&str> = l.split(' ').collect();
                for x in g.iter_mut().skip(4).take(4) {
                    *x = "xxxx";
                }
                out.push(g.join(" "));
                line = Some(1);
            }
            Some(n) if hex => {
                out.push(l.to_string());
                line = Some(n + 1);
            }
            _ => line = None,
        }
    }
    out
}

/// Runs `saquery` both ways.
struct Setup<'a> {
    f: DropInSa<'a>,
}

impl Setup<'_> {
    /// C `saquery <args>` on the drop-in, natively at the tool node.
    fn c(&self, args: &[&str]) -> Ran {
        self.f.c("saquery", args)
    }

    /// `umad saquery <args>`, natively at the tool node.
    fn ours(&self, args: &[&str]) -> Ran {
        self.f.ours("saquery", args)
    }
}

fn schema() -> serde_json::Value {
    let p = repo_root().join("docs/json/saquery-v1.schema.json");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// The `-D` table's (lid, name) pairs.
fn ca_list(text: &str) -> Vec<(String, String)> {
    text.lines()
        .skip(2)
        .filter_map(|l| {
            let (lid, name) = l.trim().split_once("  ")?;
            Some((lid.to_string(), name.trim_matches('"').to_string()))
        })
        .collect()
}

/// The value of the first `name....value` line of a dump.
fn field<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines()
        .map(str::trim)
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with('.'))
        .map(|l| l[name.len()..].trim_start_matches('.'))
}

fn compare(fabric: &str, full: bool) {
    let test = format!("ibsim_saquery::{fabric}");
    if !require_ibsim(&test) {
        return;
    }
    let Some(drop_in) = require_drop_in(&test) else {
        return;
    };
    let net = fabrics_dir().join(fabric);
    let sim = Ibsim::start(&net).expect("ibsim starts");
    let s = Setup {
        f: DropInSa::new(&sim, drop_in),
    };
    let _sm = s.f.start_sm();

    // Values for the queries, from C's own answers.
    let (code, list, _) = s.c(&["-D"]);
    assert_eq!(code, 0, "saquery -D");
    let cas = ca_list(&list);
    assert!(cas.len() >= 2, "{list}");
    let (lid1, name1) = &cas[0];
    let (lid2, name2) = &cas[cas.len() - 1];
    let (_, guid, _) = s.c(&["-G", name1]);
    let guid = guid.lines().next().unwrap_or("").to_string();
    let (_, swir, _) = s.c(&["SWIR"]);
    let sw_lid = field(&swir, "LID").expect("a switch").to_string();
    let (_, pr, _) = s.c(&["PR", "--slid", lid1, "--dlid", lid2]);
    let sgid = field(&pr, "sgid").expect("a path").to_string();
    let dgid = field(&pr, "dgid").expect("a path").to_string();
    let (_, groups, _) = s.c(&["-g"]);
    let mlid = field(&groups, "Mlid").unwrap_or("0xC000").to_string();
    let mgid = field(&groups, "MGID")
        .unwrap_or("ff12:401b:ffff::1")
        .to_string();
    let sd = format!("{lid1}:{lid2}");
    let sd_names = format!("{name1}:{name2}");
    let sg_dg = format!("{sgid}-{dgid}");
    let lid_port = format!("{sw_lid}/1");
    let gir_block = format!("{lid1}/0");
    let lft_block = format!("{sw_lid}/0");
    let sw_port0 = lft_block.clone();
    let sl2vl_ports = format!("{sw_lid}/1/2");
    let pktr_port = format!("{lid1}/1");
    let vlar_block = format!("{sw_lid}/1/1");
    let mft_pos = format!("{sw_lid}/0/0");
    let map = sim.workdir().join("node-name-map");
    std::fs::write(&map, format!("{guid} \"mapped name\"\n")).unwrap();
    let map = map.to_str().unwrap().to_string();

    // -dd: saquery's `SA Request:`/`SA Response:` dumps (C: stdout; ours: stderr).
    for args in [vec!["-dd", "NR", lid1.as_str()], vec!["-dd", "PR", &sd]] {
        let (cc, c_out, _) = s.c(&args);
        let (oc, o_out, o_err) = s.ours(&args);
        assert_eq!(cc, oc, "saquery {args:?}");
        let c_dumps = sa_dumps(&c_out);
        assert!(c_dumps.len() > 10, "saquery {args:?}: C dumped {c_out}");
        assert_eq!(sa_dumps(&o_err), c_dumps, "saquery {args:?}: the dumps");
        assert!(
            sa_dumps(&o_out).is_empty(),
            "saquery {args:?}: stdout has no dump"
        );
    }

    let mut cases: Vec<Vec<&str>> = vec![
        vec![],
        vec!["NR"],
        vec!["NodeRecord", lid1],
        vec!["nr", &lid_port],
        vec![lid2],
        vec!["-N"],
        vec!["-N", name1],
        vec!["-D"],
        vec!["--list"],
        vec!["-L", name1],
        vec!["-l", name2],
        vec!["-G", name1],
        vec!["-O", lid1],
        vec!["-U", &guid],
        vec!["PIR"],
        vec!["PIR", lid1],
        vec!["PortInfoRecord", &lid_port],
        vec!["-K", "PIR", &sw_port0],
        vec!["-c"],
        vec!["CPI"],
        vec!["-s"],
        vec!["-g"],
        vec!["-m"],
        vec!["-m", &mlid],
        vec!["MCMR"],
        vec!["MCMR", "--mlid", &mlid],
        vec!["MCMR", "--mgid", &mgid],
        vec!["-x"],
        vec!["LR", &lid_port],
        vec!["LR", &lid_port, lid1],
        vec!["LinkRecord", lid1],
        vec!["SWIR"],
        vec!["SWIR", &sw_lid],
        vec!["SMIR"],
        vec!["SR"],
        vec!["-S"],
        vec!["-I"],
        vec!["IIR"],
        vec!["GIR", lid1],
        vec!["GIR", &gir_block],
        vec!["PKTR", lid1],
        vec!["PKTR"],
        vec!["--smkey", "1", "PKTR"],
        vec!["--smkey", "1", "PKTR", &pktr_port],
        vec!["LFTR", &sw_lid],
        vec!["LFTR", &lft_block],
        vec!["SL2VL"],
        vec!["SL2VL", &sw_port0],
        vec!["SL2VLTableRecord", &sl2vl_ports],
        vec!["VLAR"],
        vec!["VLAR", &vlar_block],
        vec!["MFTR"],
        vec!["MFTR", &sw_lid],
        vec!["MFTR", &mft_pos],
        vec!["-p", "--slid", lid1, "--dlid", lid2],
        vec!["PR", "--slid", lid2, "--dlid", lid1, "-n", "1"],
        vec!["--src-to-dst", &sd],
        vec!["--src-to-dst", &sd_names],
        vec!["--sgid-to-dgid", &sg_dg],
        vec!["PR", "--sgid", &sgid, "--dgid", &dgid, "--sl", "0"],
        vec!["-K", "SR"],
        vec!["--node-name-map", &map],
        vec!["--node-name-map", &map, "-O", lid1],
        vec!["--node-name-map", &map, "-D"],
        vec!["-t", "2000", "-x", lid1],
        vec!["-C", "ibsim0", "-P", "1", "SWIR"],
        vec!["-C", "nosuchca", "SWIR"],
        vec!["-P", "2", "SWIR"],
        // Errors of saquery's own.
        vec!["-L"],
        vec!["-O"],
        vec!["-O", "0"],
        vec!["-U"],
        vec!["NR", "no-such-node"],
        vec!["--src-to-dst", "nothere:1"],
        vec!["--src-to-dst", "nocolon"],
        vec!["NR", "70000"],
        vec!["--sgid-to-dgid", "bad"],
        vec!["IIR", "not-a-gid"],
        vec!["-k"],
    ];
    if !full {
        // fattree-1008: the whole tables once, the rest on the small fabrics.
        cases.retain(|c| {
            matches!(
                c.first().copied(),
                None | Some(
                    "-x" | "SWIR" | "PIR" | "-D" | "-s" | "-g" | "-c" | "--src-to-dst" | "-O"
                )
            )
        });
    }
    let schema = schema();
    let check = |cases: &[Vec<&str>]| {
        for args in cases {
            let (c_code, c_out, c_err) = s.c(args);
            let (our_code, our_out, our_err) = s.ours(args);
            assert_eq!(
                our_code, c_code,
                "{fabric} {args:?}: exit codes (C stderr: {c_err}, ours: {our_err})"
            );
            assert_eq!(our_out, c_out, "{fabric} {args:?}: stdout differs");
            if c_code != 0 {
                // The first line of C's message (then its usage text, which differs) is ours.
                let first = c_err.lines().next().unwrap_or("");
                // (libibmad's ibwarn/ibpanic lines carry a pid and C's function names: not
                // compared.)
                let libibmad = first.starts_with("ibwarn: ") || first.starts_with("ibpanic: ");
                if !first.is_empty() && !first.contains("invalid option") && !libibmad {
                    assert_eq!(
                        our_err.lines().next().unwrap_or(""),
                        first,
                        "{fabric} {args:?}: stderr"
                    );
                }
            } else {
                let mut j: Vec<&str> = args.clone();
                j.push("--json");
                let (code, json, err) = s.ours(&j);
                assert_eq!(code, 0, "{fabric} {j:?}: {err}");
                assert_valid(&schema, &json);
                let v: serde_json::Value = serde_json::from_str(&json).unwrap();
                let n = v["records"].as_array().unwrap().len();
                // As many records as C printed dumps (one-line modes: lines).
                let dumps = c_out
                    .lines()
                    .filter(|l| !l.starts_with('\t') && l.ends_with(':'))
                    .count();
                if dumps > 0 {
                    assert_eq!(n, dumps, "{fabric} {j:?}: records");
                }
            }
        }
    };
    check(&cases);

    // Two CAs join the multicast group: its members, by every query that shows them (with
    // opensm's default SM_Key, 1: to an untrusted requester opensm shows no member GIDs).
    let mgid_gid: ibmad::Gid = mgid.parse::<std::net::Ipv6Addr>().unwrap().into();
    join(&sim, name1, mgid_gid);
    join(&sim, name2, mgid_gid);
    let member_cases: Vec<Vec<&str>> = vec![
        vec!["-m"],
        vec!["--smkey", "1", "-m"],
        vec!["--smkey", "1", "-m", &mlid],
        vec!["--smkey", "1", "-m", "0xc001"],
        vec!["MCMR"],
        vec!["--smkey", "1", "MCMR"],
        vec!["--smkey", "1", "MCMR", "--mgid", &mgid],
        vec!["--smkey", "1", "MCMR", "--mlid", &mlid],
        vec!["--smkey", "1", "-g"],
        vec!["--smkey", "1", "--node-name-map", &map, "-m"],
    ];
    check(&member_cases);
    let (_, members, _) = s.ours(&["--smkey", "1", "-m"]);
    assert_eq!(
        members.matches("MCMemberRecord member dump:").count(),
        2,
        "{members}"
    );

    // The table queries return records on these fabrics (the comparisons above are not of
    // empty answers).
    for (q, title) in [
        ("SL2VL", "SL2VLTableRecord dump:"),
        ("VLAR", "VLArbTableRecord dump:"),
        ("MFTR", "MFT Record dump:"),
        ("LFTR", "LFT Record dump:"),
        ("--smkey=1 PKTR", "PKeyTableRecord dump:"),
        ("GIR", "GUIDInfo Record dump:"),
        ("SMIR", "SMInfoRecord dump:"),
    ] {
        let args: Vec<&str> = q.split(' ').collect();
        let (code, out, err) = s.ours(&args);
        assert!(out.contains(title), "{fabric} {q}: exit {code}\n{out}{err}");
    }

    // Through a link named saquery.
    let link = sim.workdir().join("saquery");
    std::os::unix::fs::symlink(umad(), &link).unwrap();
    let out = run(native(&sim, &link)
        .env("UMAD_IBSIM_NODE", &s.f.tool_node)
        .arg("-x"));
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), s.c(&["-x"]).1);

    // The whole tables came, through RMPP: more than one 256-byte MAD carries (at most 3
    // NodeRecords).
    let nodes = s.ours(&[]).1.matches("NodeRecord dump:").count();
    let links = s.ours(&["-x"]).1.matches("LinkRecord dump:").count();
    eprintln!("{fabric}: {nodes} NodeRecords, {links} LinkRecords");
    assert!(
        nodes > 3 && links > 0,
        "{fabric}: {nodes} nodes, {links} links"
    );
}

#[test]
fn example_fabric() {
    compare("example.net", true);
}

#[test]
fn mixed_fabric() {
    compare("mixed.net", true);
}

#[test]
fn fattree_fabric() {
    compare("fattree-1008.net", false);
}

/// Without a subnet manager there is no SA to ask: C and ours fail alike (no output, the
/// same exit status), for a table, a command and a PathRecord between names.
#[test]
fn no_subnet_manager() {
    if !require_ibsim("ibsim_saquery::no_subnet_manager") {
        return;
    }
    let Some(drop_in) = require_drop_in("ibsim_saquery::no_subnet_manager") else {
        return;
    };
    let net = fabrics_dir().join("example.net");
    let sim = Ibsim::start(&net).expect("ibsim starts");
    let s = Setup {
        f: DropInSa::new(&sim, drop_in),
    };
    for args in [vec![], vec!["-x"], vec!["-c"], vec!["--src-to-dst", "a:b"]] {
        let (c_code, c_out, c_err) = s.c(&args);
        let (our_code, our_out, our_err) = s.ours(&args);
        assert_eq!(our_code, c_code, "{args:?}: C {c_err} ours {our_err}");
        assert_eq!(our_out, c_out, "{args:?}");
        assert_ne!(c_code, 0, "{args:?}");
    }
}
