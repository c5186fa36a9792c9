//! Faults, seeded and replayable: packets lost on links (everywhere, on one link, or around
//! one node), nodes that stop answering, answers delayed, duplicated or with a bit flipped.
//!
//! Every decision is a hash of the seed, the packet (its sender, destination, QP and bytes,
//! the transaction ID left out) and how many times that same packet was sent before: not a
//! stream of random numbers consumed in arrival order. So the same seed gives the same run
//! whatever the order in which threads send, and a retry of a lost request (the same packet
//! again) gets a fresh chance, as on a fabric.
//!
//! Faults are set with a text spec, one syntax for `UMAD_SIM_FAULTS`, `umad sim serve
//! --faults` and the daemon's control interface ([`Fabric::apply_faults`]): items separated
//! by commas or new lines, each applied in order on top of what is set.
//!
//! | item | meaning |
//! |---|---|
//! | `seed=N` | the seed (decimal or `0x` hex; default 0) |
//! | `drop=R` | a packet that crosses a link is lost with probability `R` (once a request, once its answer, however many links) |
//! | `drop[NODE]=R` | the links of `NODE` lose packets with probability `R` (either way) |
//! | `drop[NODE/PORT]=R` | the link at `PORT` of `NODE` loses packets with probability `R` |
//! | `dead=NODE` / `alive=NODE` | `NODE` stops answering and forwarding / starts again |
//! | `delay=R@D` or `delay=R@D1..D2` | an answer is late with probability `R`, by `D` (or a duration in `D1..=D2`) |
//! | `dup=R` | an answer arrives twice with probability `R` |
//! | `flip=R` | an answer has one bit flipped with probability `R` |
//! | `clear` | no faults (the seed is kept) |
//!
//! `R` is a probability (`0.2`) or a percentage (`20%`); `D` a duration with its unit
//! (`500ns`, `20us`, `5ms`, `1s`); `NODE` a node id or NodeDescription, as
//! [`Fabric::find`] takes them. Delays are times on the clock of whoever drives the fabric
//! (the [`Net`](crate::net::Net) virtual clock, or the daemon's and carrier's monotonic one).

use std::collections::{HashMap, HashSet};

use crate::model::{Fabric, NodeIdx};
use crate::smi::{Dropped, Hop};

/// A probability, as a threshold on 32 random bits (`1 << 32` = always).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Rate(u64);

impl Rate {
    /// Never.
    pub const NEVER: Rate = Rate(0);
    /// Always.
    pub const ALWAYS: Rate = Rate(1 << 32);

    /// The rate of probability `p` (clamped to 0..=1).
    pub fn new(p: f64) -> Rate {
        if p.is_nan() || p <= 0.0 {
            Rate::NEVER
        } else if p >= 1.0 {
            Rate::ALWAYS
        } else {
            Rate((p * (1u64 << 32) as f64) as u64)
        }
    }

    /// The probability.
    pub fn probability(self) -> f64 {
        self.0 as f64 / (1u64 << 32) as f64
    }

    /// Whether 64 random bits fall under it.
    fn hit(self, bits: u64) -> bool {
        (bits >> 32) < self.0
    }
}

/// How late an answer may be: with probability `rate`, by a duration in `min..=max`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Delay {
    /// How often.
    pub rate: Rate,
    /// Shortest delay, in nanoseconds.
    pub min_ns: u64,
    /// Longest delay, in nanoseconds.
    pub max_ns: u64,
}

/// Occurrence counts kept before they are forgotten (replays stay exact for runs that send
/// fewer distinct packets; a longer run starts counting again, still deterministically).
const SEEN_CAP: usize = 1 << 20;

/// The faults of a fabric.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Faults {
    seed: u64,
    drop: Rate,
    links: HashMap<(NodeIdx, u8), Rate>,
    nodes: HashMap<NodeIdx, Rate>,
    dead: HashSet<NodeIdx>,
    delay: Delay,
    dup: Rate,
    flip: Rate,
    seen: HashMap<u64, u32>,
}

/// One packet, as the fault rolls know it: what it is and how many times it was sent before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ticket {
    key: u64,
}

/// What becomes of an answer on its way back, beyond arriving.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fate {
    /// Nanoseconds late (0: at once).
    pub delay_ns: u64,
    /// Copies that arrive: 1, or 2 when duplicated.
    pub copies: u8,
}

impl Fate {
    /// Whether the answer arrives at once and once (no fault touched its timing).
    pub fn is_plain(&self) -> bool {
        self.delay_ns == 0 && self.copies == 1
    }
}

