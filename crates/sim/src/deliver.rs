//! Where a packet goes: directed-route SMPs by their route ([`Fabric::smp`]), everything
//! else by LID through the switches' tables ([`Fabric::lid_route`]), to the node's agent
//! that answers its class, and the answer back to the sender the same way.

use ibmad::{Mad, MgmtClass, MAD_SIZE};

use crate::faults::{Fate, Leg};
use crate::model::{Fabric, NodeIdx};
use crate::smi::{Dropped, Walked};

/// The permissive LID: a directed-route SMP's DLID.
pub const PERMISSIVE_LID: u16 = 0xffff;

/// An answer on its way back to the sender.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The response MAD.
    pub mad: [u8; MAD_SIZE],
    /// Its source LID (the permissive LID for a directed-route response).
    pub slid: u16,
    /// Its source QP: 0 for an SMP, 1 for GSI classes.
    pub sqp: u32,
    /// Late, twice or (already applied to `mad`) with a bit flipped, by a seeded fault;
    /// on time and once without faults.
    pub fate: Fate,
}

/// A request that reached a port where no agent of the fabric answers it (SA and the other
/// GSI classes; SMInfo and traps at an IsSM port): for whatever runs there — an SM, an SA, a
/// GSI server — to answer ([`Fabric::route_response`] takes its answer back).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unanswered {
    /// The node it reached.
    pub at: NodeIdx,
    /// The port it arrived on (a switch's: the external port, or 0).
    pub port: u8,
    /// The request as it arrived: a directed-route one with the hop pointer and return path
    /// its walk left, so that its answer can walk back.
    pub mad: [u8; MAD_SIZE],
    /// Its source LID: the sender's, or the permissive LID for a directed-route request.
    pub slid: u16,
}

/// What became of a request [`Fabric::deliver_request`] delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// An agent of the fabric answered; the answer is back at the sender.
    Answered(Reply),
    /// Nothing of the fabric answers it where it arrived.
    Unanswered(Unanswered),
}

impl Fabric {
    /// Whether `port` is a port of a node of this fabric (a switch's port 0 included).
    pub fn has_port(&self, (node, port): (NodeIdx, u8)) -> bool {
        (node.0 as usize) < self.len() && self.node(node).port(port).is_some()
    }

    /// Delivers a request sent from `from` (node, port) to `dlid` on QP `qp` and returns the
    /// reply that comes back to that port. Any bytes are accepted: what is not a request
    /// this fabric answers is dropped, with the reason ([`Dropped::NoAgent`] where it
    /// arrived at a port whose agents the fabric does not have:
    /// [`Fabric::deliver_request`] hands over the request itself).
    pub fn deliver(
        &mut self,
        from: (NodeIdx, u8),
        dlid: u16,
        qp: u32,
        mad: &[u8],
    ) -> Result<Reply, Dropped> {
        match self.deliver_request(from, dlid, qp, mad)? {
            Delivery::Answered(r) => Ok(r),
            Delivery::Unanswered(u) => Err(Dropped::NoAgent {
                at: u.at,
                port: u.port,
            }),
        }
    }

