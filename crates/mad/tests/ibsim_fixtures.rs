//! Real replies captured from ibsim (`cargo xtask capture-fixtures`, fabric
//! `fabrics/example.net` after opensm, client at H-host3) decoded to the values the fabric
//! defines. LIDs as opensm assigns them there: H-host1 1, S-sw1 2, S-sw2 3, H-host2 4,
//! H-host3 5, H-host4 6.

use mad::{
    LinkWidth, Mad, MadHeader, Method, MgmtClass, NodeDescription, NodeInfo, NodeType,
    PhysPortState, PortCounters, PortInfo, PortState, Smp,
};

/// The 256-byte MAD of a fixture file (hex lines after `#` comments).
fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/fixtures/ibsim/{name}.hex",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let hex: String = text.lines().filter(|l| !l.starts_with('#')).collect();
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&hex[i..i + 2], 16)
                .unwrap_or_else(|e| panic!("{path}: bad hex at {i}: {e}"))
        })
        .collect();
    assert_eq!(bytes.len(), 256, "{path}: a fixture is one 256-byte MAD");
    bytes
}

/// The SMP data of a fixture, after checking it is a successful DR GetResp.
fn smp_data(name: &str, attr: u16) -> Vec<u8> {
    let mad = fixture(name);
    let smp = Smp::new_checked(&mad[..]).unwrap();
    assert_eq!(smp.mgmt_class(), MgmtClass::SubnDirectedRoute, "{name}");
    assert_eq!(smp.method(), Method::GetResp, "{name}");
    assert!(smp.direction(), "{name}: D bit set on the way back");
    assert!(
        smp.status().is_success(),
        "{name}: status {:#06x}",
        smp.status().raw()
    );
    assert_eq!(smp.attr_id(), attr, "{name}");
    assert_eq!((smp.dr_slid(), smp.dr_dlid()), (0xffff, 0xffff), "{name}");
    smp.data().to_vec()
}

/// parse → emit reproduces the captured bytes.
fn round_trips(data: &[u8], len: usize, emit: impl Fn(&mut [u8])) {
    let mut out = data.to_vec();
    out[..len].fill(0);
    emit(&mut out);
    assert_eq!(&out[..len], &data[..len]);
}

#[test]
fn node_info_of_self_and_a_switch() {
    let d = smp_data("node_info_host3", 0x11);
    let ni = NodeInfo::parse(&d).unwrap();
    assert_eq!((ni.base_version, ni.class_version), (1, 1));
    assert_eq!(ni.node_type, NodeType::ChannelAdapter);
    assert_eq!((ni.num_ports, ni.local_port_num), (1, 1));
    assert_eq!(
        (ni.node_guid, ni.port_guid, ni.system_image_guid),
        (0x10_0005, 0x10_0006, 0x10_0005)
    );
    assert_eq!(ni.revision, 0xa1);
    round_trips(&d, NodeInfo::LEN, |b| ni.emit(b));

    let d = smp_data("node_info_sw2", 0x11);
    let ni = NodeInfo::parse(&d).unwrap();
    assert_eq!(ni.node_type, NodeType::Switch);
    assert_eq!(
        (ni.num_ports, ni.local_port_num, ni.node_guid),
        (8, 1, 0x20_0001)
    );
    let header =
        MadHeader::parse(&Mad::new_checked(&fixture("node_info_sw2")[..]).unwrap()).unwrap();
    assert_eq!(header.attr_id, 0x11);
    assert_eq!(header.tid & 0xffff_ffff, 0x5502);
}

#[test]
fn node_descriptions() {
    let d = smp_data("node_desc_sw2", 0x10);
    assert_eq!(NodeDescription::parse(&d).unwrap().as_str(), "sw2");
    let d = smp_data("node_desc_host1", 0x10);
    let nd = NodeDescription::parse(&d).unwrap();
    assert_eq!(nd.as_str(), "host1 HCA-1");
    round_trips(&d, 64, |b| nd.emit(b));
}

#[test]
fn port_info_active_down_and_switch_port0() {
    let d = smp_data("port_info_host3", 0x15);
    let pi = PortInfo::parse(&d).unwrap();
    assert_eq!((pi.lid, pi.master_sm_lid, pi.local_port_num), (5, 1, 1));
    assert_eq!(pi.gid_prefix, 0xfe80_0000_0000_0000);
    assert_eq!(pi.capability_mask, 0x0050_c048);
    assert_eq!(pi.port_state, PortState::Active);
    assert_eq!(pi.port_physical_state, PhysPortState::LinkUp);
    assert_eq!(pi.link_width_active, LinkWidth::X4);
    assert_eq!(pi.link_speed_active, 4, "QDR");
    assert_eq!(pi.rate_gbps(), Some(40.0));
    round_trips(&d, PortInfo::LEN, |b| pi.emit(b));

    let pi = PortInfo::parse(&smp_data("port_info_sw2_port0", 0x15)).unwrap();
    // LocalPortNum is the port the SMP came in through (S-sw2 port 1), even for port 0.
    assert_eq!((pi.lid, pi.local_port_num), (3, 1));
    assert_eq!(pi.port_state, PortState::Active);

    let pi = PortInfo::parse(&smp_data("port_info_sw2_port8", 0x15)).unwrap();
    assert_eq!(pi.port_state, PortState::Active);
    assert_eq!(pi.link_width_active, LinkWidth::X4);

    let pi = PortInfo::parse(&smp_data("port_info_host2_port2", 0x15)).unwrap();
    assert_eq!(pi.port_state, PortState::Down);
    assert_eq!(pi.port_physical_state, PhysPortState::Polling);
}

#[test]
fn perf_port_counters() {
    let mad = fixture("perf_port_counters_host3");
    let h = MadHeader::parse(&Mad::new_checked(&mad[..]).unwrap()).unwrap();
    assert_eq!(
        (h.mgmt_class, h.method, h.attr_id),
        (MgmtClass::Perf, Method::GetResp, 0x12)
    );
    assert!(h.status.is_success());
    let data = mad::perf::data(&mad).unwrap();
    let pc = PortCounters::parse(data).unwrap();
    assert_eq!(pc.port_select, 1);
    // ibsim counts 72 dwords per packet that crossed the port.
    assert!(pc.port_xmit_pkts > 0 && pc.port_rcv_pkts > 0, "{pc:?}");
    assert_eq!(pc.port_xmit_data, pc.port_xmit_pkts * 72);
    assert_eq!(pc.port_rcv_data, pc.port_rcv_pkts * 72);
    round_trips(data, PortCounters::LEN, |b| pc.emit(b));
}
