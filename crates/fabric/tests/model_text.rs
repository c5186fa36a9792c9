//! A hand-built model with what the ibsim fixtures lack — parallel links, a 2-port HCA on two
//! switches, a router, a dead CA port, a node seen but not fully queried, extended speeds
//! (EDR/HDR/NDR), FDR10, 1x/2x/12x widths, a base port 0, LMC > 0, a missing SystemImageGUID,
//! a non-printable description byte — written as the C code (infiniband-diags 44
//! `ibnetdiscover.c`) prints it, parsed back, and through JSON.

use ibfabric::model::CAP_HAS_EXT_SPEEDS;
use ibfabric::{Fabric, Format, Node, Origin, Port, PortRef, WriteOptions};
use ibmad::{NodeType, PhysPortState, PortState};

const A: u64 = 0x0002_c900_0000_000a;
const B: u64 = 0x0002_c900_0000_000b;

fn port(number: u8, guid: u64, lid: u16, width: u8, speed: u8, ext: u8) -> Port {
    let mut p = Port::new(number, guid);
    p.lid = lid;
    p.width = width;
    p.speed = speed;
    p.speed_ext = ext;
    p.state = PortState::Active;
    p.phys_state = PhysPortState::LinkUp;
    p.vl_cap = 4;
    p
}

fn switch(guid: u64, lid: u16, desc: &str, ext_cap: bool) -> Node {
    let mut n = Node::new(NodeType::Switch, 4, guid);
    n.vendor_id = 0x2c9;
    n.device_id = 0xc738;
    n.port_guid = guid;
    n.lid = lid;
    n.description = desc.into();
    let mut p0 = port(0, guid, lid, 2, 1, 0);
    if ext_cap {
        p0.capability_mask = CAP_HAS_EXT_SPEEDS;
    }
    n.set_port(p0);
    n
}

/// Vec order: B, A, R, H, D (as libibnetdisc would iterate them).
fn fabric() -> Fabric {
    let mut b = switch(B, 2, "switch B", true);
    b.enhanced_port0 = true;
    b.set_port(port(1, B, 2, 2, 0, 2)); // 4x EDR
    let mut p = port(2, B, 2, 1, 4, 0); // 1x FDR10
    p.mlnx_speed = 1;
    b.set_port(p);
    b.set_port(port(3, B, 2, 16, 0, 8)); // 2x NDR
    b.set_port(port(4, B, 2, 8, 2, 0)); // 12x DDR
    let mut a = switch(A, 1, "switch\tA", false);
    a.system_image_guid = A;
    a.set_port(port(1, A, 1, 2, 4, 2)); // EDR, but port 0 says no extended speeds: QDR
    let mut p = port(2, A, 1, 1, 4, 0);
    p.mlnx_speed = 1;
    a.set_port(p);
    a.set_port(port(3, A, 1, 2, 4, 4)); // HDR judged by port 0 too: QDR
    let mut dead = port(4, A, 1, 2, 1, 0);
    dead.state = PortState::Down;
    dead.phys_state = PhysPortState::Polling;
    a.set_port(dead);
    let mut r = Node::new(NodeType::Router, 1, 0x300);
    r.system_image_guid = 0x300;
    r.port_guid = 0x301;
    r.description = "router R".into();
    r.set_port(port(1, 0x301, 30, 8, 2, 0));
    let mut h = Node::new(NodeType::ChannelAdapter, 2, 0x100);
    h.vendor_id = 0x2c9;
    h.device_id = 0x1017;
    h.system_image_guid = 0x100;
    h.port_guid = 0x101;
    h.local_port = 1;
    h.description = "hca H".into();
    let mut p = port(1, 0x101, 11, 2, 4, 4);
    p.capability_mask = CAP_HAS_EXT_SPEEDS;
    h.set_port(p);
    let mut p = port(2, 0x102, 12, 16, 0, 8);
    p.lmc = 2;
    p.capability_mask = CAP_HAS_EXT_SPEEDS;
    h.set_port(p);
    let mut d = Node::new(NodeType::ChannelAdapter, 1, 0x200);
    d.queried.node_description = false;
    d.queried.port_info = false;
    let mut p = Port::new(1, 0x201);
    p.has_info = false;
    d.set_port(p);
    let mut f = Fabric {
        nodes: vec![b, a, r, h, d],
        from: Some(Origin { node: 3, port: 1 }),
        ..Fabric::default()
    };
    let at = |node, port| PortRef { node, port };
    for (x, y) in [
        (at(0, 1), at(1, 1)),
        (at(0, 2), at(1, 2)),
        (at(0, 3), at(3, 2)),
        (at(0, 4), at(2, 1)),
        (at(1, 3), at(3, 1)),
    ] {
        assert!(f.link(x, y));
    }
    f.validate().unwrap();
    f
}

