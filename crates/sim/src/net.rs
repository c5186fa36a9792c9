//! A fabric on a clock: answers arrive when their time comes, late or twice when a seeded
//! fault says so ([`crate::faults`]).
//!
//! The clock is the caller's: [`Net::advance`] and [`Net::advance_to`] move it, and nothing
//! else does, so a test in process can make time pass exactly when it wants (a virtual
//! clock), and a carrier or daemon drives it with its monotonic clock. Sans-IO: no thread,
//! no system call.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use crate::deliver::Reply;
use crate::model::{Fabric, NodeIdx};
use crate::smi::Dropped;

/// An answer arriving at the port it is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arrival<T> {
    /// Whose it is: the tag the request was sent with.
    pub tag: T,
    /// The answer.
    pub reply: Reply,
    /// When it arrived, on the net's clock.
    pub at: Duration,
}

/// One answer on its way: due time, then sending order (so same-time arrivals keep it).
#[derive(Debug)]
struct Pending<T> {
    due: u64,
    seq: u64,
    tag: T,
    reply: Reply,
}

impl<T> PartialEq for Pending<T> {
    fn eq(&self, o: &Self) -> bool {
        (self.due, self.seq) == (o.due, o.seq)
    }
}
impl<T> Eq for Pending<T> {}
impl<T> PartialOrd for Pending<T> {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl<T> Ord for Pending<T> {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.due, self.seq).cmp(&(o.due, o.seq))
    }
}

/// A [`Fabric`] whose answers travel in time. `T` tags a request with whoever should get its
/// answer (a port of a process, a client of a daemon).
#[derive(Debug)]
pub struct Net<T> {
    fabric: Fabric,
    now: u64,
    seq: u64,
    pending: BinaryHeap<Reverse<Pending<T>>>,
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl<T: Clone> Net<T> {
    /// `fabric` at time zero, nothing on its way.
    pub fn new(fabric: Fabric) -> Net<T> {
        Net {
            fabric,
            now: 0,
            seq: 0,
            pending: BinaryHeap::new(),
        }
    }

    /// The fabric.
    pub fn fabric(&self) -> &Fabric {
        &self.fabric
    }

    /// The fabric, to change (faults, links, state).
    pub fn fabric_mut(&mut self) -> &mut Fabric {
        &mut self.fabric
    }

    /// The time on this net's clock.
    pub fn now(&self) -> Duration {
        Duration::from_nanos(self.now)
    }

    /// Moves the clock on by `by`.
    pub fn advance(&mut self, by: Duration) {
        self.now = self.now.saturating_add(nanos(by));
    }

    /// Moves the clock to `to`; a time already past leaves it where it is (the clock never
    /// goes back).
    pub fn advance_to(&mut self, to: Duration) {
        self.now = self.now.max(nanos(to));
    }

    /// Sends a request from `from` to `dlid` on `qp` (see [`Fabric::deliver`]); its answer,
    /// if there is one, becomes due now or, if a fault delays it, later: take it with
    /// [`Net::poll`]. A fault that duplicates it makes it due twice.
    ///
    /// # Errors
    /// Why no answer will come ([`Dropped`]).
    pub fn send(
        &mut self,
        tag: T,
        from: (NodeIdx, u8),
        dlid: u16,
        qp: u32,
        mad: &[u8],
    ) -> Result<(), Dropped> {
        let reply = self.fabric.deliver(from, dlid, qp, mad)?;
        self.schedule(tag, reply);
        Ok(())
    }

    /// Queues `reply` (an answer [`Fabric::deliver`] gave) for `tag` as its fate says: due
    /// now or later, once or twice. For a caller that delivers plain answers itself and
    /// hands only the others to the clock.
    pub fn schedule(&mut self, tag: T, reply: Reply) {
        let due = self.now.saturating_add(reply.fate.delay_ns);
        for _ in 1..reply.fate.copies {
            self.push(due, tag.clone(), reply.clone());
        }
        self.push(due, tag, reply);
    }

    fn push(&mut self, due: u64, tag: T, reply: Reply) {
        self.seq += 1;
        self.pending.push(Reverse(Pending {
            due,
            seq: self.seq,
            tag,
            reply,
        }));
    }

    /// The next answer due by now, in the order they fell due (sending order among
    /// answers due at the same time).
    pub fn poll(&mut self) -> Option<Arrival<T>> {
        if self.pending.peek()?.0.due > self.now {
            return None;
        }
        let Reverse(p) = self.pending.pop()?;
        Some(Arrival {
            tag: p.tag,
            reply: p.reply,
            at: Duration::from_nanos(p.due),
        })
    }

    /// When the next answer falls due (`None`: nothing on its way).
    pub fn next_due(&self) -> Option<Duration> {
        self.pending.peek().map(|p| Duration::from_nanos(p.0.due))
    }

    /// Answers on their way, due or not.
    pub fn in_flight(&self) -> usize {
        self.pending.len()
    }

    /// Forgets the answers on their way to `tag` (its port closed).
    pub fn forget(&mut self, tag: &T)
    where
        T: PartialEq,
    {
        self.pending.retain(|p| p.0.tag != *tag);
    }
}
