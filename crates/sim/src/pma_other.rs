//! The PMA's attributes besides ClassPortInfo and the port counters ([`crate::pma`]).
//!
//! - The counter rows ibsim 0.10 answers (`sim_mad.c`, `do_portcounters_common`):
//!   PortRcvErrorDetails, PortXmitDiscardDetails, PortOpRcvCounters, PortFlowCtlCounters,
//!   PortVLOpPackets, PortVLOpData, PortVLXmitFlowCtlUpdateErrors and
//!   PortVLXmitWaitCounters, Get and Set (reset). Nothing in the simulation counts into
//!   them (no errors, discards by reason, flow control, congestion; packets are not counted
//!   by opcode or VL), so they are zeros, as ibsim's; the request's PortSelect, CounterSelect
//!   and OpCode come back as sent. PortSelect is checked as ibsim checks it: on a switch a
//!   port up to its last or 0xFF (AllPortSelect), on a CA or router one of its ports.
//! - PortSamplesControl and PortSamplesResult, which IBA makes mandatory and ibsim does not
//!   answer (the request times out), as QLogic's PMA (`qib_mad.c`) answers them: five 32-bit
//!   sample counters (CounterMask 1 for counters 0-4), a Set stores the PortSelect, Tag,
//!   SampleStart, SampleInterval and CounterSelect0-4, and the sample is always done: with
//!   no clock in the simulation no sampling interval passes, so PortSamplesResult counts
//!   nothing. One sampling set-up a node (a switch samples the port PortSelect names).
//!
//! The other PerfMgt attributes (PortXmitDataSL, PortRcvDataSL, PortExtendedSpeedsCounters,
//! the congestion-control counters 0x30-0x35) are answered "method/attribute not supported",
//! as by hardware without them (ibsim does not answer them at all).

use ibmad::perf::attr_id;
use ibmad::{
    PortFlowCtlCounters, PortOpRcvCounters, PortRcvErrorDetails, PortSamplesControl,
    PortSamplesResult, PortVlOpData, PortVlOpPackets, PortVlXmitFlowCtlUpdateErrors,
    PortVlXmitWaitCounters, PortXmitDiscardDetails, Status,
};

use crate::model::{Fabric, NodeIdx};

/// Sample counters PortSamplesControl sets up (CounterSelect0..4; the others are not
/// implemented, CounterMask 0).
pub const SAMPLE_COUNTERS: usize = 5;

/// PortSamplesControl.CounterWidth: 32-bit sample counters.
const COUNTER_WIDTH_32: u8 = 4;

/// PortSelect meaning every port.
const ALL_PORTS: u8 = 0xff;

/// What PortSamplesControl last set up on a node (kept with its port 0's counters).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Samples {
    /// PortSelect: the port sampled.
    pub port_select: u8,
    /// Tag, copied into PortSamplesResult.
    pub tag: u16,
    /// SampleStart (ticks before sampling begins).
    pub sample_start: u32,
    /// SampleInterval (ticks sampled).
    pub sample_interval: u32,
    /// CounterSelect0..4: what each sample counter counts.
    pub counter_select: [u16; SAMPLE_COUNTERS],
}

/// Whether [`Fabric::pma_other`] answers `attr` (for Get or Set).
pub(crate) fn answers(attr: u16) -> bool {
    matches!(
        attr,
        attr_id::PORT_SAMPLES_CONTROL
            | attr_id::PORT_SAMPLES_RESULT
            | attr_id::PORT_RCV_ERROR_DETAILS..=attr_id::PORT_VL_XMIT_WAIT_COUNTERS
    )
}

/// The counters of one counter-row attribute zeroed over the request's data area (the rest
/// of it, the selects included, stays as sent).
macro_rules! zero_counters {
    ($t:ty, $data:expr) => {
        if let Ok(mut v) = <$t>::parse($data) {
            v.counters = Default::default();
            v.emit($data);
        }
    };
}