/// Which way a packet goes, for the rolls.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Leg {
    Request = 1,
    Answer = 2,
}

const SALT_LOSS: u64 = 0x6c6f_7373;
const SALT_DELAY: u64 = 0x6465_6c61;
const SALT_DELAY_LEN: u64 = 0x6c65_6e67;
const SALT_DUP: u64 = 0x6475_7020;
const SALT_FLIP: u64 = 0x666c_6970;
const SALT_FLIP_AT: u64 = 0x6269_7420;

/// The 64-bit finalizer of splitmix64: every input bit moves every output bit.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// FNV-1a over `bytes`, continuing from `h`.
fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The common MAD header's transaction ID: left out of a packet's identity, so a retry with
/// a new TID is the same packet again.
const TID: std::ops::Range<usize> = 8..16;

impl Faults {
    /// Whether any fault is set (the seed alone is none).
    pub fn is_active(&self) -> bool {
        self.drop != Rate::NEVER
            || !self.links.is_empty()
            || !self.nodes.is_empty()
            || !self.dead.is_empty()
            || self.delay.rate != Rate::NEVER
            || self.dup != Rate::NEVER
            || self.flip != Rate::NEVER
    }

    /// The seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Whether `node` stopped answering.
    pub fn is_dead(&self, node: NodeIdx) -> bool {
        self.dead.contains(&node)
    }

    /// The ticket of a packet sent from `from` to `dlid` on `qp` with bytes `mad`: its
    /// identity and how many times it was sent before.
    pub(crate) fn ticket(&mut self, from: (NodeIdx, u8), dlid: u16, qp: u32, mad: &[u8]) -> Ticket {
        let mut h = fnv(0xcbf2_9ce4_8422_2325, &from.0 .0.to_le_bytes());
        h = fnv(h, &[from.1]);
        h = fnv(h, &dlid.to_le_bytes());
        h = fnv(h, &qp.to_le_bytes());
        let tid = TID.start.min(mad.len())..TID.end.min(mad.len());
        h = fnv(h, &mad[..tid.start]);
        h = fnv(h, &mad[tid.end..]);
        if self.seen.len() >= SEEN_CAP {
            self.seen.clear();
        }
        let n = self.seen.entry(h).or_insert(0);
        *n = n.wrapping_add(1);
        Ticket {
            key: mix(h ^ mix(u64::from(*n))),
        }
    }

    /// 64 random bits for `what` of packet `t`.
    fn bits(&self, t: Ticket, what: u64) -> u64 {
        mix(self.seed ^ mix(t.key ^ mix(what)))
    }

    /// The hop of a leg of `hops` links on which the packet of ticket `t` is lost by the
    /// fabric-wide `drop=` rate, if it is: each packet once, on one of its links.
    pub(crate) fn lost_on(&self, t: Ticket, leg: Leg, hops: usize) -> Option<usize> {
        if hops == 0 || self.drop == Rate::NEVER {
            return None;
        }
        let what = SALT_LOSS ^ ((leg as u64) << 56);
        let bits = self.bits(t, what);
        self.drop.hit(bits).then(|| (bits as u32 as usize) % hops)
    }

    /// Whether the packet of ticket `t`, crossing hop number `i` (of leg `leg`), is lost
    /// there: into a dead node, or by the rate of that link or of a node at either end.
    pub(crate) fn lost(&self, t: Ticket, leg: Leg, i: usize, (out, into): Hop) -> bool {
        if self.dead.contains(&into.0) {
            return true;
        }
        let what = SALT_LOSS ^ ((leg as u64) << 56) ^ ((i as u64 + 1) << 8);
        let rates = [
            self.links.get(&out).copied().unwrap_or_default(),
            self.links.get(&into).copied().unwrap_or_default(),
            self.nodes.get(&out.0).copied().unwrap_or_default(),
            self.nodes.get(&into.0).copied().unwrap_or_default(),
        ];
        rates
            .iter()
            .enumerate()
            .any(|(k, r)| *r != Rate::NEVER && r.hit(self.bits(t, what ^ k as u64)))
    }

