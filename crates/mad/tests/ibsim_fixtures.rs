//! Real replies captured from ibsim (`cargo xtask capture-fixtures`, fabric
//! `fabrics/example.net` after opensm, client at H-host3) decoded to the values the fabric
//! defines. LIDs as opensm assigns them there: H-host1 1, S-sw1 2, S-sw2 3, H-host2 4,
//! H-host3 5, H-host4 6.

use ibmad::attr::{self, class_cap, vl_arb_attr_mod, VlArbBlock, VlArbEntry};
use ibmad::sa::{self, SaRecord};
use ibmad::{
    perf, ClassPortInfo, Gid, GuidInfo, LinearForwardingTable, LinkSpeed, LinkWidth, Mad,
    MadHeader, Method, MgmtClass, Mtu, MulticastForwardingTable, NodeDescription, NodeInfo,
    NodeType, PKeyTable, PhysPortState, PortCounters, PortCountersExt, PortInfo, PortState, Rate,
    RmppHeader, SaHeader, SaMad, SaStatus, Selector, SlToVlTable, Smp, SwitchInfo, VlArbTable,
};

/// LIDs opensm assigns on `fabrics/example.net`.
mod lid {
    pub const HOST1: u16 = 1;
    pub const SW1: u16 = 2;
    pub const SW2: u16 = 3;
    pub const HOST2: u16 = 4;
    pub const HOST3: u16 = 5;
    pub const HOST4: u16 = 6;
}

/// GUIDs ibsim gives the nodes of `fabrics/example.net` (fabrics/README.md).
mod guid {
    pub const HOST1_PORT1: u64 = 0x10_0001;
    pub const HOST3_NODE: u64 = 0x10_0005;
    pub const HOST3_PORT1: u64 = 0x10_0006;
}

/// The link-local subnet prefix opensm leaves in PortInfo.GidPrefix.
const SUBNET_PREFIX: u64 = 0xfe80_0000_0000_0000;

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

/// The SMP data of a fixture and its attribute modifier (see [`smp_data`]).
fn smp_data_mod(name: &str, attr: u16) -> (Vec<u8>, u32) {
    let data = smp_data(name, attr);
    let mad = fixture(name);
    (data, Smp::new_checked(&mad[..]).unwrap().attr_mod())
}

/// The PerfMgt data area (MAD offset 64) of a fixture, after checking it is a successful
/// PerfMgt GetResp for `attr`.
fn perf_data(name: &str, attr: u16) -> Vec<u8> {
    let mad = fixture(name);
    let h = MadHeader::parse(&Mad::new_checked(&mad[..]).unwrap()).unwrap();
    assert_eq!(
        (h.mgmt_class, h.class_version, h.method, h.attr_id),
        (
            MgmtClass::Perf,
            perf::PERF_CLASS_VERSION,
            Method::GetResp,
            attr
        ),
        "{name}"
    );
    assert!(h.status.is_success(), "{name}: status {}", h.status);
    perf::data(&mad).unwrap().to_vec()
}

