//! The performance management agent (class 0x04) of every node: ClassPortInfo, PortCounters
//! and PortCountersExtended, Get and Set (reset), with counters that count the simulated
//! traffic — every packet a port sends or receives, 72 dwords each (a 256-byte MAD on the
//! wire, as ibsim counts it).

use ibmad::perf::{attr_id, cap};
use ibmad::{ClassPortInfo, Mad, Method, PortCounters, PortCountersExt, Status, MAD_SIZE};

use crate::model::{Fabric, NodeIdx};

/// Dwords one simulated packet adds to the data counters.
pub const PACKET_DWORDS: u64 = 72;
/// PortSelect meaning every port of the node (with AllPortSelect).
const ALL_PORTS: u8 = 0xff;

/// What one port has counted since it was last reset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// What PortSamplesControl set up (kept in a node's port 0; not a count: sums and
    /// resets leave it alone).
    pub samples: crate::pma_other::Samples,
    /// Dwords sent.
    pub xmit_data: u64,
    /// Dwords received.
    pub rcv_data: u64,
    /// Packets sent.
    pub xmit_pkts: u64,
    /// Packets received.
    pub rcv_pkts: u64,
    /// Packets the port could not send (no route, link down).
    pub xmit_discards: u64,
    /// Packets received with errors.
    pub rcv_errors: u64,
    /// SymbolErrorCounter: minor link errors (set from outside: the control interface).
    pub symbol_errors: u64,
    /// LinkErrorRecoveryCounter.
    pub link_error_recovery: u64,
    /// LinkDownedCounter.
    pub link_downed: u64,
    /// PortRcvRemotePhysicalErrors.
    pub rcv_remote_physical_errors: u64,
    /// PortRcvSwitchRelayErrors.
    pub rcv_switch_relay_errors: u64,
    /// PortXmitConstraintErrors.
    pub xmit_constraint_errors: u64,
    /// PortRcvConstraintErrors.
    pub rcv_constraint_errors: u64,
    /// LocalLinkIntegrityErrors.
    pub local_link_integrity_errors: u64,
    /// ExcessiveBufferOverrunErrors.
    pub excessive_buffer_overrun_errors: u64,
    /// VL15Dropped.
    pub vl15_dropped: u64,
    /// PortXmitWait.
    pub xmit_wait: u64,
}

impl Counters {
    fn add(&mut self, o: &Counters) {
        self.xmit_data = self.xmit_data.saturating_add(o.xmit_data);
        self.rcv_data = self.rcv_data.saturating_add(o.rcv_data);
        self.xmit_pkts = self.xmit_pkts.saturating_add(o.xmit_pkts);
        self.rcv_pkts = self.rcv_pkts.saturating_add(o.rcv_pkts);
        self.xmit_discards = self.xmit_discards.saturating_add(o.xmit_discards);
        self.rcv_errors = self.rcv_errors.saturating_add(o.rcv_errors);
        self.symbol_errors = self.symbol_errors.saturating_add(o.symbol_errors);
        self.link_error_recovery = self
            .link_error_recovery
            .saturating_add(o.link_error_recovery);
        self.link_downed = self.link_downed.saturating_add(o.link_downed);
        self.rcv_remote_physical_errors = self
            .rcv_remote_physical_errors
            .saturating_add(o.rcv_remote_physical_errors);
        self.rcv_switch_relay_errors = self
            .rcv_switch_relay_errors
            .saturating_add(o.rcv_switch_relay_errors);
        self.xmit_constraint_errors = self
            .xmit_constraint_errors
            .saturating_add(o.xmit_constraint_errors);
        self.rcv_constraint_errors = self
            .rcv_constraint_errors
            .saturating_add(o.rcv_constraint_errors);
        self.local_link_integrity_errors = self
            .local_link_integrity_errors
            .saturating_add(o.local_link_integrity_errors);
        self.excessive_buffer_overrun_errors = self
            .excessive_buffer_overrun_errors
            .saturating_add(o.excessive_buffer_overrun_errors);
        self.vl15_dropped = self.vl15_dropped.saturating_add(o.vl15_dropped);
        self.xmit_wait = self.xmit_wait.saturating_add(o.xmit_wait);
    }
}

/// Which counters a Set of PortCounters or PortCountersExtended resets: its CounterSelect
/// (and PortCounters' CounterSelect2), bit by bit as IBA's tables 247 and 251 name them.
/// PortCountersExtended's unicast counters are the packet counters here (one store), so
/// their bits reset those.
#[derive(Debug, Clone, Copy)]
struct Reset {
    ext: bool,
    select: u16,
    select2: u8,
}

