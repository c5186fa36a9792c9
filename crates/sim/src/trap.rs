//! Traps the SMAs send: Trap 128 (link state change) from a switch whose port's link went
//! down or came up, to the SM its port 0 names (IBA Vol 1, 14.2.5.1; ibsim's
//! `send_trap(port, TRAP_128)`).
//!
//! The fabric raises them where the link events happen ([`crate::state`]: Set(PortInfo) of
//! PortState Down or PortPhysicalState Disabled/Polling, a link that stops training, and
//! [`Fabric::set_link`]) and queues them; whoever carries the fabric's packets (the
//! `umad sim serve` daemon) takes them with [`Fabric::take_traps`], routes each with
//! [`Fabric::route_trap`] and hands it to the SM attached where it lands. Sans-IO.
//!
//! As ibsim: only a switch sends Trap 128 (a CA's link change is seen through the switch at
//! the far end; two CAs linked back to back send nothing), and only once an SM has set the
//! switch's port 0 LID and MasterSMLID (that is how it enables them); a Trap(Notice) SMP,
//! LID-routed (class SubnLid 0x01, method Trap 0x05, attribute Notice 0x0002, modifier 0,
//! M_Key 0) from the switch's LID to its MasterSMLID on QP 0, the Notice generic, Urgent,
//! producer Switch, IssuerLID and the details' LIDADDR the switch's LID, NoticeToggle and
//! NoticeCount 0. Unlike ibsim (which sends every trap with TID 0) each trap has a TID of
//! its own, as hardware's do; and while a switch's trap waits in the queue, further link
//! events of that switch do not add another (one notice says "look at this switch").

use ibmad::attr::{id, NoticeType, ProducerType};
use ibmad::{Method, Notice, Smp, TrapNumber, MAD_SIZE};

use crate::model::{Fabric, NodeIdx};
use crate::smi::Dropped;

/// A trap on its way from a node's SMA to the SM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trap {
    /// Where it is sent from: the switch and its port 0.
    pub from: (NodeIdx, u8),
    /// The sender's LID (the switch's).
    pub slid: u16,
    /// The destination: the MasterSMLID of the sender's port 0.
    pub dlid: u16,
    /// The trap number (128).
    pub number: u16,
    /// The Trap(Notice) SMP.
    pub mad: [u8; MAD_SIZE],
}

/// The traps raised and not yet taken.
#[derive(Debug, Clone, Default)]
pub(crate) struct Traps {
    pending: Vec<Trap>,
    /// The TID of the next trap.
    next_tid: u64,
}

impl Fabric {
    /// Raises Trap 128 at `node` if it is a switch whose SM has enabled traps (port 0 LID
    /// and MasterSMLID set) and no trap of it is waiting already.
    pub(crate) fn raise_link_trap(&mut self, node: NodeIdx) {
        let n = self.node(node);
        if !n.is_switch() {
            return;
        }
        let Some(p0) = n.port(0) else {
            return;
        };
        let (lid, sm_lid) = (p0.lid, p0.master_sm_lid);
        if lid == 0 || sm_lid == 0 {
            return;
        }
        let traps = &mut self.traps;
        if traps.pending.iter().any(|t| t.from.0 == node) {
            return;
        }
        traps.next_tid = traps.next_tid.wrapping_add(1);
        let mut mad = Smp::lid_request(Method::Trap, id::NOTICE, 0, traps.next_tid);
        let mut notice = Notice::generic(
            NoticeType::Urgent,
            ProducerType::Switch,
            TrapNumber::LinkStateChange,
            lid,
        );
        notice.data_details[0..2].copy_from_slice(&lid.to_be_bytes());
        notice.emit(&mut Smp::new_unchecked(&mut mad[..]).data_mut()[..Notice::SMP_LEN]);
        traps.pending.push(Trap {
            from: (node, 0),
            slid: lid,
            dlid: sm_lid,
            number: 128,
            mad,
        });
    }

    /// The traps raised since the last call, oldest first.
    pub fn take_traps(&mut self) -> Vec<Trap> {
        std::mem::take(&mut self.traps.pending)
    }

    /// Whether traps are waiting to be taken.
    pub fn has_traps(&self) -> bool {
        !self.traps.pending.is_empty()
    }

    /// Where `trap` arrives: LID-routed from its sender to its DLID through the switches'
    /// tables over Active links (crossing them is counted, and seeded faults may lose it),
    /// the node and the port it came in on.
    ///
    /// # Errors
    /// Why it arrives nowhere ([`Dropped`]: no route, lost).
    pub fn route_trap(&mut self, trap: &Trap) -> Result<(NodeIdx, u8), Dropped> {
        self.route_response(trap.from, trap.dlid, &trap.mad)
    }
}

#[cfg(test)]
mod tests {
    use ibmad::{Notice, PhysPortState, PortState};

    use crate::model::Fabric;

    fn example(configured: bool) -> Fabric {
        let mut f = Fabric::load_named("example").unwrap();
        if configured {
            f.configure(None).unwrap();
        }
        f
    }

