//! `umad ibnetdiscover --diff <cache>` prints what C `ibnetdiscover --diff` prints, byte for
//! byte, on live ibsim fabrics changed after C cached them:
//!
//! * example.net: a host unlinked and another host's LID changed (ibsim console);
//! * mixed.net: one of two parallel inter-switch links and one port of a dual-homed host
//!   unlinked, a host's LID changed;
//! * example.net restarted on an edited netfile: a switch and a host renamed, a host with
//!   one more port, a host added.
//!
//! Each is compared with no change first, then for every `--diffcheck` key alone and in
//! combinations, against the live fabric, with `--load-cache` of C's new cache as the current
//! side, and reversed (`--load-cache` of the old cache, `--diff` of the new one); also with
//! `-f`, `--node-name-map`, an output file, and with `-l`/`-H`/`-S`/`-R`/`-p`/`-s`, which C
//! prefers to `--diff`.
//!
//! Where C crashes (`--diffcheck lid` and a switch whose LID changed: it prints the switch's
//! unlinked ports, dereferencing their missing peers), the output is what C prints up to
//! there, built from C's own topology lines, with the peerless ports left out.

mod common;

use std::path::{Path, PathBuf};

use common::{c_run, mask_date, our_run};
use ibsim_harness::{fabrics_dir, require_ibsim, Ibsim, TempDir};

/// The `--diffcheck` values compared (`None`: no `--diffcheck`, C's default).
const DIFFCHECKS: &[Option<&str>] = &[
    None,
    Some("sw"),
    Some("ca"),
    Some("router"),
    Some("port"),
    Some("lid"),
    Some("nodedesc"),
    Some(""),
    Some("sw,port"),
    Some("ca,port"),
    Some("ca,lid"),
    Some("sw,nodedesc"),
    Some("ca,port,lid"),
    Some("sw,ca,port,nodedesc"),
    Some("sw,ca,router,port,lid,nodedesc"),
    Some("SW,Ca,LID,Port"),
];

fn path_str(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// C `ibnetdiscover --cache <dir>/<name>` against `sim`.
fn c_cache(sim: &Ibsim, dir: &Path, name: &str) -> PathBuf {
    let file = dir.join(name);
    let (code, _) = c_run(sim, "ibnetdiscover", &["--cache", path_str(&file)]);
    assert_eq!(code, 0, "C ibnetdiscover --cache {name}");
    file
}

/// Runs `ibnetdiscover args` in C and in umad; asserts the same exit code (0) and stdout
/// (the date line masked). Returns C's output.
fn same(sim: &Ibsim, what: &str, args: &[&str]) -> String {
    let (c_code, c_out) = c_run(sim, "ibnetdiscover", args);
    let (our_code, our_out) = our_run(sim, "ibnetdiscover", args);
    assert_eq!(
        c_code, 0,
        "{what}: C ibnetdiscover {args:?} failed:\n{c_out}"
    );
    assert_eq!(
        our_code, c_code,
        "{what}: ibnetdiscover {args:?}: exit codes"
    );
    assert_eq!(
        mask_date(&our_out),
        mask_date(&c_out),
        "{what}: ibnetdiscover {args:?}: stdout differs"
    );
    c_out
}

/// `args` plus `--diffcheck <keys>` when given.
fn with_check<'a>(args: &[&'a str], check: Option<&'a str>) -> Vec<&'a str> {
    let mut v = args.to_vec();
    if let Some(k) = check {
        v.extend(["--diffcheck", k]);
    }
    v
}

/// Every `--diffcheck` value, for the live fabric against `old` and for the cached `new`
/// against `old` both ways. Returns C's default-check outputs: (live, cached, reversed).
fn all_checks(sim: &Ibsim, what: &str, old: &Path, new: &Path) -> (String, String, String) {
    let (old, new) = (path_str(old), path_str(new));
    let mut first = None;
    for &check in DIFFCHECKS {
        let live = same(sim, what, &with_check(&["--diff", old], check));
        let cached = same(
            sim,
            what,
            &with_check(&["--load-cache", new, "--diff", old], check),
        );
        let reversed = same(
            sim,
            what,
            &with_check(&["--load-cache", old, "--diff", new], check),
        );
        first.get_or_insert((live, cached, reversed));
    }
    first.unwrap()
}