    /// [`Fabric::deliver`], handing over a request no agent of the fabric answers as it
    /// arrived, for a program attached there (an SM, an SA) to answer.
    pub fn deliver_request(
        &mut self,
        from: (NodeIdx, u8),
        dlid: u16,
        qp: u32,
        mad: &[u8],
    ) -> Result<Delivery, Dropped> {
        if !self.has_port(from) {
            return Err(Dropped::NoLink);
        }
        let mut buf = [0u8; MAD_SIZE];
        let n = mad.len().min(MAD_SIZE);
        buf[..n].copy_from_slice(&mad[..n]);
        let header = Mad::new_unchecked(&buf[..]);
        if header.is_response() {
            return Err(Dropped::NotARequest);
        }
        let class = header.mgmt_class();
        if qp == 0 && class == MgmtClass::SubnDirectedRoute {
            return Ok(match self.smp_ticketed(from, mad)? {
                Walked::Answered(mut mad, ticket) => {
                    let fate = self.fate(ticket, &mut mad);
                    Delivery::Answered(Reply {
                        mad,
                        slid: PERMISSIVE_LID,
                        sqp: 0,
                        fate,
                    })
                }
                Walked::Unanswered { at, port, buf } => Delivery::Unanswered(Unanswered {
                    at,
                    port,
                    mad: buf,
                    slid: PERMISSIVE_LID,
                }),
            });
        }
        let ticket = self.ticket(from, dlid, qp, &buf);
        let mut hops = Vec::new();
        let there = self.lid_path(from, dlid, &mut hops);
        self.cross(&mut hops, ticket, Leg::Request)?;
        let (at, in_port) = there.ok_or(Dropped::NoRoute)?;
        self.check_alive(at)?;
        let unanswered = |buf| {
            Ok(Delivery::Unanswered(Unanswered {
                at,
                port: in_port,
                mad: buf,
                slid: self.lid_of(from.0, from.1),
            }))
        };
        let sqp = match (qp, class) {
            (0, MgmtClass::SubnLid) if self.sm_answers(at, in_port, &buf) => {
                return unanswered(buf)
            }
            (0, MgmtClass::SubnLid) => {
                self.answer(at, in_port, &mut buf)?;
                0
            }
            (1, MgmtClass::Perf) => {
                self.pma(at, &mut buf);
                1
            }
            _ => return unanswered(buf),
        };
        // Back by LID to the sender's LID, from the port the request came in on.
        let slid = self.lid_of(at, in_port);
        let to = self.lid_of(from.0, from.1);
        let back = self.lid_path((at, in_port), to, &mut hops);
        self.cross(&mut hops, ticket, Leg::Answer)?;
        if back.ok_or(Dropped::NoRoute)?.0 != from.0 {
            return Err(Dropped::NoRoute);
        }
        let fate = self.fate(ticket, &mut buf);
        Ok(Delivery::Answered(Reply {
            mad: buf,
            slid,
            sqp,
            fate,
        }))
    }

    /// Where a response sent from `from` (an SM's answer, say) arrives: node and the port it
    /// came in on. By LID through the switches' tables unless it is a directed-route SMP
    /// sent to the permissive LID, which returns along its return path (ibsim's rule: any
    /// DLID below 0xffff is LID-routed). `mad` is taken as ibsim takes a client's directed
    /// response, with hop pointer 0 (what the kernel would set is left to this walk): the
    /// walk starts at hop pointer hop count + 1, as the responder's SMA leaves it. Links
    /// crossed are counted as for requests.
    pub fn route_response(
        &mut self,
        from: (NodeIdx, u8),
        dlid: u16,
        mad: &[u8],
    ) -> Result<(NodeIdx, u8), Dropped> {
        if !self.has_port(from) {
            return Err(Dropped::NoLink);
        }
        let mut buf = [0u8; MAD_SIZE];
        let n = mad.len().min(MAD_SIZE);
        buf[..n].copy_from_slice(&mad[..n]);
        // An SM's answers cross the same faulty links as requests do.
        let ticket = self.ticket(from, dlid, u32::MAX, &buf);
        let mut hops = Vec::new();
        let class = Mad::new_unchecked(&buf[..]).mgmt_class();
        let there = if class == MgmtClass::SubnDirectedRoute && dlid == PERMISSIVE_LID {
            let mut smp = ibmad::Smp::new_unchecked(&mut buf[..]);
            if !smp.direction() {
                return Err(Dropped::BadHop);
            }
            let count = smp.hop_count();
            smp.set_hop_pointer(if count == 0 {
                0
            } else {
                count.saturating_add(1)
            });
            self.walk(from, &mut buf, &mut hops)
        } else {
            self.lid_path(from, dlid, &mut hops).ok_or(Dropped::NoRoute)
        };
        self.cross(&mut hops, ticket, Leg::Answer)?;
        there
    }
}