const DATE: &str = "Thu Jan  1 00:00:00 1970";

const TOPOLOGY: &str = "#\n# Topology file: generated on Thu Jan  1 00:00:00 1970\n#\n\
# Initiated from node 0000000000000100 port 0000000000000101\n\
\n\
vendid=0x2c9\n\
devid=0xc738\n\
switchguid=0x2c9000000000b(2c9000000000b)\n\
Switch\t4 \"S-0002c9000000000b\"\t\t# \"switch B\" enhanced port 0 lid 2 lmc 0\n\
[1]\t\"S-0002c9000000000a\"[1]\t\t# \"switch A\" lid 1 4xEDR\n\
[2]\t\"S-0002c9000000000a\"[2]\t\t# \"switch A\" lid 1 1xFDR10\n\
[3]\t\"H-0000000000000100\"[2](102) \t\t# \"hca H\" lid 12 2xNDR\n\
[4]\t\"R-0000000000000300\"[1](301) \t\t# \"router R\" lid 30 12xDDR\n\
\n\
vendid=0x2c9\n\
devid=0xc738\n\
sysimgguid=0x2c9000000000a\n\
switchguid=0x2c9000000000a(2c9000000000a)\n\
Switch\t4 \"S-0002c9000000000a\"\t\t# \"switch A\" base port 0 lid 1 lmc 0\n\
[1]\t\"S-0002c9000000000b\"[1]\t\t# \"switch B\" lid 2 4xQDR\n\
[2]\t\"S-0002c9000000000b\"[2]\t\t# \"switch B\" lid 2 1xFDR10\n\
[3]\t\"H-0000000000000100\"[1](101) \t\t# \"hca H\" lid 11 4xQDR\n\
\n\
vendid=0x2c9\n\
devid=0x1017\n\
sysimgguid=0x100\n\
caguid=0x100\n\
Ca\t2 \"H-0000000000000100\"\t\t# \"hca H\"\n\
[1](101) \t\"S-0002c9000000000a\"[3]\t\t# lid 11 lmc 0 \"switch A\" lid 1 4xHDR\n\
[2](102) \t\"S-0002c9000000000b\"[3]\t\t# lid 12 lmc 2 \"switch B\" lid 2 2xNDR\n\
\n\
vendid=0x0\n\
devid=0x0\n\
caguid=0x200\n\
Ca\t1 \"H-0000000000000200\"\t\t# \"\"\n\
\n\
vendid=0x0\n\
devid=0x0\n\
sysimgguid=0x300\n\
rtguid=0x300\n\
Rt\t1 \"R-0000000000000300\"\t\t# \"router R\"\n\
[1](301) \t\"S-0002c9000000000b\"[4]\t\t# lid 30 lmc 0 \"switch B\" lid 2 12xDDR\n";