/// The one record of an SA `GetResp` fixture, after checking the SA header: class 0x03
/// version 2, success, RMPP inactive (one MAD), the record's attribute ID, opensm's
/// AttributeOffset for it (its size padded to 8 bytes), and the ComponentMask the query sent.
/// Also checks that parse → emit reproduces the record's captured bytes.
fn sa_record<R: SaRecord + PartialEq + std::fmt::Debug>(name: &str, comp_mask: u64) -> R {
    let mad = fixture(name);
    let sa = SaMad::new_checked(&mad[..]).unwrap();
    let h = SaHeader::parse(&sa).unwrap();
    assert_eq!(
        (h.header.mgmt_class, h.header.class_version, h.header.method),
        (MgmtClass::SubnAdm, sa::SA_CLASS_VERSION, Method::GetResp),
        "{name}"
    );
    assert_eq!(sa.sa_status(), SaStatus::Success, "{name}");
    assert!(h.header.status.is_success(), "{name}");
    assert_eq!(h.rmpp, RmppHeader::INACTIVE, "{name}: a single MAD");
    assert_eq!(h.header.attr_id, R::ATTR_ID, "{name}");
    assert_eq!(h.attr_offset, R::ATTR_OFFSET, "{name}");
    assert_eq!(h.comp_mask, comp_mask, "{name}");
    // The header itself round-trips too.
    let mut out = [0u8; sa::SA_HEADER_LEN];
    h.emit(&mut SaMad::new_unchecked(&mut out[..]));
    assert_eq!(out[..], mad[..sa::SA_HEADER_LEN], "{name}");

    // A Get answers with one record at the start of the data; what follows it in the MAD is
    // padding (opensm leaves stack bytes there), not a record.
    let record = sa.records().next().expect("one record");
    let parsed = sa.parse_records::<R>().next().unwrap().unwrap();
    assert!(R::parse(sa.data()).is_ok_and(|r| r == parsed), "{name}");
    round_trips(record, R::LEN, |b| parsed.emit(b));
    parsed
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
    let data = ibmad::perf::data(&mad).unwrap();
    let pc = PortCounters::parse(data).unwrap();
    assert_eq!(pc.port_select, 1);
    // ibsim counts 72 dwords per packet that crossed the port.
    assert!(pc.port_xmit_pkts > 0 && pc.port_rcv_pkts > 0, "{pc:?}");
    assert_eq!(pc.port_xmit_data, pc.port_xmit_pkts * 72);
    assert_eq!(pc.port_rcv_data, pc.port_rcv_pkts * 72);
    round_trips(data, PortCounters::LEN, |b| pc.emit(b));
}

#[test]
fn switch_info_of_sw2() {
    let (d, attr_mod) = smp_data_mod("switch_info_sw2", attr::id::SWITCH_INFO);
    assert_eq!(attr_mod, 0);
    let si = SwitchInfo::parse(&d).unwrap();
    // ibsim's switch model: a 30K-entry LFT, a 1K-entry MFT, no random FDB.
    assert_eq!(si.linear_fdb_cap, 0x7800);
    assert_eq!(si.random_fdb_cap, 0);
    assert_eq!(si.multicast_fdb_cap, 0x0400);
    // opensm programmed the LFT up to the highest LID of the fabric (H-host4): one block.
    assert_eq!(si.linear_fdb_top, lid::HOST4);
    assert_eq!(si.linear_fdb_blocks(), 1);
    assert_eq!(
        (
            si.default_port,
            si.default_multicast_primary_port,
            si.default_multicast_not_primary_port
        ),
        (0, 0, 0)
    );
    assert_eq!(si.life_time_value, 18, "opensm's default packet life time");
    assert!(!si.port_state_change);
    assert_eq!(si.lids_per_port, 0);
    assert_eq!(si.partition_enforcement_cap, 64);
    assert!(!si.inbound_enforcement_cap && !si.outbound_enforcement_cap);
    assert!(si.filter_raw_inbound_cap && si.filter_raw_outbound_cap);
    // The netfile declares S-sw2 with "enhanced port 0".
    assert!(si.enhanced_port0);
    assert_eq!(si.multicast_fdb_top, 0);
    round_trips(&d, SwitchInfo::LEN, |b| si.emit(b));
}

#[test]
fn guid_info_of_host3() {
    let (d, block) = smp_data_mod("guid_info_host3", attr::id::GUID_INFO);
    assert_eq!(block, 0);
    let gi = GuidInfo::parse(&d).unwrap();
    // Index 0 is the port GUID; ibsim assigns no alias GUIDs.
    assert_eq!(gi.guids[0], guid::HOST3_PORT1);
    assert_eq!(gi.assigned().collect::<Vec<_>>(), [(0, guid::HOST3_PORT1)]);
    let ni = NodeInfo::parse(&smp_data("node_info_host3", attr::id::NODE_INFO)).unwrap();
    assert_eq!(gi.guids[0], ni.port_guid);
    round_trips(&d, GuidInfo::LEN, |b| gi.emit(b));
}