impl Fabric {
    /// Answers Get (`set` false) or Set of `attr`, one of those [`answers`] says, at `at`:
    /// writes the answer over `data` (the request's PerfMgt data area) and returns the
    /// status.
    pub(crate) fn pma_other(
        &mut self,
        at: NodeIdx,
        set: bool,
        attr: u16,
        attr_mod: u32,
        data: &mut [u8],
    ) -> Status {
        match attr {
            attr_id::PORT_SAMPLES_CONTROL => self.samples_control(at, set, attr_mod, data),
            attr_id::PORT_SAMPLES_RESULT if set => Status(Status::METHOD_ATTR_NOT_SUPPORTED),
            attr_id::PORT_SAMPLES_RESULT => self.samples_result(at, attr_mod, data),
            _ => {
                let Some(&select) = data.get(1) else {
                    return Status(Status::INVALID_ATTR_VALUE);
                };
                if !self.selectable(at, select, true) {
                    return Status(Status::INVALID_ATTR_VALUE);
                }
                // Set resets the selected counters: all of them are always 0.
                match attr {
                    attr_id::PORT_RCV_ERROR_DETAILS => zero_counters!(PortRcvErrorDetails, data),
                    attr_id::PORT_XMIT_DISCARD_DETAILS => {
                        zero_counters!(PortXmitDiscardDetails, data)
                    }
                    attr_id::PORT_OP_RCV_COUNTERS => zero_counters!(PortOpRcvCounters, data),
                    attr_id::PORT_FLOW_CTL_COUNTERS => zero_counters!(PortFlowCtlCounters, data),
                    attr_id::PORT_VL_OP_PACKETS => zero_counters!(PortVlOpPackets, data),
                    attr_id::PORT_VL_OP_DATA => zero_counters!(PortVlOpData, data),
                    attr_id::PORT_VL_XMIT_FLOW_CTL_UPDATE_ERRORS => {
                        zero_counters!(PortVlXmitFlowCtlUpdateErrors, data)
                    }
                    _ => zero_counters!(PortVlXmitWaitCounters, data),
                }
                Status::SUCCESS
            }
        }
    }

    /// Whether PortSelect `select` names something on `node`, as ibsim's
    /// `do_portcounters_common` checks it: on a switch any port up to its last (0 included)
    /// or, with `all`, 0xFF; on a CA or router one of its ports.
    fn selectable(&self, node: NodeIdx, select: u8, all: bool) -> bool {
        let n = self.node(node);
        if n.is_switch() {
            select <= n.spec.num_ports || (all && select == ALL_PORTS)
        } else {
            (1..=n.spec.num_ports).contains(&select)
        }
    }

    /// PortSamplesControl: Get, or Set of the set-up (PortSelect must name one port; the
    /// attribute modifier must be 0, as on QLogic's PMA).
    fn samples_control(
        &mut self,
        at: NodeIdx,
        set: bool,
        attr_mod: u32,
        data: &mut [u8],
    ) -> Status {
        let Ok(req) = PortSamplesControl::parse(data) else {
            return Status(Status::INVALID_ATTR_VALUE);
        };
        if attr_mod != 0 || !self.selectable(at, req.port_select, false) {
            return Status(Status::INVALID_ATTR_VALUE);
        }
        let s = &mut self.node_mut(at).ports[0].counters.samples;
        if set {
            let mut counter_select = [0; SAMPLE_COUNTERS];
            counter_select.copy_from_slice(&req.counter_select[..SAMPLE_COUNTERS]);
            *s = Samples {
                port_select: req.port_select,
                tag: req.tag,
                sample_start: req.sample_start,
                sample_interval: req.sample_interval,
                counter_select,
            };
        }
        let s = *s;
        let mut counter_masks = [0u8; 15];
        counter_masks[..SAMPLE_COUNTERS].fill(1);
        let mut counter_select = [0u16; 15];
        counter_select[..SAMPLE_COUNTERS].copy_from_slice(&s.counter_select);
        data.fill(0);
        PortSamplesControl {
            op_code: req.op_code,
            port_select: req.port_select,
            counter_width: COUNTER_WIDTH_32,
            counter_masks,
            // 0: done (the sample, if any, is over: no simulated time passes).
            sample_status: 0,
            sample_start: s.sample_start,
            sample_interval: s.sample_interval,
            tag: s.tag,
            counter_select,
            ..PortSamplesControl::default()
        }
        .emit(data);
        Status::SUCCESS
    }