    /// What becomes of the answer to ticket `t`; flips a bit of `mad` if it is to be
    /// corrupted.
    pub(crate) fn fate(&self, t: Ticket, mad: &mut [u8]) -> Fate {
        let mut fate = Fate {
            delay_ns: 0,
            copies: 1,
        };
        let d = self.delay;
        if d.rate != Rate::NEVER && d.rate.hit(self.bits(t, SALT_DELAY)) {
            let span = d.max_ns.saturating_sub(d.min_ns);
            let extra = match span.checked_add(1) {
                Some(m) => self.bits(t, SALT_DELAY_LEN) % m,
                None => self.bits(t, SALT_DELAY_LEN),
            };
            fate.delay_ns = d.min_ns.saturating_add(extra);
        }
        if self.dup != Rate::NEVER && self.dup.hit(self.bits(t, SALT_DUP)) {
            fate.copies = 2;
        }
        if self.flip != Rate::NEVER && !mad.is_empty() && self.flip.hit(self.bits(t, SALT_FLIP)) {
            let bit = self.bits(t, SALT_FLIP_AT) % (mad.len() as u64 * 8);
            mad[(bit / 8) as usize] ^= 1 << (bit % 8);
        }
        fate
    }
}

/// A fault spec that does not parse or names what the fabric does not have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("fault spec item {item:?}: {what}")]
pub struct FaultError {
    /// The item.
    pub item: String,
    /// What is wrong with it.
    pub what: String,
}

fn parse_rate(s: &str) -> Result<Rate, String> {
    let (num, scale) = match s.strip_suffix('%') {
        Some(n) => (n, 100.0),
        None => (s, 1.0),
    };
    let p: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a probability (0.2) or a percentage (20%)"))?;
    let p = p / scale;
    if !(0.0..=1.0).contains(&p) {
        return Err(format!("{s:?} is not between 0 and 1 (0% and 100%)"));
    }
    Ok(Rate::new(p))
}

/// A duration with its unit (`ns`, `us`, `ms`, `s`), in nanoseconds.
fn parse_duration(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let units: [(&str, u64); 4] = [
        ("ns", 1),
        ("us", 1_000),
        ("ms", 1_000_000),
        ("s", 1_000_000_000),
    ];
    for (unit, scale) in units {
        if let Some(n) = s.strip_suffix(unit) {
            let v: u64 = n
                .trim()
                .parse()
                .map_err(|_| format!("{s:?} is not a whole number of {unit}"))?;
            return v
                .checked_mul(scale)
                .ok_or_else(|| format!("{s:?} is too long"));
        }
    }
    Err(format!(
        "{s:?} has no unit: write it as 500ns, 20us, 5ms or 1s"
    ))
}

fn parse_seed(s: &str) -> Result<u64, String> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    }
    .map_err(|_| format!("{s:?} is not a 64-bit number"))
}

impl Fabric {
    /// The faults set on this fabric (none by default).
    pub fn faults(&self) -> Option<&Faults> {
        self.faults.as_deref()
    }

    /// Applies a fault spec (the module doc's syntax), item by item, on top of the faults
    /// already set. Nothing changes if any item is bad.
    ///
    /// # Errors
    /// [`FaultError`] naming the first bad item and why.
    pub fn apply_faults(&mut self, spec: &str) -> Result<(), FaultError> {
        let mut f = self.faults.as_deref().cloned().unwrap_or_default();
        for item in spec.split([',', '\n']).map(str::trim) {
            if item.is_empty() {
                continue;
            }
            self.apply_item(&mut f, item).map_err(|what| FaultError {
                item: item.to_string(),
                what,
            })?;
        }
        self.faults = (f.is_active() || f.seed != 0).then(|| Box::new(f));
        Ok(())
    }