    #[test]
    fn a_link_down_and_up_between_switches_sends_trap_128_from_both() {
        let mut f = example(true);
        let (sw1, sw2) = (f.find("S-sw1").unwrap(), f.find("S-sw2").unwrap());
        let c = f.set_link((sw1, 8), false).unwrap();
        assert_eq!(c.after, (PhysPortState::Disabled, PortState::Down));
        assert_eq!(c.far, Some((sw2, 8)));
        assert_eq!(c.far_after, Some((PhysPortState::Polling, PortState::Down)));
        let traps = f.take_traps();
        assert_eq!(
            traps.iter().map(|t| t.from).collect::<Vec<_>>(),
            [(sw1, 0), (sw2, 0)]
        );
        let sm_lid = f.node(sw1).port(0).unwrap().master_sm_lid;
        for t in &traps {
            let lid = f.node(t.from.0).lid_of(0);
            assert_eq!((t.slid, t.dlid, t.number), (lid, sm_lid, 128));
            // SubnLid, class version 1, Trap, attribute Notice, modifier 0.
            assert_eq!(t.mad[..4], [1, 0x01, 1, 0x05]);
            assert_eq!(t.mad[16..24], [0, 2, 0, 0, 0, 0, 0, 0]);
            let n = Notice::parse_smp(&t.mad[64..]).unwrap();
            assert!(n.is_generic);
            assert_eq!(n.notice_type, super::NoticeType::Urgent);
            assert_eq!(n.producer_type(), Some(super::ProducerType::Switch));
            assert_eq!(n.trap_number(), Some(super::TrapNumber::LinkStateChange));
            assert_eq!((n.issuer_lid, n.details_lid()), (lid, Some(lid)));
        }
        assert_ne!(
            traps[0].mad[8..16],
            traps[1].mad[8..16],
            "TIDs of their own"
        );
        assert!(f.take_traps().is_empty());
        // sw2 can no longer reach the SM (at H-host1, behind sw1): its trap goes nowhere;
        // sw1's arrives at the SM's port.
        let sm = f.find("H-host1").unwrap();
        assert_eq!(f.route_trap(&traps[0]), Ok((sm, 1)));
        assert!(f.route_trap(&traps[1]).is_err());
        // Up again: both ends train (Initialize) and both switches trap again.
        let c = f.set_link((sw1, 8), true).unwrap();
        assert_eq!(c.after, (PhysPortState::LinkUp, PortState::Initialize));
        assert_eq!(
            c.far_after,
            Some((PhysPortState::LinkUp, PortState::Initialize))
        );
        assert_eq!(f.take_traps().len(), 2);
    }

    #[test]
    fn traps_wait_for_the_sm_and_one_per_switch_waits_at_a_time() {
        // No SM has set LIDs: no traps.
        let mut f = example(false);
        let sw1 = f.find("S-sw1").unwrap();
        f.set_link((sw1, 1), false).unwrap();
        assert!(!f.has_traps());
        // Configured: a CA's link is sw1's change; two events before the queue is read
        // make one trap.
        let mut f = example(true);
        f.set_link((sw1, 1), false).unwrap();
        f.set_link((sw1, 1), true).unwrap();
        let traps = f.take_traps();
        assert_eq!(traps.len(), 1);
        assert_eq!(traps[0].from, (sw1, 0));
        // Through the CA's end: still sw1's trap, none from the CA.
        let host1 = f.find("H-host1").unwrap();
        f.set_link((host1, 1), false).unwrap();
        assert_eq!(
            f.take_traps().iter().map(|t| t.from).collect::<Vec<_>>(),
            [(sw1, 0)]
        );
        // Taking a port that is already down down again changes nothing: no trap; nor
        // does bringing up a link that is up.
        f.set_link((host1, 1), false).unwrap();
        assert!(!f.has_traps());
        let sw2 = f.find("S-sw2").unwrap();
        let c = f.set_link((sw2, 8), true).unwrap();
        assert_eq!(c.after, (PhysPortState::LinkUp, PortState::Active));
        assert_eq!(c.before, c.after);
        assert!(!f.has_traps());
    }

    #[test]
    fn bad_ports_are_refused() {
        let mut f = example(true);
        let sw1 = f.find("S-sw1").unwrap();
        let host1 = f.find("H-host1").unwrap();
        assert_eq!(f.set_link((sw1, 0), false), Err(crate::LinkError::Port0));
        assert_eq!(f.set_link((sw1, 9), false), Err(crate::LinkError::NoPort));
        assert_eq!(f.set_link((host1, 0), false), Err(crate::LinkError::NoPort));
        assert_eq!(f.set_link((host1, 2), true), Err(crate::LinkError::NoPort));
        // An unlinked port can be disabled and enabled: nothing to train with.
        let c = f.set_link((sw1, 5), false).unwrap();
        assert_eq!(c.far, None);
        assert!(!f.has_traps());
    }
}