/// Runs the other modes and options with `--diff old` (live and cached current sides).
fn options(sim: &Ibsim, what: &str, dir: &Path, old: &Path, new: &Path) {
    let (old, new) = (path_str(old), path_str(new));
    for extra in [
        &["-f"][..],
        &["-f", "--diffcheck", "sw,ca,port,lid,nodedesc"],
        &["-l"],
        &["-H"],
        &["-S"],
        &["-R"],
        &["-p"],
        &["-g"],
        &["-m"],
    ] {
        for base in [&["--diff", old][..], &["--load-cache", new, "--diff", old]] {
            let args: Vec<&str> = base.iter().chain(extra).copied().collect();
            same(sim, what, &args);
        }
    }
    // -s: the discovery records on stdout, then the diff.
    let (code, c_out) = c_run(sim, "ibnetdiscover", &["-s", "--diff", old]);
    let (our_code, our_out) = our_run(sim, "ibnetdiscover", &["-s", "--diff", old]);
    assert_eq!((code, our_code), (0, 0), "{what}: -s");
    let (_, c_diff) = c_run(sim, "ibnetdiscover", &["--diff", old]);
    assert!(
        c_out.ends_with(&c_diff) && c_out.len() > c_diff.len(),
        "{what}: C -s"
    );
    assert_eq!(
        our_out.lines().count(),
        c_out.lines().count(),
        "{what}: -s lines"
    );
    assert!(our_out.ends_with(&c_diff), "{what}: -s ends with the diff");
    // A node name map renames switches (headers and peers) but not CA headers.
    let map = dir.join("names.map");
    std::fs::write(
        &map,
        "0x0000000000200000 \"mapped-switch\"\n0x0000000000100005 \"mapped-host\"\n\
         0x0000000000100007 \"mapped-host4\"\n0x0000000000200001 \"mapped-sw2\"\n",
    )
    .unwrap();
    for base in [&["--diff", old][..], &["--load-cache", old, "--diff", new]] {
        let mut args = base.to_vec();
        args.extend(["--node-name-map", path_str(&map)]);
        same(sim, what, &args);
        args.extend(["--diffcheck", "sw,ca,port,lid,nodedesc"]);
        same(sim, what, &args);
    }
    // An output file gets the diff; stdout stays empty.
    let c_file = dir.join("c-diff.out");
    let our_file = dir.join("our-diff.out");
    let (code, c_out) = c_run(sim, "ibnetdiscover", &["--diff", old, path_str(&c_file)]);
    let (our_code, our_out) = our_run(sim, "ibnetdiscover", &["--diff", old, path_str(&our_file)]);
    assert_eq!(
        (code, our_code, c_out.as_str(), our_out.as_str()),
        (0, 0, "", "")
    );
    assert_eq!(
        std::fs::read_to_string(&our_file).unwrap(),
        std::fs::read_to_string(&c_file).unwrap(),
        "{what}: output file"
    );
}

/// Starts `net` with a console and one SM sweep.
fn start(net: &Path) -> Ibsim {
    let sim = Ibsim::builder(net)
        .console(true)
        .start()
        .expect("ibsim starts");
    sim.run_sm_once().expect("opensm sweeps");
    sim
}

/// The unchanged fabric: C prints nothing for any check, and so do we.
fn unchanged(sim: &Ibsim, what: &str, old: &Path) {
    for &check in DIFFCHECKS {
        let out = same(sim, what, &with_check(&["--diff", path_str(old)], check));
        assert_eq!(
            out, "",
            "{what}: C sees a difference in an unchanged fabric"
        );
        let out = same(
            sim,
            what,
            &with_check(
                &["--load-cache", path_str(old), "--diff", path_str(old)],
                check,
            ),
        );
        assert_eq!(out, "", "{what}: a cache against itself");
    }
}