impl Reset {
    fn of(ext: bool, data: &[u8]) -> Reset {
        if ext {
            let c = PortCountersExt::parse(data).map_or(0, |c| c.counter_select);
            Reset {
                ext,
                select: c,
                select2: 0,
            }
        } else {
            let c = PortCounters::parse(data).ok();
            Reset {
                ext,
                select: c.as_ref().map_or(0, |c| c.counter_select),
                select2: c.map_or(0, |c| c.counter_select2),
            }
        }
    }

    fn apply(&self, c: &mut Counters) {
        let bit = |n: u16| self.select & (1 << n) != 0;
        if self.ext {
            // Bits 4 and 5 (unicast) reset the packet counters as bits 2 and 3 do.
            let wipe: [(bool, &mut u64); 4] = [
                (bit(0), &mut c.xmit_data),
                (bit(1), &mut c.rcv_data),
                (bit(2) || bit(4), &mut c.xmit_pkts),
                (bit(3) || bit(5), &mut c.rcv_pkts),
            ];
            for (on, v) in wipe {
                if on {
                    *v = 0;
                }
            }
            return;
        }
        let wipe: [(u16, &mut u64); 16] = [
            (0, &mut c.symbol_errors),
            (1, &mut c.link_error_recovery),
            (2, &mut c.link_downed),
            (3, &mut c.rcv_errors),
            (4, &mut c.rcv_remote_physical_errors),
            (5, &mut c.rcv_switch_relay_errors),
            (6, &mut c.xmit_discards),
            (7, &mut c.xmit_constraint_errors),
            (8, &mut c.rcv_constraint_errors),
            (9, &mut c.local_link_integrity_errors),
            (10, &mut c.excessive_buffer_overrun_errors),
            (11, &mut c.vl15_dropped),
            (12, &mut c.xmit_data),
            (13, &mut c.rcv_data),
            (14, &mut c.xmit_pkts),
            (15, &mut c.rcv_pkts),
        ];
        for (n, v) in wipe {
            if bit(n) {
                *v = 0;
            }
        }
        // CounterSelect2 bit 0: PortXmitWait.
        if self.select2 & 1 != 0 {
            c.xmit_wait = 0;
        }
    }
}

/// A 64-bit count seen through a narrower counter, which stops at its maximum (IBA 16.1.3.5).
fn sat<T: TryFrom<u64> + Copy>(v: u64, max: T) -> T {
    T::try_from(v).unwrap_or(max)
}

impl Fabric {
    /// Counts one packet sent out of `from` (whether or not it arrived).
    pub(crate) fn count_sent(&mut self, from: (NodeIdx, u8)) {
        let out = &mut self.node_mut(from.0).ports[usize::from(from.1)].counters;
        out.xmit_pkts += 1;
        out.xmit_data += PACKET_DWORDS;
    }

    /// Counts one packet leaving `from` and arriving at `to`.
    pub(crate) fn count_hop(&mut self, from: (NodeIdx, u8), to: (NodeIdx, u8)) {
        self.count_sent(from);
        let inc = &mut self.node_mut(to.0).ports[usize::from(to.1)].counters;
        inc.rcv_pkts += 1;
        inc.rcv_data += PACKET_DWORDS;
    }