const PORTS: &str = "\
SW     2  4 0x0002c9000000000b 12x DDR - RT    30  1 0x0000000000000301 ( 'switch B' - 'router R' )\n\
SW     2  3 0x0002c9000000000b 2x NDR - CA    12  2 0x0000000000000102 ( 'switch B' - 'hca H' )\n\
SW     2  2 0x0002c9000000000b 1x FDR10 - SW     1  2 0x0002c9000000000a ( 'switch B' - 'switch A' )\n\
SW     2  1 0x0002c9000000000b 4x EDR - SW     1  1 0x0002c9000000000a ( 'switch B' - 'switch A' )\n\
SW     1  4 0x0002c9000000000a 4x SDR                                    'switch A'\n\
SW     1  3 0x0002c9000000000a 4x QDR - CA    11  1 0x0000000000000101 ( 'switch A' - 'hca H' )\n\
SW     1  2 0x0002c9000000000a 1x FDR10 - SW     2  2 0x0002c9000000000b ( 'switch A' - 'switch B' )\n\
SW     1  1 0x0002c9000000000a 4x QDR - SW     2  1 0x0002c9000000000b ( 'switch A' - 'switch B' )\n\
RT    30  1 0x0000000000000301 12x DDR - SW     2  4 0x0002c9000000000b ( 'router R' - 'switch B' )\n\
CA    12  2 0x0000000000000102 2x NDR - SW     2  3 0x0002c9000000000b ( 'hca H' - 'switch B' )\n\
CA    11  1 0x0000000000000101 4x HDR - SW     1  3 0x0002c9000000000a ( 'hca H' - 'switch A' )\n\
CA     0  1 0x0000000000000201 ?? ???                                    ''\n";

const LIST: &str = "\
Ca\t : 0x0000000000000100 ports 2 devid 0x1017 vendid 0x2c9 \"hca H\"\n\
Ca\t : 0x0000000000000200 ports 1 devid 0x0 vendid 0x0 \"\"\n\
Switch\t : 0x0002c9000000000b ports 4 devid 0xc738 vendid 0x2c9 \"switch B\"\n\
Switch\t : 0x0002c9000000000a ports 4 devid 0xc738 vendid 0x2c9 \"switch A\"\n\
Router\t : 0x0000000000000300 ports 1 devid 0x0 vendid 0x0 \"router R\"\n";

fn opts(format: Format) -> WriteOptions<'static> {
    WriteOptions {
        format,
        date: DATE.into(),
        ..WriteOptions::default()
    }
}

#[test]
fn hand_built_model_writes_the_c_text() {
    let f = fabric();
    assert_eq!(f.to_ibnetdiscover(&opts(Format::Topology)), TOPOLOGY);
    assert_eq!(f.to_ibnetdiscover(&opts(Format::Ports)), PORTS);
    let all = Format::List {
        ca: true,
        switch: true,
        router: true,
    };
    assert_eq!(f.to_ibnetdiscover(&opts(all)), LIST);
    // -f: the switch ports' raw codes, the CA ports' own.
    let full = WriteOptions {
        full: true,
        ..opts(Format::Topology)
    };
    let text = f.to_ibnetdiscover(&full);
    assert!(
        text.contains("# \"switch A\" lid 1 4xEDR s=0 w=2 v=4\n"),
        "{text}"
    );
    assert!(
        text.contains("# \"hca H\" lid 11 4xQDR s=4 w=2 v=4\n"),
        "{text}"
    );
    assert!(
        text.contains("lid 12 lmc 2 \"switch B\" lid 2 2xNDR s=0 w=16 v=4\n"),
        "{text}"
    );
}

#[test]
fn links_are_listed_once_each() {
    let f = fabric();
    let links = f.links();
    assert_eq!(links.len(), 5);
    assert!(links.iter().all(|l| l.a < l.b));
    let between_switches = links
        .iter()
        .filter(|l| l.a.node == 0 && l.b.node == 1)
        .count();
    assert_eq!(between_switches, 2, "parallel links");
    assert_eq!(f.node_by_guid(0x100).unwrap().description, "hca H");
    assert_eq!(
        f.port_by_guid(0x102).map(|(n, p)| (n, p.number)),
        Some((3, 2))
    );
    assert_eq!(f.port_by_guid(A).map(|(n, p)| (n, p.number)), Some((1, 0)));
    assert!(f.node_by_guid(0x999).is_none());
}

#[test]
fn hand_built_text_parses_back() {
    let parsed = Fabric::parse_ibnetdiscover(TOPOLOGY).unwrap();
    assert_eq!(parsed.to_ibnetdiscover(&opts(Format::Topology)), TOPOLOGY);
    let h = parsed.node_by_guid(0x100).unwrap();
    assert_eq!(h.port(2).unwrap().lmc, 2);
    assert_eq!(parsed.links().len(), 5);
    assert_eq!(parsed.from_node().unwrap().guid, 0x100);
    assert_eq!(parsed.node_by_guid(0x200).unwrap().ports.len(), 0);
}