#[test]
fn c_diff_example_unlink_and_lid() {
    if !require_ibsim("umad_cli::c_diff_example_unlink_and_lid") {
        return;
    }
    let dir = TempDir::new("umad-cli-cdiff-example").unwrap();
    let sim = start(&fabrics_dir().join("example.net"));
    let old = c_cache(&sim, dir.path(), "old.cache");
    unchanged(&sim, "example unchanged", &old);

    sim.console("Unlink \"H-host3\"[1]").expect("unlink");
    sim.console("Baselid \"H-host4\"[1] 42").expect("baselid");
    let new = c_cache(&sim, dir.path(), "new.cache");
    let (live, cached, reversed) = all_checks(&sim, "example", &old, &new);
    // The default checks: host3 and its link gone, seen from sw2's port 1 too.
    assert!(
        live.contains("\n< caguid=0x100005\n< Ca\t1 \"H-0000000000100005\""),
        "{live}"
    );
    assert!(live.contains("< [1]\t\"H-0000000000100005\"[1]"), "{live}");
    assert!(!live.contains("\n> "), "nothing new: {live}");
    assert_eq!(cached, live);
    assert!(reversed.contains("\n> caguid=0x100005\n"), "{reversed}");
    // The LID shows only with lid.
    let lid = same(
        &sim,
        "example lid",
        &["--diff", path_str(&old), "--diffcheck", "ca,lid"],
    );
    assert!(
        lid.contains("> [1](100008) \t\"S-0000000000200001\"[2]\t\t# lid 42 "),
        "{lid}"
    );
    options(&sim, "example", dir.path(), &old, &new);
}

#[test]
fn c_diff_mixed_parallel_and_dual_homed() {
    if !require_ibsim("umad_cli::c_diff_mixed_parallel_and_dual_homed") {
        return;
    }
    let dir = TempDir::new("umad-cli-cdiff-mixed").unwrap();
    let sim = start(&fabrics_dir().join("mixed.net"));
    let old = c_cache(&sim, dir.path(), "old.cache");
    unchanged(&sim, "mixed unchanged", &old);

    sim.console("Unlink \"S-left\"[10]").expect("unlink");
    sim.console("Unlink \"H-dual\"[2]").expect("unlink");
    sim.console("Baselid \"H-fdr\"[1] 99").expect("baselid");
    let new = c_cache(&sim, dir.path(), "new.cache");
    let (live, cached, _) = all_checks(&sim, "mixed", &old, &new);
    // Both ends of the cut parallel link, the dual-homed host's lost port.
    assert!(live.contains("< [10]\t\"S-"), "{live}");
    assert!(live.contains("< [2]("), "{live}");
    assert_eq!(cached, live);
    options(&sim, "mixed", dir.path(), &old, &new);
}

#[test]
fn c_diff_example_renamed_grown() {
    if !require_ibsim("umad_cli::c_diff_example_renamed_grown") {
        return;
    }
    let dir = TempDir::new("umad-cli-cdiff-grown").unwrap();
    let old = {
        let sim = start(&fabrics_dir().join("example.net"));
        c_cache(&sim, dir.path(), "old.cache")
    };
    // sw2 and host3 renamed, host4 with a second (unlinked) port, host5 on sw2 port 3.
    let net = std::fs::read_to_string(fabrics_dir().join("example.net")).unwrap();
    let sw2_port2 = "[2]\t\"H-host4\"[1]\t\t# \"host4 HCA-1\" lid 0 4xQDR\n";
    for needle in [
        sw2_port2,
        "Hca\t1 \"H-host4\"",
        "# \"sw2\" enhanced",
        "# \"host3 HCA-1\"\n",
    ] {
        assert!(net.contains(needle), "{needle}");
    }
    let grown = net
        .replace(
            sw2_port2,
            &format!("{sw2_port2}[3]\t\"H-host5\"[1]\t\t# \"host5 HCA-1\" lid 0 4xQDR\n"),
        )
        .replace("Hca\t1 \"H-host4\"", "Hca\t2 \"H-host4\"")
        .replace("# \"sw2\" enhanced", "# \"sw2 renamed\" enhanced")
        .replace("# \"host3 HCA-1\"\n", "# \"host3 renamed\"\n")
        + "\nHca\t1 \"H-host5\"\t\t# \"host5 HCA-1\"\n\
           [1]\t\"S-sw2\"[3]\t\t# lid 0 lmc 0 \"sw2\" lid 0 4xQDR\n";
    let grown_path = dir.path().join("example-grown.net");
    std::fs::write(&grown_path, grown).unwrap();
    let sim = start(&grown_path);
    let new = c_cache(&sim, dir.path(), "new.cache");
    let (live, _, reversed) = all_checks(&sim, "grown", &old, &new);
    assert!(live.contains("< numports = 1\n> numports = 2\n"), "{live}");
    assert!(live.contains("\n> caguid="), "host5 added: {live}");
    assert!(reversed.contains("\n< caguid="), "{reversed}");
    let desc = same(
        &sim,
        "grown nodedesc",
        &["--diff", path_str(&old), "--diffcheck", "sw,ca,nodedesc"],
    );
    assert!(
        desc.contains("> Switch\t8 \"S-0000000000200001\"\t\t# \"sw2 renamed\""),
        "{desc}"
    );
    assert!(
        desc.contains("> Ca\t1 \"H-0000000000100005\"\t\t# \"host3 renamed\""),
        "{desc}"
    );
    options(&sim, "grown", dir.path(), &old, &new);
}