#[test]
fn pkey_table_of_host3() {
    let (d, attr_mod) = smp_data_mod("pkey_table_host3", attr::id::PKEY_TABLE);
    assert_eq!(attr_mod, attr::pkey_table_attr_mod(0, 0));
    let t = PKeyTable::parse(&d).unwrap();
    // Only the default partition, full member.
    assert_eq!(t.pkeys[0], attr::DEFAULT_PKEY);
    assert_eq!(t.valid().collect::<Vec<_>>(), [(0, 0xffff)]);
    assert_eq!(
        t.find_base(0x7fff),
        Some(0),
        "a limited member matches entry 0"
    );
    assert!(attr::pkey_is_full_member(t.pkeys[0]));
    round_trips(&d, PKeyTable::LEN, |b| t.emit(b));
}

#[test]
fn sl2vl_of_sw2_port1_to_port8() {
    let (d, attr_mod) = smp_data_mod("sl2vl_sw2", attr::id::SL2VL);
    assert_eq!(attr_mod, attr::sl2vl_attr_mod(1, 8));
    let t = SlToVlTable::parse(&d).unwrap();
    // ibsim's default: SL n → VL n for SL 0..=14, SL 15 → VL 7.
    for sl in 0..15 {
        assert_eq!(t.vl(sl), sl, "SL {sl}");
    }
    assert_eq!(t.vl(15), 7);
    round_trips(&d, SlToVlTable::LEN, |b| t.emit(b));
}

#[test]
fn vl_arbitration_of_host3() {
    let (d, attr_mod) = smp_data_mod("vl_arb_host3", attr::id::VL_ARB);
    assert_eq!(attr_mod, vl_arb_attr_mod(VlArbBlock::LowLower, 0));
    let t = VlArbTable::parse(&d).unwrap();
    // Low-priority entries 0..8: VL n weight 4 for VL 1..=7 (entry 0 has weight 0), the rest
    // of the block unused.
    assert_eq!(t.entries[0], VlArbEntry::default());
    let active: Vec<_> = t.active().collect();
    assert_eq!(active.len(), 7);
    for (i, e) in active {
        assert_eq!((e.vl, e.weight, e.reserved), (i as u8, 4, 0), "entry {i}");
    }
    // PortInfo of the same port: VL0–7 operational, 8 low-priority entries.
    let pi = PortInfo::parse(&smp_data("port_info_host3", attr::id::PORT_INFO)).unwrap();
    assert_eq!(pi.vl_arbitration_low_cap, 8);
    assert!(t.entries[usize::from(pi.vl_arbitration_low_cap)..]
        .iter()
        .all(|e| *e == VlArbEntry::default()));
    round_trips(&d, VlArbTable::LEN, |b| t.emit(b));
}

#[test]
fn linear_forwarding_table_of_sw2() {
    let (d, block) = smp_data_mod("lft_sw2", attr::id::LFT);
    assert_eq!(block, 0);
    let lft = LinearForwardingTable::parse(&d).unwrap();
    // The topology (fabrics/README.md): S-sw2 port 1 → H-host3, port 2 → H-host4, port 8 →
    // S-sw1 (behind which are H-host1, S-sw1 itself and H-host2); S-sw2's own LID → port 0.
    assert_eq!(lft.port_for_lid(0), LinearForwardingTable::NO_PORT);
    assert_eq!(lft.port_for_lid(lid::HOST1), 8);
    assert_eq!(lft.port_for_lid(lid::SW1), 8);
    assert_eq!(lft.port_for_lid(lid::SW2), 0);
    assert_eq!(lft.port_for_lid(lid::HOST2), 8);
    assert_eq!(lft.port_for_lid(lid::HOST3), 1);
    assert_eq!(lft.port_for_lid(lid::HOST4), 2);
    assert_eq!(
        lft.routes(block).collect::<Vec<_>>(),
        [(1, 8), (2, 8), (3, 0), (4, 8), (5, 1), (6, 2)]
    );
    // Every LID past SwitchInfo.LinearFDBTop is unrouted.
    let si = SwitchInfo::parse(&smp_data("switch_info_sw2", attr::id::SWITCH_INFO)).unwrap();
    assert_eq!(
        lft.routes(block).map(|(l, _)| l).max(),
        Some(si.linear_fdb_top)
    );
    round_trips(&d, LinearForwardingTable::LEN, |b| lft.emit(b));
}

