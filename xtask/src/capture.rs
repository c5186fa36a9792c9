//! `cargo xtask capture-fixtures`: records real MAD replies from ibsim as hex fixtures for the
//! `mad` crate's decoding tests (`crates/mad/tests/fixtures/ibsim/*.hex`).
//!
//! Starts ibsim on `fabrics/example.net`, runs opensm (resident, so the SA answers), attaches
//! natively to `H-host3`, and sends one request per attribute. Each fixture file holds
//! `#` comment lines saying what was asked, then the 256-byte response MAD, 32 bytes per line.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use ibmad::attr::id;
use ibmad::{DrPath, Method, PortInfo, Smp};
use ibsim_harness::{example_fabric, Ibsim};
use umad::{AgentSpec, IbsimOptions, MadAddr, Port};

use crate::workspace_root;

/// The node the capturing client attaches to.
const NODE: &str = "H-host3";

struct Capture {
    port: Port,
    dr: u32,
    perf: u32,
    sa: u32,
    tid: u64,
    out: PathBuf,
    written: Vec<String>,
}

impl Capture {
    fn next_tid(&mut self) -> u64 {
        self.tid += 1;
        self.tid
    }

    fn save(&mut self, name: &str, what: &str, mad: &[u8]) -> Result<(), String> {
        let mut text = format!(
            "# {what}\n# captured by `cargo xtask capture-fixtures` from ibsim on fabrics/example.net (client at {NODE})\n"
        );
        for line in mad.chunks(32) {
            for b in line {
                let _ = write!(text, "{b:02x}");
            }
            text.push('\n');
        }
        let path = self.out.join(format!("{name}.hex"));
        std::fs::write(&path, text).map_err(|e| format!("writing {}: {e}", path.display()))?;
        self.written.push(name.to_string());
        Ok(())
    }

    fn exchange(&mut self, agent: u32, req: &[u8], addr: &MadAddr) -> Result<Vec<u8>, String> {
        let r = self
            .port
            .transact(agent, req, addr, 1000, 2)
            .map_err(|e| e.to_string())?;
        if r.is_timeout() {
            return Err(format!(
                "request for attribute {:#06x} timed out",
                u16::from_be_bytes([req[16], req[17]])
            ));
        }
        Ok(r.mad)
    }

    fn dr(
        &mut self,
        name: &str,
        hops: &[u8],
        attr: u16,
        attr_mod: u32,
        what: &str,
    ) -> Result<Vec<u8>, String> {
        let path = DrPath::from_hops(hops).map_err(|e| e.to_string())?;
        let tid = self.next_tid();
        let req = Smp::dr_request(Method::Get, attr, attr_mod, tid, &path);
        let mad = self.exchange(self.dr, &req, &MadAddr::directed_route())?;
        self.save(
            name,
            &format!("{what}; DR path {path}, SubnGet attr {attr:#06x} mod {attr_mod:#x}"),
            &mad,
        )?;
        Ok(mad)
    }

    fn perf(
        &mut self,
        name: &str,
        lid: u16,
        attr: u16,
        port_select: u8,
        what: &str,
    ) -> Result<(), String> {
        let tid = self.next_tid();
        let mut req = ibmad::perf::get_request(attr, 0, tid);
        // PortSelect is byte 1 of the PerfMgt data (MAD byte 65) for the counter attributes.
        if attr != id::CLASS_PORT_INFO {
            req[ibmad::perf::PERF_DATA_OFFSET + 1] = port_select;
        }
        let mad = self.exchange(self.perf, &req, &MadAddr::gsi(lid))?;
        self.save(
            name,
            &format!("{what}; PerfMgt Get attr {attr:#06x} to LID {lid} port {port_select}"),
            &mad,
        )
    }

    /// A SubnAdmGet of one record: `record` (the record's leading bytes) at MAD byte 56 with
    /// `component_mask`.
    fn sa(
        &mut self,
        name: &str,
        sm_lid: u16,
        attr: u16,
        component_mask: u64,
        record: &[u8],
        what: &str,
    ) -> Result<(), String> {
        let tid = self.next_tid();
        let mut req = [0u8; 256];
        req[0] = 1; // base version
        req[1] = 0x03; // SubnAdm
        req[2] = 2; // class version
        req[3] = 0x01; // Get
        req[8..16].copy_from_slice(&tid.to_be_bytes());
        req[16..18].copy_from_slice(&attr.to_be_bytes());
        req[48..56].copy_from_slice(&component_mask.to_be_bytes());
        req[56..56 + record.len()].copy_from_slice(record);
        let mad = self.exchange(self.sa, &req, &MadAddr::gsi(sm_lid))?;
        self.save(name, &format!("{what}; SubnAdmGet attr {attr:#06x} component mask {component_mask:#x} to SM LID {sm_lid}"), &mad)
    }
}