/// The section of the node whose header line contains `id` in C topology text: its lines
/// from `vendid=` to the last port line.
fn section<'a>(topology: &'a str, id: &str) -> Vec<&'a str> {
    topology
        .split("\n\n")
        .find(|s| s.lines().any(|l| l.contains(id) && !l.starts_with('[')))
        .unwrap_or_else(|| panic!("no {id} in {topology}"))
        .lines()
        .collect()
}

#[test]
fn c_diff_switch_lid_where_c_crashes() {
    if !require_ibsim("umad_cli::c_diff_switch_lid_where_c_crashes") {
        return;
    }
    let dir = TempDir::new("umad-cli-cdiff-crash").unwrap();
    let sim = start(&fabrics_dir().join("example.net"));
    let old = c_cache(&sim, dir.path(), "old.cache");
    let (_, old_text) = c_run(&sim, "ibnetdiscover", &["--load-cache", path_str(&old)]);
    sim.console("Baselid \"S-sw2\"[0] 60").expect("baselid");
    let new = c_cache(&sim, dir.path(), "new.cache");
    let (_, new_text) = c_run(&sim, "ibnetdiscover", &["--load-cache", path_str(&new)]);
    // What C would print had it not crashed: sw2's ids, its Switch line from both sides,
    // then each linked port from both sides (C's own topology lines).
    let id = "\"S-0000000000200001\"";
    let (a, b) = (section(&old_text, id), section(&new_text, id));
    assert_eq!(a.len(), b.len());
    let detail = a.iter().position(|l| l.starts_with("Switch\t")).unwrap();
    let mut expected = String::from("\n");
    for l in &a[..detail] {
        expected += &format!("{l}\n");
    }
    expected += &format!("< {}\n> {}\n", a[detail], b[detail]);
    for (x, y) in a[detail + 1..].iter().zip(&b[detail + 1..]) {
        expected += &format!("< {x}\n> {y}\n");
    }
    assert!(expected.contains("lid 60 lmc 0\n< [1]\t"), "{expected}");
    for args in [
        &["--diff", path_str(&old), "--diffcheck", "sw,lid"][..],
        &[
            "--load-cache",
            path_str(&new),
            "--diff",
            path_str(&old),
            "--diffcheck",
            "sw,lid",
        ],
    ] {
        // C dereferences the missing peer of sw2's unlinked ports: SIGSEGV, no output.
        let c = common::run(sim.umad2sim_command("ibnetdiscover").args(args));
        assert_eq!(c.status.code(), None, "C {args:?} died by a signal");
        let (code, ours) = our_run(&sim, "ibnetdiscover", args);
        assert_eq!((code, ours.as_str()), (0, expected.as_str()), "{args:?}");
    }
}
