//! The writer and parser against fixtures captured from the C `ibnetdiscover` (see
//! `tests/capture.rs` and `tests/data/README.md`): parse → write is byte-identical for every
//! mode the text carries enough for, and a live run keeps the fixtures honest.

mod common;

use ibfabric::ibnetdiscover::generated_date;
use ibfabric::{Fabric, Format, NodeNameMap, Port, WriteOptions};
use ibmad::{PhysPortState, PortState};

fn fixture(fabric: &str, case: &str) -> String {
    let p = common::fixture_path(fabric, case);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn opts(text: &str) -> WriteOptions<'static> {
    WriteOptions {
        date: generated_date(text).unwrap_or_default().to_owned(),
        ..WriteOptions::default()
    }
}

fn name_map() -> NodeNameMap {
    NodeNameMap::load(common::name_map_path()).unwrap()
}

/// Writes `f` with `o` (dated like `want`) and compares.
fn writes(what: &str, f: &Fabric, o: &WriteOptions<'_>, want: &str) {
    let o = WriteOptions {
        date: generated_date(want).unwrap_or_default().to_owned(),
        ..o.clone()
    };
    same(what, &f.to_ibnetdiscover(&o), want);
}

/// Line-by-line comparison with a readable first difference.
fn same(what: &str, got: &str, want: &str) {
    if got != want {
        let first = got
            .lines()
            .zip(want.lines())
            .position(|(g, w)| g != w)
            .unwrap_or(got.lines().count().min(want.lines().count()));
        panic!(
            "{what}: differs at line {}:\n got: {:?}\nwant: {:?}\n({} vs {} lines)",
            first + 1,
            got.lines().nth(first),
            want.lines().nth(first),
            got.lines().count(),
            want.lines().count()
        );
    }
}

#[test]
fn topology_modes_round_trip_byte_identical() {
    let map = name_map();
    for fabric in common::FABRICS {
        for (case, set) in [
            (
                "default",
                (|_: &mut WriteOptions<'_>| {}) as fn(&mut WriteOptions<'_>),
            ),
            ("full", |o| o.full = true),
            ("max_hops", |o| o.max_hops = true),
            ("grouping", |o| o.grouping = true),
            ("show", |o| o.show_progress = true),
        ] {
            let text = fixture(fabric, case);
            let parsed = Fabric::parse_ibnetdiscover(&text)
                .unwrap_or_else(|e| panic!("{fabric}.{case}: {e}"));
            let mut o = opts(&text);
            set(&mut o);
            same(
                &format!("{fabric}.{case}"),
                &parsed.to_ibnetdiscover(&o),
                &text,
            );
        }
        // The name-mapped file needs the map to be written back.
        let text = fixture(fabric, "node_name_map");
        let parsed = Fabric::parse_ibnetdiscover(&text).unwrap();
        let mut o = opts(&text);
        o.node_name_map = Some(&map);
        same(
            &format!("{fabric}.node_name_map"),
            &parsed.to_ibnetdiscover(&o),
            &text,
        );
    }
}