#[test]
fn multicast_forwarding_table_of_sw2() {
    let (d, attr_mod) = smp_data_mod("mft_sw2", attr::id::MFT);
    assert_eq!(attr_mod, attr::mft_attr_mod(0, 0));
    let mft = MulticastForwardingTable::parse(&d).unwrap();
    // No multicast group exists on the simulated fabric (nothing joined one): MLIDs
    // 0xc000..0xc020 forward nowhere.
    assert_eq!(mft.port_masks, [0; 32]);
    for i in 0..MulticastForwardingTable::MLIDS_PER_BLOCK {
        assert_eq!(mft.ports(i, 0).count(), 0);
    }
    let si = SwitchInfo::parse(&smp_data("switch_info_sw2", attr::id::SWITCH_INFO)).unwrap();
    assert_eq!(si.multicast_fdb_top, 0);
    round_trips(&d, MulticastForwardingTable::LEN, |b| mft.emit(b));
}

#[test]
fn perf_class_port_info_of_host3() {
    let d = perf_data("perf_class_port_info_host3", perf::attr_id::CLASS_PORT_INFO);
    let cpi = ClassPortInfo::parse(&d).unwrap();
    assert_eq!((cpi.base_version, cpi.class_version), (1, 1));
    // ibsim's PMA: PortCountersExtended and PortXmitWait, no AllPortSelect on an HCA, no
    // traps, no CapabilityMask2.
    assert_eq!(cpi.capability_mask, 0x1200);
    assert!(cpi.has_capability(perf::cap::EXT_WIDTH_SUPPORTED));
    assert!(cpi.has_capability(perf::cap::PORT_COUNTERS_XMIT_WAIT_SUPPORTED));
    assert!(!cpi.has_capability(perf::cap::ALL_PORT_SELECT));
    assert!(!cpi.has_capability(class_cap::IS_TRAP_SUPPORTED));
    assert!(!cpi.has_capability(class_cap::IS_CAPABILITY_MASK2_SUPPORTED));
    assert_eq!(cpi.capability_mask2, 0);
    assert_eq!(cpi.resp_time_value, 18);
    assert_eq!(cpi.resp_time_us(), 1_073_741);
    assert!(!cpi.is_redirected());
    assert_eq!(
        (cpi.trap_lid, cpi.trap_qp, cpi.trap_gid),
        (0, 0, Gid::default())
    );
    round_trips(&d, ClassPortInfo::LEN, |b| cpi.emit(b));
}

#[test]
fn perf_port_counters_extended() {
    let d = perf_data(
        "perf_port_counters_ext_host3",
        perf::attr_id::PORT_COUNTERS_EXT,
    );
    let pc = PortCountersExt::parse(&d).unwrap();
    assert_eq!(pc.port_select, 1);
    assert_eq!((pc.counter_select, pc.counter_select2), (0, 0));
    // ibsim counts 72 dwords per packet that crossed the port.
    assert!(pc.port_xmit_pkts > 0 && pc.port_rcv_pkts > 0, "{pc:?}");
    assert_eq!(pc.port_xmit_data, pc.port_xmit_pkts * 72);
    assert_eq!(pc.port_rcv_data, pc.port_rcv_pkts * 72);
    assert_eq!((pc.port_xmit_pkts, pc.port_rcv_pkts), (19, 19));
    // The same traffic as the 32-bit PortCounters captured next to it.
    let pc32 = PortCounters::parse(&perf_data(
        "perf_port_counters_host3",
        perf::attr_id::PORT_COUNTERS,
    ))
    .unwrap();
    assert_eq!(pc.port_xmit_data, u64::from(pc32.port_xmit_data));
    assert_eq!(pc.port_rcv_data, u64::from(pc32.port_rcv_data));
    assert_eq!(pc.port_xmit_pkts, u64::from(pc32.port_xmit_pkts));
    assert_eq!(pc.port_rcv_pkts, u64::from(pc32.port_rcv_pkts));
    // No errors, and ibsim fills none of the optional counters.
    assert_eq!(
        PortCountersExt {
            port_xmit_data: 0,
            port_rcv_data: 0,
            port_xmit_pkts: 0,
            port_rcv_pkts: 0,
            port_select: 0,
            ..pc
        },
        PortCountersExt::default()
    );
    round_trips(&d, PortCountersExt::LEN, |b| pc.emit(b));
}