    fn apply_item(&self, f: &mut Faults, item: &str) -> Result<(), String> {
        if item == "clear" {
            *f = Faults {
                seed: f.seed,
                ..Faults::default()
            };
            return Ok(());
        }
        let (key, value) = item
            .split_once('=')
            .ok_or("expected key=value (seed, drop, drop[NODE], drop[NODE/PORT], dead, alive, delay, dup, flip) or clear")?;
        let (key, value) = (key.trim(), value.trim());
        if let Some(target) = key.strip_prefix("drop[").and_then(|k| k.strip_suffix(']')) {
            let rate = parse_rate(value)?;
            match self.fault_target(target)? {
                (node, None) => f.nodes.insert(node, rate),
                (node, Some(port)) => f.links.insert((node, port), rate),
            };
            return Ok(());
        }
        match key {
            "seed" => f.seed = parse_seed(value)?,
            "drop" => f.drop = parse_rate(value)?,
            "dup" => f.dup = parse_rate(value)?,
            "flip" => f.flip = parse_rate(value)?,
            "dead" => {
                f.dead.insert(self.fault_node(value)?);
            }
            "alive" => {
                f.dead.remove(&self.fault_node(value)?);
            }
            "delay" => {
                let (rate, span) = value
                    .split_once('@')
                    .ok_or("expected delay=RATE@DURATION or delay=RATE@MIN..MAX")?;
                let (min, max) = match span.split_once("..") {
                    Some((a, b)) => (parse_duration(a)?, parse_duration(b)?),
                    None => {
                        let d = parse_duration(span)?;
                        (d, d)
                    }
                };
                if min > max {
                    return Err(format!("the shortest delay ({min} ns) is above the longest ({max} ns)"));
                }
                f.delay = Delay {
                    rate: parse_rate(rate)?,
                    min_ns: min,
                    max_ns: max,
                };
            }
            _ => return Err(format!("unknown key {key:?}: the keys are seed, drop, drop[NODE], drop[NODE/PORT], dead, alive, delay, dup, flip")),
        }
        Ok(())
    }

    fn fault_node(&self, name: &str) -> Result<NodeIdx, String> {
        self.find(name)
            .ok_or_else(|| format!("no node has the id or NodeDescription {name:?}"))
    }

    /// `NODE` or `NODE/PORT` (a NODE that itself contains a `/` is tried whole first).
    fn fault_target(&self, target: &str) -> Result<(NodeIdx, Option<u8>), String> {
        if let Some(n) = self.find(target) {
            return Ok((n, None));
        }
        let (name, port) = target
            .rsplit_once('/')
            .ok_or_else(|| format!("no node has the id or NodeDescription {target:?}"))?;
        let node = self.fault_node(name)?;
        let port: u8 = port
            .parse()
            .map_err(|_| format!("{port:?} is not a port number"))?;
        let has = self
            .node(node)
            .port(port)
            .is_some_and(|p| p.remote.is_some());
        if !has {
            return Err(format!("port {port} of {name:?} has no link"));
        }
        Ok((node, Some(port)))
    }

    /// The ticket of a packet about to be delivered, when faults are set.
    pub(crate) fn ticket(
        &mut self,
        from: (NodeIdx, u8),
        dlid: u16,
        qp: u32,
        mad: &[u8],
    ) -> Option<Ticket> {
        Some(self.faults.as_deref_mut()?.ticket(from, dlid, qp, mad))
    }

    /// Counts the packet of `hops` across each link (and empties `hops`), stopping where a
    /// fault loses it: then the loss is the reason it went no further.
    pub(crate) fn cross(
        &mut self,
        hops: &mut Vec<Hop>,
        ticket: Option<Ticket>,
        leg: Leg,
    ) -> Result<(), Dropped> {
        let mut lost = None;
        let fabric_wide = match (ticket, self.faults.as_deref()) {
            (Some(t), Some(f)) => f.lost_on(t, leg, hops.len()),
            _ => None,
        };
        for (i, &hop) in hops.iter().enumerate() {
            if let (Some(t), Some(f)) = (ticket, self.faults.as_deref()) {
                if fabric_wide == Some(i) || f.lost(t, leg, i, hop) {
                    lost = Some(if f.is_dead(hop.1 .0) {
                        Dropped::Dead { node: hop.1 .0 }
                    } else {
                        Dropped::Lost { link: hop }
                    });
                    // The sender sent it; nobody received it.
                    self.count_sent(hop.0);
                    break;
                }
            }
            self.count_hop(hop.0, hop.1);
        }
        hops.clear();
        lost.map_or(Ok(()), Err)
    }

    /// Whether the node answering at `at` stopped answering (then a request it is asked
    /// locally, over no link, gets no answer either).
    pub(crate) fn check_alive(&self, at: NodeIdx) -> Result<(), Dropped> {
        match self.faults.as_deref() {
            Some(f) if f.is_dead(at) => Err(Dropped::Dead { node: at }),
            _ => Ok(()),
        }
    }

    /// The fate of the answer to `ticket` (bit flip applied to `mad`).
    pub(crate) fn fate(&self, ticket: Option<Ticket>, mad: &mut [u8]) -> Fate {
        match (ticket, self.faults.as_deref()) {
            (Some(t), Some(f)) => f.fate(t, mad),
            _ => Fate {
                delay_ns: 0,
                copies: 1,
            },
        }
    }
}

#[cfg(test)]
#[path = "faults_tests.rs"]
mod tests;