    /// The PMA of `at` answers the request in `buf` in place (the response method and
    /// status set; the data is the attribute).
    pub(crate) fn pma(&mut self, at: NodeIdx, buf: &mut [u8; MAD_SIZE]) {
        let (method, attr, attr_mod) = {
            let mad = Mad::new_unchecked(&buf[..]);
            (mad.method(), mad.attr_id(), mad.attr_mod())
        };
        let data_at = ibmad::perf::PERF_DATA_OFFSET;
        let status = match (method, attr) {
            (Method::Get, ibmad::attr::id::CLASS_PORT_INFO) => {
                // ibsim's: extended counters and PortXmitWait; AllPortSelect on switches.
                let all = if self.node(at).is_switch() {
                    cap::ALL_PORT_SELECT
                } else {
                    0
                };
                let cpi = ClassPortInfo {
                    base_version: 1,
                    class_version: 1,
                    capability_mask: all
                        | cap::EXT_WIDTH_SUPPORTED
                        | cap::PORT_COUNTERS_XMIT_WAIT_SUPPORTED,
                    resp_time_value: 18,
                    ..ClassPortInfo::default()
                };
                let mut data = [0u8; MAD_SIZE - 64];
                cpi.emit(&mut data[..]);
                buf[data_at..].copy_from_slice(&data);
                Status::SUCCESS
            }
            (Method::Get | Method::Set, attr_id::PORT_COUNTERS | attr_id::PORT_COUNTERS_EXT) => {
                let ext = attr == attr_id::PORT_COUNTERS_EXT;
                // PortSelect is byte 1 of both attributes.
                let select = buf[data_at + 1];
                let ports = self.selected(at, select);
                match ports {
                    None => Status(Status::INVALID_ATTR_VALUE),
                    Some(ports) => {
                        if method == Method::Set {
                            let reset = Reset::of(ext, &buf[data_at..]);
                            for p in &ports {
                                reset.apply(&mut self.node_mut(at).ports[usize::from(*p)].counters);
                            }
                        }
                        let mut total = Counters::default();
                        for p in &ports {
                            total.add(&self.node(at).ports[usize::from(*p)].counters);
                        }
                        let mut data = [0u8; MAD_SIZE - 64];
                        if ext {
                            PortCountersExt {
                                port_select: select,
                                counter_select: 0,
                                port_xmit_data: total.xmit_data,
                                port_rcv_data: total.rcv_data,
                                port_xmit_pkts: total.xmit_pkts,
                                port_rcv_pkts: total.rcv_pkts,
                                port_unicast_xmit_pkts: total.xmit_pkts,
                                port_unicast_rcv_pkts: total.rcv_pkts,
                                ..PortCountersExt::default()
                            }
                            .emit(&mut data[..]);
                        } else {
                            PortCounters {
                                port_select: select,
                                port_xmit_data: sat(total.xmit_data, u32::MAX),
                                port_rcv_data: sat(total.rcv_data, u32::MAX),
                                port_xmit_pkts: sat(total.xmit_pkts, u32::MAX),
                                port_rcv_pkts: sat(total.rcv_pkts, u32::MAX),
                                port_xmit_discards: sat(total.xmit_discards, u16::MAX),
                                port_rcv_errors: sat(total.rcv_errors, u16::MAX),
                                symbol_error_counter: sat(total.symbol_errors, u16::MAX),
                                link_error_recovery_counter: sat(
                                    total.link_error_recovery,
                                    u8::MAX,
                                ),
                                link_downed_counter: sat(total.link_downed, u8::MAX),
                                port_rcv_remote_physical_errors: sat(
                                    total.rcv_remote_physical_errors,
                                    u16::MAX,
                                ),
                                port_rcv_switch_relay_errors: sat(
                                    total.rcv_switch_relay_errors,
                                    u16::MAX,
                                ),
                                port_xmit_constraint_errors: sat(
                                    total.xmit_constraint_errors,
                                    u8::MAX,
                                ),
                                port_rcv_constraint_errors: sat(
                                    total.rcv_constraint_errors,
                                    u8::MAX,
                                ),
                                // 4-bit fields.
                                local_link_integrity_errors: sat(
                                    total.local_link_integrity_errors.min(15),
                                    15,
                                ),
                                excessive_buffer_overrun_errors: sat(
                                    total.excessive_buffer_overrun_errors.min(15),
                                    15,
                                ),
                                vl15_dropped: sat(total.vl15_dropped, u16::MAX),
                                port_xmit_wait: sat(total.xmit_wait, u32::MAX),
                                ..PortCounters::default()
                            }
                            .emit(&mut data[..]);
                        }
                        buf[data_at..].copy_from_slice(&data);
                        Status::SUCCESS
                    }
                }
            }
            (Method::Get | Method::Set, a) if crate::pma_other::answers(a) => {
                self.pma_other(at, method == Method::Set, a, attr_mod, &mut buf[data_at..])
            }
            (Method::Get | Method::Set, _) => Status(Status::METHOD_ATTR_NOT_SUPPORTED),
            _ => Status(Status::METHOD_NOT_SUPPORTED),
        };
        let mut mad = Mad::new_unchecked(&mut buf[..]);
        // A Trap's TrapRepress is not a response: what the PMA does not support is answered
        // with GetResp.
        let response = method
            .response()
            .filter(|m| m.is_response())
            .unwrap_or(Method::GetResp);
        mad.set_method(response);
        mad.set_status(status);
    }

    /// The counters of `port` (a switch's port 0 included), to read or to change (as
    /// ibsim's console `PerformanceSet` does); `None` for a port the fabric does not have.
    pub fn counters_mut(&mut self, (node, port): (NodeIdx, u8)) -> Option<&mut Counters> {
        if !self.has_port((node, port)) {
            return None;
        }
        Some(&mut self.node_mut(node).ports[usize::from(port)].counters)
    }

    /// The ports a PortSelect names on `node`: one port, or with 0xFF every port (a switch's
    /// external ports, a CA's ports); `None` for a port the node does not have.
    fn selected(&self, node: NodeIdx, select: u8) -> Option<Vec<u8>> {
        let n = self.node(node);
        if select == ALL_PORTS {
            return Some((1..=n.spec.num_ports).collect());
        }
        n.port(select).map(|p| vec![p.num])
    }
}