#[test]
fn default_text_yields_the_other_modes() {
    let map = name_map();
    for fabric in common::FABRICS {
        let text = fixture(fabric, "default");
        let parsed = Fabric::parse_ibnetdiscover(&text).unwrap();
        let base = opts(&text);
        // --node-name-map from the plain discovery.
        let o = WriteOptions {
            node_name_map: Some(&map),
            ..base.clone()
        };
        writes(
            &format!("{fabric}: default + map"),
            &parsed,
            &o,
            &fixture(fabric, "node_name_map"),
        );
        // -g: libibnetdisc's chassis grouping, computed on the model in libibnetdisc's node
        // order (from the -s progress records).
        let mut ordered = Fabric::parse_ibnetdiscover(&fixture(fabric, "show")).unwrap();
        ordered.group_chassis();
        let o = WriteOptions {
            grouping: true,
            ..base.clone()
        };
        writes(
            &format!("{fabric}: -s order + group_chassis + -g"),
            &ordered,
            &o,
            &fixture(fabric, "grouping"),
        );
        // The grouping read back from -g text is the computed one.
        let grouped = Fabric::parse_ibnetdiscover(&fixture(fabric, "grouping")).unwrap();
        assert_eq!(grouped.chassis.len(), ordered.chassis.len(), "{fabric}");
        for (g, o) in grouped.chassis.iter().zip(&ordered.chassis) {
            let guids = |f: &Fabric, c: &ibfabric::Chassis| {
                c.nodes.iter().map(|&i| f.nodes[i].guid).collect::<Vec<_>>()
            };
            assert_eq!((g.number, g.guid), (o.number, o.guid), "{fabric}");
            assert_eq!(guids(&grouped, g), guids(&ordered, o), "{fabric}");
        }
        for (case, format) in [
            (
                "list",
                Format::List {
                    ca: true,
                    switch: true,
                    router: true,
                },
            ),
            (
                "hca_list",
                Format::List {
                    ca: true,
                    switch: false,
                    router: false,
                },
            ),
            (
                "switch_list",
                Format::List {
                    ca: false,
                    switch: true,
                    router: false,
                },
            ),
            (
                "router_list",
                Format::List {
                    ca: false,
                    switch: false,
                    router: true,
                },
            ),
        ] {
            let o = WriteOptions {
                format,
                ..base.clone()
            };
            writes(
                &format!("{fabric}.{case}"),
                &parsed,
                &o,
                &fixture(fabric, case),
            );
        }
        // The -f file carries everything the default file does.
        let full = Fabric::parse_ibnetdiscover(&fixture(fabric, "full")).unwrap();
        writes(&format!("{fabric}: full → default"), &full, &base, &text);
    }
}

/// The ports report needs what the topology text lacks: libibnetdisc's all-nodes order
/// (taken from the `-s` progress records) and the unlinked switch ports (ibsim reports them
/// as 4x SDR, Down/Polling). Added by hand, the writer reproduces `-p` exactly.
#[test]
fn ports_report_from_a_completed_model() {
    for fabric in common::FABRICS {
        let show = fixture(fabric, "show");
        let mut f = Fabric::parse_ibnetdiscover(&show).unwrap();
        for node in f.nodes.iter_mut().filter(|n| n.is_switch()) {
            for number in 1..=node.num_ports {
                if node.port(number).is_none() {
                    let mut p = Port::new(number, node.port_guid);
                    p.lid = node.lid;
                    p.width = 2;
                    p.speed = 1;
                    p.state = PortState::Down;
                    p.phys_state = PhysPortState::Polling;
                    node.set_port(p);
                }
            }
        }
        let o = WriteOptions {
            format: Format::Ports,
            ..WriteOptions::default()
        };
        same(
            &format!("{fabric}.ports"),
            &f.to_ibnetdiscover(&o),
            &fixture(fabric, "ports"),
        );
        // And the model survives JSON unchanged.
        let back = Fabric::from_json(&f.to_json()).unwrap();
        assert_eq!(back, f, "{fabric}: JSON round trip");
    }
}

/// The fixtures against a fresh run of the C tool, so they cannot rot (dates masked).
#[test]
fn live_fixtures_match_c() {
    if !ibsim_harness::require_ibsim("live_fixtures_match_c") {
        return;
    }
    let mask = |t: &str| {
        let date = generated_date(t).unwrap_or_default().to_owned();
        if date.is_empty() {
            t.to_owned()
        } else {
            t.replace(&date, "<date>")
        }
    };
    let sim = common::start("example");
    for case in common::CASES {
        let live = common::run_c(&sim, case.args);
        same(
            &format!("live example.{}", case.name),
            &mask(&live),
            &mask(&fixture("example", case.name)),
        );
    }
    drop(sim);
    for (fabric, names) in [
        ("mixed", &["default", "ports", "grouping", "show"][..]),
        ("fattree-1008", &["default", "ports"][..]),
    ] {
        let sim = common::start(fabric);
        for name in names {
            let case = common::CASES.iter().find(|c| c.name == *name).unwrap();
            let live = common::run_c(&sim, case.args);
            same(
                &format!("live {fabric}.{name}"),
                &mask(&live),
                &mask(&fixture(fabric, name)),
            );
        }
    }
}