    /// PortSamplesResult: the set-up's Tag, the sample done, every counter 0.
    fn samples_result(&mut self, at: NodeIdx, attr_mod: u32, data: &mut [u8]) -> Status {
        if attr_mod != 0 || data.len() < PortSamplesResult::LEN {
            return Status(Status::INVALID_ATTR_VALUE);
        }
        let s = self.node(at).ports[0].counters.samples;
        data.fill(0);
        PortSamplesResult {
            tag: s.tag,
            ..PortSamplesResult::default()
        }
        .emit(data);
        Status::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_the_attributes_ibsim_has_and_the_samples() {
        for a in [0x10, 0x11, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c] {
            assert!(answers(a), "{a:#x}");
        }
        for a in [0x01, 0x12, 0x1d, 0x1f, 0x30, 0x35, 0x36, 0x37, 0x14, 0x1e] {
            assert!(!answers(a), "{a:#x}");
        }
    }

    /// example.net configured: H-host1 (the asker), S-sw1 and the 2-port H-host2.
    fn example() -> (Fabric, NodeIdx, u16, u16) {
        let mut f = Fabric::load_named("example").unwrap();
        f.configure(None);
        let h1 = f.find_id("H-host1").unwrap();
        let sw1 = f.find_id("S-sw1").unwrap();
        let h2 = f.find_id("H-host2").unwrap();
        let (l_sw1, l_h2) = (f.node(sw1).lid_of(0), f.node(h2).lid_of(1));
        (f, h1, l_sw1, l_h2)
    }

    /// The PMA's answer at `lid` to `method(attr)` whose data area starts with `data`:
    /// status and data area.
    fn ask(
        f: &mut Fabric,
        from: NodeIdx,
        lid: u16,
        method: ibmad::Method,
        attr: u16,
        attr_mod: u32,
        data: &[u8],
    ) -> (u16, Vec<u8>) {
        let mut buf = ibmad::perf::request(method, attr, attr_mod, 9);
        buf[64..64 + data.len()].copy_from_slice(data);
        let r = f.deliver((from, 1), lid, 1, &buf).unwrap();
        let mad = ibmad::Mad::new_unchecked(&r.mad[..]);
        assert_eq!(mad.method(), ibmad::Method::GetResp);
        assert_eq!(mad.attr_id(), attr);
        (mad.status().0, r.mad[64..].to_vec())
    }

    #[test]
    fn the_counter_rows_are_zeros_with_the_request_echoed() {
        use ibmad::Method::{Get, Set};
        let (mut f, h1, l_sw1, l_h2) = example();
        for attr in 0x15..=0x1c {
            for (lid, port, ok) in [
                (l_sw1, 1, true),
                (l_sw1, 0, true),
                (l_sw1, 8, true),
                (l_sw1, 0xff, true),
                (l_sw1, 9, false),
                (l_h2, 1, true),
                (l_h2, 2, true),
                (l_h2, 0, false),
                (l_h2, 3, false),
                (l_h2, 0xff, false),
            ] {
                for method in [Get, Set] {
                    // OpCode 0x64, the port, CounterSelect 0xffff, garbage where the
                    // counters go, and past the attribute.
                    let mut data = [0xa5u8; 192];
                    data[..4].copy_from_slice(&[0x64, port, 0xff, 0xff]);
                    let (status, back) = ask(&mut f, h1, lid, method, attr, 0, &data);
                    if !ok {
                        assert_eq!(status, Status::INVALID_ATTR_VALUE, "{attr:#x} port {port}");
                        continue;
                    }
                    assert_eq!(status, 0, "{attr:#x} port {port}");
                    let len = match attr {
                        0x15 => PortRcvErrorDetails::LEN,
                        0x16 => PortXmitDiscardDetails::LEN,
                        0x17 => PortOpRcvCounters::LEN,
                        0x18 => PortFlowCtlCounters::LEN,
                        0x19 => PortVlOpPackets::LEN,
                        0x1a => PortVlOpData::LEN,
                        0x1b => PortVlXmitFlowCtlUpdateErrors::LEN,
                        _ => PortVlXmitWaitCounters::LEN,
                    };
                    assert_eq!(back[..4], data[..4]);
                    assert!(back[4..len].iter().all(|&b| b == 0), "{attr:#x}");
                    assert_eq!(back[len..], data[len..], "{attr:#x}");
                }
            }
        }
    }

    #[test]
    fn samples_control_keeps_its_set_up_and_result_its_tag() {
        use ibmad::Method::{Get, Set};
        let (mut f, h1, l_sw1, l_h2) = example();
        let get = |f: &mut Fabric, lid: u16, port: u8| {
            let data = [0, port];
            let (status, back) = ask(f, h1, lid, Get, attr_id::PORT_SAMPLES_CONTROL, 0, &data);
            (status, PortSamplesControl::parse(&back).unwrap())
        };
        let (status, c) = get(&mut f, l_sw1, 3);
        assert_eq!(status, 0);
        assert_eq!((c.port_select, c.counter_width, c.sample_status), (3, 4, 0));
        assert_eq!(
            c.counter_masks,
            [1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        );
        assert_eq!((c.tag, c.counter_select), (0, [0; 15]));
        // A port the switch does not have, AllPortSelect, a modifier: refused.
        assert_eq!(get(&mut f, l_sw1, 9).0, Status::INVALID_ATTR_VALUE);
        assert_eq!(get(&mut f, l_sw1, 0xff).0, Status::INVALID_ATTR_VALUE);
        assert_eq!(get(&mut f, l_h2, 0).0, Status::INVALID_ATTR_VALUE);
        let (status, _) = ask(
            &mut f,
            h1,
            l_sw1,
            Get,
            attr_id::PORT_SAMPLES_CONTROL,
            1,
            &[0, 1],
        );
        assert_eq!(status, Status::INVALID_ATTR_VALUE);
        // Set: the set-up is kept (five counters), the sample done at once.
        let mut set = PortSamplesControl {
            port_select: 2,
            tag: 0xbeef,
            sample_start: 10,
            sample_interval: 1000,
            ..PortSamplesControl::default()
        };
        for (i, c) in set.counter_select.iter_mut().enumerate() {
            *c = i as u16 + 1;
        }
        let mut data = [0u8; 192];
        set.emit(&mut data);
        let (status, back) = ask(
            &mut f,
            h1,
            l_sw1,
            Set,
            attr_id::PORT_SAMPLES_CONTROL,
            0,
            &data,
        );
        assert_eq!(status, 0);
        let c = PortSamplesControl::parse(&back).unwrap();
        assert_eq!(
            (c.tag, c.sample_start, c.sample_interval),
            (0xbeef, 10, 1000)
        );
        assert_eq!(c.counter_select[..6], [1, 2, 3, 4, 5, 0]);
        assert_eq!(get(&mut f, l_sw1, 2).1, c);
        // Another node's set-up is its own.
        assert_eq!(get(&mut f, l_h2, 1).1.tag, 0);
        let (status, back) = ask(&mut f, h1, l_sw1, Get, attr_id::PORT_SAMPLES_RESULT, 0, &[]);
        assert_eq!(status, 0);
        let r = PortSamplesResult::parse(&back).unwrap();
        assert_eq!((r.tag, r.sample_status, r.counters), (0xbeef, 0, [0; 15]));
        let (status, _) = ask(&mut f, h1, l_sw1, Set, attr_id::PORT_SAMPLES_RESULT, 0, &[]);
        assert_eq!(status, Status::METHOD_ATTR_NOT_SUPPORTED);
    }

    #[test]
    fn the_attributes_without_an_agent_here_are_not_supported() {
        use ibmad::Method::{Get, Set};
        let (mut f, h1, l_sw1, _) = example();
        for attr in [0x1f, 0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37] {
            for method in [Get, Set] {
                let (status, _) = ask(&mut f, h1, l_sw1, method, attr, 0, &[0, 1]);
                assert_eq!(status, Status::METHOD_ATTR_NOT_SUPPORTED, "{attr:#x}");
            }
        }
    }
}