#[test]
fn json_round_trip() {
    let f = fabric();
    let json = f.to_json();
    assert!(json.contains("\"schema_version\": 1"), "{json}");
    assert!(json.contains("\"guid\": \"0x0002c9000000000a\""), "{json}");
    assert!(json.contains("\"node_type\": \"Router\""), "{json}");
    assert_eq!(Fabric::from_json(&json).unwrap(), f);
    let parsed = Fabric::parse_ibnetdiscover(TOPOLOGY).unwrap();
    assert_eq!(Fabric::from_json(&parsed.to_json()).unwrap(), parsed);
}

#[test]
fn bad_json_is_rejected_with_a_reason() {
    let json = fabric().to_json();
    let cases = [
        ("{", "EOF"),
        (
            &*json.replace("\"schema_version\": 1", "\"schema_version\": 2"),
            "schema_version 2",
        ),
        (
            &*json.replace("\"0x0002c9000000000a\"", "\"2c9000000000a\""),
            "0x",
        ),
        (
            &*json.replace("\"0x0002c9000000000a\"", "\"0x1g\""),
            "not hex",
        ),
        (
            &*json.replace("\"node\": 3,", "\"node\": 99,"),
            "out of range",
        ),
        (&*json.replace("\"Router\"", "\"Bridge\""), "Bridge"),
    ];
    for (text, want) in cases {
        let e = Fabric::from_json(text).unwrap_err().to_string();
        assert!(e.contains(want), "{want:?} not in {e:?}");
    }
}

#[test]
fn bad_text_gives_line_numbers() {
    let cases: &[(&str, usize, &str)] = &[
        (
            "Switch\tx \"S-1\"\t\t# \"s\" base port 0 lid 1 lmc 0\n",
            1,
            "port count",
        ),
        (
            "vendid=0x0\ndevid=0x0\nCa\t1 \"H-1\"\t\t# \"x\"\n",
            3,
            "guid=",
        ),
        (
            "[1]\t\"S-1\"[1]\t\t# \"s\" lid 1 4xQDR\n",
            1,
            "before any node",
        ),
        ("garbage\n", 1, "unrecognised"),
        ("#\n# nonsense header\n", 2, "header"),
        ("vendid=0x0", 1, "newline"),
        ("vendid=zz\n", 1, "0x"),
    ];
    for (text, line, want) in cases {
        let e = Fabric::parse_ibnetdiscover(text).unwrap_err();
        assert_eq!(e.line, *line, "{text:?}: {e}");
        assert!(e.to_string().contains(want), "{want:?} not in {e}");
    }
    // A link listed from one end only.
    let one_sided = TOPOLOGY.replace(
        "[3]\t\"H-0000000000000100\"[1](101) \t\t# \"hca H\" lid 11 4xQDR\n",
        "",
    );
    let e = Fabric::parse_ibnetdiscover(&one_sided).unwrap_err();
    assert!(e.message.contains("other end"), "{e}");
    // A peer without a section.
    let orphan = TOPOLOGY.replace(
        "Rt\t1 \"R-0000000000000300\"\t\t# \"router R\"\n[1](301) \t\"S-0002c9000000000b\"[4]\t\t# lid 30 lmc 0 \"switch B\" lid 2 12xDDR\n",
        "",
    ).replace("rtguid=0x300\n", "").replace("sysimgguid=0x300\n", "");
    let e = Fabric::parse_ibnetdiscover(&orphan).unwrap_err();
    assert!(
        e.message.contains("vendid") || e.message.contains("section"),
        "{e}"
    );
    // Every prefix of valid text either parses or fails cleanly.
    for cut in 0..TOPOLOGY.len() {
        if TOPOLOGY.is_char_boundary(cut) {
            let _ = Fabric::parse_ibnetdiscover(&TOPOLOGY[..cut]);
        }
    }
}