/// Runs the capture. `Err` carries a message for the user.
pub fn run() -> Result<(), String> {
    let mut sim = Ibsim::start(example_fabric()).map_err(|e| format!("starting ibsim: {e}"))?;
    sim.start_sm_daemon().map_err(|e| format!("opensm: {e}"))?;
    let port = Port::open_ibsim(&IbsimOptions::new(sim.socket_name()).node(NODE))
        .map_err(|e| e.to_string())?;
    let reg = |class, version| {
        port.register(&AgentSpec::new(class, version))
            .map_err(|e| e.to_string())
    };
    let (dr, perf, sa) = (reg(0x81, 1)?, reg(0x04, 1)?, reg(0x03, 2)?);
    let out = workspace_root().join("crates/mad/tests/fixtures/ibsim");
    std::fs::create_dir_all(&out).map_err(|e| format!("creating {}: {e}", out.display()))?;
    let mut c = Capture {
        port,
        dr,
        perf,
        sa,
        tid: 0x5500,
        out,
        written: Vec::new(),
    };

    // From H-host3: port 1 → S-sw2 port 1; S-sw2 port 8 → S-sw1 port 8; S-sw1 port 1 → H-host1.
    let me = c.dr(
        "node_info_host3",
        &[],
        id::NODE_INFO,
        0,
        "NodeInfo of H-host3 (self)",
    )?;
    let _ = me;
    c.dr("node_info_sw2", &[1], id::NODE_INFO, 0, "NodeInfo of S-sw2")?;
    c.dr(
        "node_desc_sw2",
        &[1],
        id::NODE_DESC,
        0,
        "NodeDescription of S-sw2",
    )?;
    c.dr(
        "node_desc_host1",
        &[1, 8, 1],
        id::NODE_DESC,
        0,
        "NodeDescription of H-host1",
    )?;
    let pi = c.dr(
        "port_info_host3",
        &[],
        id::PORT_INFO,
        1,
        "PortInfo of H-host3 port 1",
    )?;
    c.dr(
        "port_info_sw2_port0",
        &[1],
        id::PORT_INFO,
        0,
        "PortInfo of S-sw2 port 0",
    )?;
    c.dr(
        "port_info_sw2_port8",
        &[1],
        id::PORT_INFO,
        8,
        "PortInfo of S-sw2 port 8",
    )?;
    c.dr(
        "port_info_host2_port2",
        &[1, 8, 2],
        id::PORT_INFO,
        2,
        "PortInfo of H-host2 port 2 (not connected)",
    )?;
    c.dr(
        "switch_info_sw2",
        &[1],
        id::SWITCH_INFO,
        0,
        "SwitchInfo of S-sw2",
    )?;
    c.dr(
        "guid_info_host3",
        &[],
        id::GUID_INFO,
        0,
        "GUIDInfo block 0 of H-host3",
    )?;
    c.dr(
        "pkey_table_host3",
        &[],
        id::PKEY_TABLE,
        0,
        "P_KeyTable block 0 of H-host3",
    )?;
    c.dr(
        "sl2vl_sw2",
        &[1],
        id::SL2VL,
        0x0108,
        "SLtoVLMappingTable of S-sw2 in port 1 out port 8",
    )?;
    c.dr(
        "vl_arb_host3",
        &[],
        id::VL_ARB,
        0x0001_0000,
        "VLArbitrationTable of H-host3 port 0 low-priority block 1",
    )?;
    c.dr(
        "lft_sw2",
        &[1],
        id::LFT,
        0,
        "LinearForwardingTable block 0 of S-sw2",
    )?;
    c.dr(
        "mft_sw2",
        &[1],
        id::MFT,
        0,
        "MulticastForwardingTable block 0 of S-sw2",
    )?;

    let smp = Smp::new_checked(&pi[..]).map_err(|e| e.to_string())?;
    let pi = PortInfo::parse(smp.data()).map_err(|e| e.to_string())?;
    let (lid, sm_lid) = (pi.lid, pi.master_sm_lid);
    c.perf(
        "perf_class_port_info_host3",
        lid,
        id::CLASS_PORT_INFO,
        1,
        "PerfMgt ClassPortInfo of H-host3",
    )?;
    c.perf(
        "perf_port_counters_host3",
        lid,
        ibmad::perf::attr_id::PORT_COUNTERS,
        1,
        "PortCounters of H-host3 port 1",
    )?;
    c.perf(
        "perf_port_counters_ext_host3",
        lid,
        ibmad::perf::attr_id::PORT_COUNTERS_EXT,
        1,
        "PortCountersExtended of H-host3 port 1",
    )?;

    c.sa(
        "sa_node_record_host3",
        sm_lid,
        0x11,
        0x1,
        &lid.to_be_bytes(),
        "NodeRecord of H-host3 (by LID)",
    )?;
    let mut pir = lid.to_be_bytes().to_vec();
    pir.push(1);
    c.sa(
        "sa_port_info_record_host3",
        sm_lid,
        0x12,
        0x3,
        &pir,
        "PortInfoRecord of H-host3 port 1 (by LID and port)",
    )?;
    let mut path = vec![0u8; 40];
    let gid = |guid: u64| {
        let mut g = [0u8; 16];
        g[..8].copy_from_slice(&0xfe80_0000_0000_0000u64.to_be_bytes());
        g[8..].copy_from_slice(&guid.to_be_bytes());
        g
    };
    path[8..24].copy_from_slice(&gid(ibsim_harness::example_net::HOST1_NODE_GUID + 1));
    path[24..40].copy_from_slice(&gid(ibsim_harness::example_net::HOST3_NODE_GUID + 1));
    c.sa(
        "sa_path_record_host3_host1",
        sm_lid,
        0x35,
        0xc,
        &path,
        "PathRecord H-host3 → H-host1 (by SGID and DGID)",
    )?;

    drop(c.port);
    std::thread::sleep(Duration::from_millis(10));
    drop(sim);
    println!(
        "wrote {} fixtures to crates/mad/tests/fixtures/ibsim: {}",
        c.written.len(),
        c.written.join(", ")
    );
    Ok(())
}