#[test]
fn sa_node_record_of_host3() {
    let nr: sa::NodeRecord = sa_record("sa_node_record_host3", sa::node_record::comp::LID);
    assert_eq!((nr.lid, nr.reserved), (lid::HOST3, 0));
    let ni = nr.node_info;
    assert_eq!(ni.node_type, NodeType::ChannelAdapter);
    assert_eq!(ni.node_guid, guid::HOST3_NODE);
    assert_eq!(ni.port_guid, guid::HOST3_PORT1);
    assert_eq!((ni.num_ports, ni.local_port_num), (1, 1));
    assert_eq!(nr.node_description.as_str(), "host3 HCA-1");
    // The SA's copy is what the node's SMA answers itself.
    assert_eq!(
        ni,
        NodeInfo::parse(&smp_data("node_info_host3", attr::id::NODE_INFO)).unwrap()
    );
}

#[test]
fn sa_port_info_record_of_host3() {
    use sa::port_info_record::comp;
    let pir: sa::PortInfoRecord = sa_record(
        "sa_port_info_record_host3",
        comp::ENDPORT_LID | comp::PORT_NUM,
    );
    assert_eq!(
        (pir.endport_lid, pir.port_num, pir.options),
        (lid::HOST3, 1, 0)
    );
    let pi = pir.port_info;
    assert_eq!((pi.lid, pi.master_sm_lid), (lid::HOST3, lid::HOST1));
    assert_eq!(pi.gid_prefix, SUBNET_PREFIX);
    assert_eq!(pi.port_state, PortState::Active);
    assert_eq!(pi.port_physical_state, PhysPortState::LinkUp);
    assert_eq!(pi.link_width_active, LinkWidth::X4);
    assert_eq!(pi.link_speed(), Some(LinkSpeed::Qdr));
    assert_eq!(
        pi,
        PortInfo::parse(&smp_data("port_info_host3", attr::id::PORT_INFO)).unwrap()
    );
}

#[test]
fn sa_path_record_host3_to_host1() {
    use sa::path_record::comp;
    let p: sa::PathRecord = sa_record("sa_path_record_host3_host1", comp::SGID | comp::DGID);
    // As requested: from H-host3's port GID to H-host1's.
    assert_eq!(p.sgid, Gid::new(SUBNET_PREFIX, guid::HOST3_PORT1));
    assert_eq!(p.dgid, Gid::new(SUBNET_PREFIX, guid::HOST1_PORT1));
    assert_eq!(p.sgid.to_string(), "fe80::10:6");
    assert_eq!((p.slid, p.dlid), (lid::HOST3, lid::HOST1));
    assert!(p.reversible);
    assert_eq!(p.p_key, attr::DEFAULT_PKEY);
    assert_eq!((p.sl, p.qos_class, p.tclass, p.hop_limit), (0, 0, 0, 0));
    assert_eq!((p.flow_label, p.raw_traffic, p.service_id), (0, false, 0));
    // 4x QDR end to end: 40 Gb/s; MTU 2048, what the ports report as NeighborMTU/MTUCap.
    assert_eq!((p.rate_selector, p.rate), (Selector::Exactly, Rate::Gbps40));
    let pi = PortInfo::parse(&smp_data("port_info_host3", attr::id::PORT_INFO)).unwrap();
    assert_eq!(p.rate.gbps(), pi.rate_gbps());
    assert_eq!((p.mtu_selector, p.mtu), (Selector::Exactly, Mtu::Mtu2048));
    assert_eq!((pi.neighbor_mtu, pi.mtu_cap), (p.mtu, p.mtu));
    assert_eq!(p.mtu.bytes(), Some(2048));
    assert_eq!(
        (p.packet_life_time_selector, p.packet_life_time),
        (Selector::Exactly, 18)
    );
    assert_eq!((p.preference, p.numb_path, p.reserved_58), (0, 0, [0; 6]));
}
