//! libibnetdisc cache files between the C tools and `umad`, on live ibsim fabrics
//! (example.net, fattree-1008.net, mixed.net, after one opensm sweep):
//!
//! * a cache written by C `ibnetdiscover --cache`, loaded by `umad ibnetdiscover`,
//!   `iblinkinfo` and `ibqueryerrors --load-cache`, prints what the C tools print loading it;
//! * a cache written by `umad ibnetdiscover --cache` loads in the C tools with the same text
//!   as C's own cache, and has C's header and node records byte for byte and the same port
//!   records (their order comes from C's hash table; see ibfabric::cache);
//! * re-caching a loaded cache gives exactly the bytes C writes re-caching it;
//! * `iblinkinfo --diff`, `--diffcheck`, `--filterdownports` against C, with a link unlinked
//!   through the ibsim console between the two caches.

mod common;

use std::path::{Path, PathBuf};

use common::{c_run, mask_date, our_run};
use ibfabric::cache::{CacheFile, HEADER_LEN};
use ibfabric::Fabric;
use ibsim_harness::{fabrics_dir, require_ibsim, Ibsim};

fn path_str(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// C `ibnetdiscover --cache <file>`: the file (the run must succeed).
fn c_cache(sim: &Ibsim, name: &str) -> PathBuf {
    let file = sim.workdir().join(name);
    let (code, _) = c_run(sim, "ibnetdiscover", &["--cache", path_str(&file)]);
    assert_eq!(code, 0, "C ibnetdiscover --cache {name}");
    file
}

/// `umad ibnetdiscover --cache <file>`.
fn our_cache(sim: &Ibsim, name: &str) -> PathBuf {
    let file = sim.workdir().join(name);
    let (code, _) = our_run(sim, "ibnetdiscover", &["--cache", path_str(&file)]);
    assert_eq!(code, 0, "umad ibnetdiscover --cache {name}");
    file
}

/// Runs `tool args` in C and in umad; asserts the same exit code and stdout (the
/// `ibnetdiscover` date line masked). Returns the output.
fn same(sim: &Ibsim, what: &str, tool: &str, args: &[&str]) -> String {
    let (c_code, c_out) = c_run(sim, tool, args);
    let (our_code, our_out) = our_run(sim, tool, args);
    assert_eq!(our_code, c_code, "{what}: {tool} {args:?}: exit codes");
    assert_eq!(
        mask_date(&our_out),
        mask_date(&c_out),
        "{what}: {tool} {args:?}: stdout differs"
    );
    c_out
}

/// The port records of a cache file as a sorted list (their order is C's hash walk).
fn sorted_ports(bytes: &[u8]) -> Vec<Vec<u8>> {
    let file = CacheFile::parse(bytes).expect("parses");
    let mut ports: Vec<Vec<u8>> = file
        .ports
        .iter()
        .map(|p| {
            CacheFile {
                from_node_guid: 0,
                max_hops: 0,
                nodes: Vec::new(),
                ports: vec![p.clone()],
            }
            .to_bytes()[HEADER_LEN..]
                .to_vec()
        })
        .collect();
    ports.sort();
    ports
}

/// The first CA of a netfile (its `Hca`/`Ca` line's quoted id).
fn first_ca(netfile: &Path) -> String {
    let text = std::fs::read_to_string(netfile).unwrap();
    text.lines()
        .find(|l| l.starts_with("Hca") || l.starts_with("Ca"))
        .and_then(|l| l.split('"').nth(1))
        .unwrap()
        .to_string()
}

fn compare(fabric: &str) {
    let sim = Ibsim::builder(fabrics_dir().join(fabric))
        .console(true)
        .start()
        .expect("ibsim starts");
    sim.run_sm_once().expect("opensm sweeps");
    let c_file = c_cache(&sim, "c.cache");
    let our_file = our_cache(&sim, "our.cache");
    let c_bytes = std::fs::read(&c_file).unwrap();
    let our_bytes = std::fs::read(&our_file).unwrap();

    // Our cache: C's header and nodes byte for byte, the same port records.
    let nodes_end = HEADER_LEN
        + CacheFile::parse(&c_bytes)
            .unwrap()
            .nodes
            .iter()
            .map(|n| ibfabric::cache::NODE_RECORD_LEN + 9 * n.ports.len())
            .sum::<usize>();
    assert_eq!(
        our_bytes[..nodes_end.min(our_bytes.len())],
        c_bytes[..nodes_end],
        "{fabric}: header and node records differ"
    );
    assert_eq!(our_bytes.len(), c_bytes.len(), "{fabric}: cache sizes");
    assert_eq!(
        sorted_ports(&our_bytes),
        sorted_ports(&c_bytes),
        "{fabric}: port records differ"
    );

    // Re-caching a loaded cache: C's bytes exactly.
    let c_again = sim.workdir().join("c-again.cache");
    let (code, _) = c_run(
        &sim,
        "ibnetdiscover",
        &[
            "--load-cache",
            path_str(&c_file),
            "--cache",
            path_str(&c_again),
        ],
    );
    assert_eq!(code, 0);
    let loaded = Fabric::from_ibnetdisc_cache(&c_bytes).expect("C's cache loads");
    assert_eq!(
        loaded.to_ibnetdisc_cache().unwrap(),
        std::fs::read(&c_again).unwrap(),
        "{fabric}: re-cached bytes differ from C's"
    );
    let our_again = sim.workdir().join("our-again.cache");
    let (code, _) = our_run(
        &sim,
        "ibnetdiscover",
        &[
            "--load-cache",
            path_str(&c_file),
            "--cache",
            path_str(&our_again),
        ],
    );
    assert_eq!(code, 0);
    assert_eq!(
        std::fs::read(&our_again).unwrap(),
        std::fs::read(&c_again).unwrap(),
        "{fabric}: umad ibnetdiscover --load-cache --cache"
    );

    // Error counters set after caching: ibqueryerrors reads them live.
    let ca = first_ca(sim.netfile());
    let sw = ibsim_harness::netfile_switches(sim.netfile()).unwrap()[0].clone();
    for cmd in [
        format!("PerformanceSet \"{ca}\"[1] PortCounters.SymbolErrorCounter=42"),
        format!("PerformanceSet \"{sw}\"[2] PortCounters.PortXmitDiscards=7"),
        format!("PerformanceSet \"{sw}\"[1] PortCounters.LinkDownedCounter=9"),
    ] {
        sim.console(&cmd).expect("PerformanceSet");
    }

    // Each tool loading C's cache: the C tool's text.
    let c = path_str(&c_file);
    let live = same(&sim, fabric, "ibnetdiscover", &[]);
    for args in [
        vec!["--load-cache", c],
        vec!["--load-cache", c, "-f"],
        vec!["--load-cache", c, "-l"],
        vec!["--load-cache", c, "-p"],
        vec!["--load-cache", c, "-g"],
        vec!["--load-cache", c, "-m"],
    ] {
        let out = same(&sim, fabric, "ibnetdiscover", &args);
        if args.len() == 2 {
            assert_eq!(mask_date(&out), mask_date(&live), "{fabric}: cache vs live");
        }
    }
    let live_links = same(&sim, fabric, "iblinkinfo", &[]);
    for args in [
        vec!["--load-cache", c],
        vec!["--load-cache", c, "-l"],
        vec!["--load-cache", c, "-p"],
        vec!["--load-cache", c, "-d"],
        vec!["--load-cache", c, "--switches-only"],
        vec!["--load-cache", c, "--cas-only", "-l"],
        vec!["--load-cache", c, "-G", "0x100000"],
        vec!["--load-cache", c, "-D", "0"],
    ] {
        let out = same(&sim, fabric, "iblinkinfo", &args);
        if args.len() == 2 {
            assert_eq!(out, live_links, "{fabric}: iblinkinfo cache vs live");
        }
    }
    for args in [
        // No SA runs (opensm swept once): C and umad skip the SL look-up.
        vec!["--skip-sl", "--load-cache", c],
        vec!["--skip-sl", "--load-cache", c, "-r"],
        vec!["--skip-sl", "--load-cache", c, "--switch", "--details"],
        vec!["--skip-sl", "--load-cache", c, "-D", "0"],
    ] {
        let out = same(&sim, fabric, "ibqueryerrors", &args);
        assert!(
            out.contains("SymbolErrorCounter") || args.len() > 3,
            "{fabric} {args:?}: {out}"
        );
    }

    // C tools loading our cache: the same text as loading C's.
    let ours = path_str(&our_file);
    for (tool, extra) in [
        ("ibnetdiscover", &[][..]),
        ("ibnetdiscover", &["-p"][..]),
        ("iblinkinfo", &[][..]),
        ("iblinkinfo", &["-l", "-p"][..]),
        ("ibqueryerrors", &["--skip-sl", "-r"][..]),
    ] {
        let mut from_c = vec!["--load-cache", c];
        from_c.extend_from_slice(extra);
        let mut from_ours = vec!["--load-cache", ours];
        from_ours.extend_from_slice(extra);
        let (code1, out1) = c_run(&sim, tool, &from_c);
        let (code2, out2) = c_run(&sim, tool, &from_ours);
        assert_eq!(
            (code2, mask_date(&out2)),
            (code1, mask_date(&out1)),
            "{fabric}: C {tool} {extra:?} loading our cache"
        );
        assert!(!out1.is_empty(), "{fabric}: {tool} printed nothing");
    }
}

#[test]
fn cache_example() {
    if !require_ibsim("cache_example") {
        return;
    }
    compare("example.net");
}

#[test]
fn cache_fattree_1008() {
    if !require_ibsim("cache_fattree_1008") {
        return;
    }
    compare("fattree-1008.net");
}

#[test]
fn cache_mixed() {
    if !require_ibsim("cache_mixed") {
        return;
    }
    compare("mixed.net");
}

/// Two caches of example.net with `S-sw2` port 2 (to `H-host4`) unlinked in between:
/// `iblinkinfo --diff` (cache against cache, and against the live fabric), every
/// `--diffcheck`, `--filterdownports`, and ibnetdiscover's own `--diff` reading C's caches.
#[test]
fn cache_diff_after_unlink() {
    if !require_ibsim("cache_diff_after_unlink") {
        return;
    }
    let sim = Ibsim::builder(fabrics_dir().join("example.net"))
        .console(true)
        .start()
        .expect("ibsim starts");
    sim.run_sm_once().expect("opensm sweeps");
    let before = c_cache(&sim, "before.cache");
    sim.console("Unlink \"S-sw2\"[2]").expect("unlink");
    sim.run_sm_once().expect("opensm sweeps again");
    let after = c_cache(&sim, "after.cache");
    let our_after = our_cache(&sim, "our-after.cache");
    let (b, a, oa) = (path_str(&before), path_str(&after), path_str(&our_after));

    let out = same(
        &sim,
        "diff",
        "iblinkinfo",
        &["--load-cache", a, "--diff", b],
    );
    assert!(out.contains("< "), "the diff shows the old link: {out}");
    assert!(out.contains("> "), "the diff shows the new state: {out}");
    for args in [
        vec!["--load-cache", a, "--diff", b, "-l"],
        vec!["--load-cache", a, "--diff", b, "--diffcheck", "port"],
        vec!["--load-cache", a, "--diff", b, "--diffcheck", "state"],
        vec!["--load-cache", a, "--diff", b, "--diffcheck", "port,lid"],
        vec![
            "--load-cache",
            a,
            "--diff",
            b,
            "--diffcheck",
            "PORT,State,nodedesc",
        ],
        vec!["--load-cache", a, "--diff", b, "--diffcheck", "lid", "-l"],
        vec!["--load-cache", b, "--diff", a],
        vec!["--load-cache", b, "--diff", b],
        vec!["--load-cache", a, "--diff", b, "--switches-only"],
        vec!["--load-cache", a, "--diff", b, "--cas-only"],
        vec!["--load-cache", a, "--diff", b, "-G", "0x200000"],
        vec!["--load-cache", oa, "--diff", b],
        vec!["--diff", b],
        vec!["--diff", b, "-l", "-p"],
        vec!["--load-cache", a, "--filterdownports", b],
        vec!["--load-cache", a, "--filterdownports", a],
        vec!["--load-cache", a, "--filterdownports", a, "-d"],
        vec!["--filterdownports", a],
        vec!["--load-cache", a, "--diffcheck", "bogus", "--diff", b],
        vec!["--load-cache", "/nonexistent/cache"],
        vec!["--load-cache", a, "--diff", "/nonexistent/cache"],
        vec!["--load-cache", a, "-D", "0,1"],
    ] {
        same(&sim, "diff", "iblinkinfo", &args);
    }
    // Traffic towards the unlinked port bumps relay errors between two runs: suppressed.
    let quiet = ["--skip-sl", "-s", "PortRcvSwitchRelayErrors"];
    for (cache, nodes) in [(b, 6), (a, 5)] {
        let mut args = quiet.to_vec();
        args.extend(["--load-cache", cache, "-r"]);
        let out = same(&sim, "diff", "ibqueryerrors", &args);
        let summary = format!("## Summary: {nodes} nodes checked");
        assert!(out.contains(&summary), "{out}");
    }

    // ibnetdiscover's own diff (its format is umad's) reads the C caches.
    let (code, out) = our_run(&sim, "ibnetdiscover", &["--load-cache", a, "--diff", b]);
    assert_eq!(code, 1, "a difference: {out}");
    assert!(out.contains("H-host4") || out.contains("host4"), "{out}");
    let (code, out) = our_run(&sim, "ibnetdiscover", &["--load-cache", a, "--diff", a]);
    assert_eq!((code, out.as_str()), (0, ""), "no difference");
    let (code, _) = our_run(&sim, "ibnetdiscover", &["--diff", a]);
    assert_eq!(code, 0, "the live fabric is the one cached last");
}
