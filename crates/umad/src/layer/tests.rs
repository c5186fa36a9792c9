//! The MAD layer's engine against scripted peers, on a simulated clock: deterministic.

use std::time::{Duration, Instant};

use ibmad::{Mad, Rmpp, RmppHeader, RmppStatus, RmppType};

use super::engine::{Engine, LayerConfig};
use super::Packet;
use crate::addr::MadAddr;
use crate::agent::{AgentId, AgentSpec, MethodMask};
use crate::transport::{Outgoing, Received, STATUS_ABORTED, STATUS_TIMEOUT};

const SA: u8 = 0x03;
const GET_TABLE: u8 = 0x12;
const GET_TABLE_RESP: u8 = 0x92;
const SET: u8 = 0x02;
const GET_RESP: u8 = 0x81;
/// SA data bytes per segment.
const SEG: usize = 200;

fn client() -> AgentSpec {
    AgentSpec::new(SA, 2).rmpp_version(1)
}

fn server() -> AgentSpec {
    client().methods(MethodMask::of(&[GET_TABLE, SET]))
}

/// An SA MAD of `len` bytes: method, TID, RMPP ACTIVE DATA when `rmpp`, data bytes numbered.
fn sa_mad(method: u8, tid: u64, len: usize, rmpp: bool) -> Vec<u8> {
    let mut m = vec![0u8; len.max(56)];
    m[0] = 1;
    m[1] = SA;
    m[2] = 2;
    m[3] = method;
    Mad::new_unchecked(&mut m[..]).set_tid(tid);
    if rmpp {
        let mut h = RmppHeader::data(0, false, false, 0);
        h.flags = ibmad::rmpp::RmppFlags(ibmad::rmpp::RmppFlags::ACTIVE);
        h.emit(&mut Rmpp::new_unchecked(&mut m[..]));
    }
    for (i, b) in m[56..].iter_mut().enumerate() {
        *b = (i % 251) as u8 ^ (i / 251) as u8;
    }
    m
}

/// Decides the fate of a packet on the wire: (from A, the packet, its index) → copies to
/// deliver (0 = lost, 2 = duplicated).
type Fate = Box<dyn FnMut(bool, &Packet, usize) -> usize>;

/// Two engines on a simulated wire: A at LID 1, B at LID 2, with a hook deciding the fate
/// of each packet and a clock advanced by hand.
struct Wire {
    a: Engine,
    b: Engine,
    now: Instant,
    /// Called for every packet.
    fate: Fate,
    sent: usize,
    /// Packets held back to be delivered after the next one (reordering).
    held: Vec<(bool, Packet)>,
    reorder: bool,
    log: Vec<(bool, RmppType, u32, u32)>,
}

impl Wire {
    fn new() -> Wire {
        let cfg = LayerConfig::default();
        Wire {
            a: Engine::new(cfg, "simA", 1),
            b: Engine::new(cfg, "simB", 1),
            now: Instant::now(),
            fate: Box::new(|_, _, _| 1),
            sent: 0,
            held: Vec::new(),
            reorder: false,
            log: Vec::new(),
        }
    }

    /// Moves packets until both outboxes are empty.
    fn pump(&mut self) {
        for _ in 0..1_000_000 {
            let mut out: Vec<(bool, Packet)> = self
                .a
                .take_outbox()
                .into_iter()
                .map(|p| (true, p))
                .collect();
            out.extend(self.b.take_outbox().into_iter().map(|p| (false, p)));
            if out.is_empty() && self.held.is_empty() {
                return;
            }
            if out.is_empty() {
                out = std::mem::take(&mut self.held);
            }
            for (from_a, p) in out {
                let n = (self.fate)(from_a, &p, self.sent);
                self.sent += 1;
                if let Ok(r) = Rmpp::new_checked(&p.mad[..]) {
                    if r.flags().is_active() {
                        self.log
                            .push((from_a, r.rmpp_type(), r.segment_number(), r.data2()));
                    }
                }
                for _ in 0..n {
                    if self.reorder && self.sent % 3 == 0 {
                        self.held.push((from_a, p.clone()));
                        continue;
                    }
                    self.deliver(from_a, p.clone());
                }
            }
        }
        panic!("the wire never went quiet");
    }

    fn deliver(&mut self, from_a: bool, p: Packet) {
        let (src, qp) = (if from_a { 1 } else { 2 }, p.qp);
        let rx = Packet {
            mad: p.mad,
            addr: MadAddr::new(src, qp, 0, MadAddr::DEFAULT_QKEY),
            qp: p.addr.qpn,
            status: 0,
        };
        let now = self.now;
        if from_a {
            self.b.on_packet(now, rx);
        } else {
            self.a.on_packet(now, rx);
        }
    }

    /// Advances the clock by `d` and fires the timers of both ends, then pumps.
    fn advance(&mut self, d: Duration) {
        self.now += d;
        let now = self.now;
        self.a.on_timer(now);
        self.b.on_timer(now);
        self.pump();
    }

    /// Runs the clock in steps until `done` or `limit` passes.
    fn run_until(&mut self, limit: Duration, mut done: impl FnMut(&mut Wire) -> bool) {
        let end = self.now + limit;
        while !done(self) {
            assert!(self.now < end, "not done after {limit:?}");
            self.advance(Duration::from_millis(50));
        }
    }

    fn segments(&self, from_a: bool, t: RmppType) -> Vec<u32> {
        self.log
            .iter()
            .filter(|l| l.0 == from_a && l.1 == t)
            .map(|l| l.2)
            .collect()
    }
}

fn to_b() -> MadAddr {
    MadAddr::new(2, 1, 0, MadAddr::DEFAULT_QKEY)
}

fn send(e: &mut Engine, now: Instant, agent: AgentId, mad: &[u8], addr: MadAddr, t: u32, r: u32) {
    e.send(
        now,
        &Outgoing {
            agent,
            mad,
            addr,
            timeout_ms: t,
            retries: r,
        },
    )
    .unwrap();
}

/// A asks B for a table; B answers with `records_len` bytes of SA data. Returns the wire
/// (after the answer went out) and what B sent.
fn table_exchange(data_len: usize, setup: impl FnOnce(&mut Wire)) -> (Wire, Vec<u8>, AgentId) {
    let mut w = Wire::new();
    setup(&mut w);
    let ca = w.a.register(&client()).unwrap();
    let sb = w.b.register(&server()).unwrap();
    let now = w.now;
    send(
        &mut w.a,
        now,
        ca,
        &sa_mad(GET_TABLE, 0x1234, 256, false),
        to_b(),
        1000,
        3,
    );
    w.pump();
    let req = w.b.pop_ready().expect("B got the request");
    assert_eq!(req.agent, sb);
    let tid = Mad::new_unchecked(&req.mad[..]).tid();
    let resp = sa_mad(GET_TABLE_RESP, tid, 56 + data_len, true);
    send(&mut w.b, now, sb, &resp, req.addr, 0, 3);
    w.pump();
    (w, resp, ca)
}

/// Checks a delivered RMPP message against what was sent: same length, same bytes outside
/// the RMPP header, and the first segment's RMPP fields.
fn check_whole(got: &Received, sent: &[u8]) {
    assert_eq!(got.status, 0);
    assert_eq!(got.mad.len(), sent.len(), "length");
    assert_eq!(
        &got.mad[..24],
        &{
            let mut h = sent[..24].to_vec();
            h[8..12].copy_from_slice(&got.mad[8..12]);
            h
        }[..]
    );
    assert!(got.mad[36..] == sent[36..], "payload differs");
    let r = Rmpp::new_checked(&got.mad[..]).unwrap();
    assert!(r.flags().is_first() && r.flags().is_active());
    let segs = (sent.len() - 56).div_ceil(SEG).max(1);
    let pad = segs * SEG - (sent.len() - 56);
    assert_eq!(r.payload_length() as usize, segs * 220 - pad);
}

#[test]
fn one_segment_and_a_thousand_from_server_to_client() {
    for records in [0, 100, SEG, 1000 * SEG - 37, 1000 * SEG] {
        let (mut w, sent, ca) = table_exchange(records, |_| {});
        let got = w.a.pop_ready().expect("the whole table");
        assert_eq!(got.agent, ca);
        check_whole(&got, &sent);
        assert!(w.a.ready().is_empty() && w.b.ready().is_empty());
        assert_eq!(w.a.stats().retransmissions + w.b.stats().retransmissions, 0);
        // Windows: first 1 segment, then the receiver's 64 at a time.
        let data = w.segments(false, RmppType::Data);
        let count = records.div_ceil(SEG).max(1) as u32;
        assert_eq!(data, (1..=count).collect::<Vec<_>>(), "{records}");
        let acks = w.segments(true, RmppType::Ack);
        assert_eq!(acks[0], 1);
        assert_eq!(*acks.last().unwrap(), count);
        // Finished transfers linger 10 s for duplicates, then are freed.
        w.advance(Duration::from_secs(11));
        assert_eq!(w.a.transfers(), (0, 0));
        assert_eq!(w.b.transfers(), (0, 0));
    }
}

#[test]
fn one_segment_and_a_thousand_from_client_to_server() {
    for data_len in [10, 1000 * SEG] {
        let mut w = Wire::new();
        let ca = w.a.register(&client()).unwrap();
        let sb = w.b.register(&server()).unwrap();
        let now = w.now;
        let req = sa_mad(SET, 0x77, 56 + data_len, true);
        send(&mut w.a, now, ca, &req, to_b(), 500, 2);
        w.pump();
        let got = w.b.pop_ready().expect("the whole request");
        assert_eq!(got.agent, sb);
        check_whole(&got, &req);
        // The request now waits for its response, which B sends as one MAD.
        let mut resp = sa_mad(GET_RESP, Mad::new_unchecked(&got.mad[..]).tid(), 256, false);
        resp[56] = 0xaa;
        send(&mut w.b, now, sb, &resp, got.addr, 0, 0);
        w.pump();
        let r = w.a.pop_ready().expect("the response");
        assert_eq!((r.agent, r.status, r.mad[56]), (ca, 0, 0xaa));
        // No timeout report follows.
        w.advance(Duration::from_secs(2));
        assert!(w.a.ready().is_empty());
    }
}

#[test]
fn a_lost_data_segment_is_resent_after_the_ack_timeout() {
    let mut lost = false;
    let (mut w, sent, _) = table_exchange(300 * SEG, |w| {
        w.fate = Box::new(move |from_a, p, _| {
            let r = Rmpp::new_unchecked(&p.mad[..]);
            if !from_a && r.rmpp_type() == RmppType::Data && r.segment_number() == 70 && !lost {
                lost = true;
                return 0;
            }
            1
        });
    });
    assert!(w.a.ready().is_empty(), "delivered despite a hole");
    w.run_until(Duration::from_secs(10), |w| !w.a.ready().is_empty());
    check_whole(&w.a.pop_ready().unwrap(), &sent);
    assert!(w.b.stats().retransmissions >= 1);
    // Segment 70 went out twice, and nothing was delivered twice.
    assert_eq!(
        w.segments(false, RmppType::Data)
            .iter()
            .filter(|&&s| s == 70)
            .count(),
        2
    );
    w.advance(Duration::from_secs(3));
    assert!(w.a.ready().is_empty());
}

#[test]
fn a_lost_ack_is_recovered_by_the_senders_resend() {
    let mut acks = 0;
    let (mut w, sent, _) = table_exchange(200 * SEG, |w| {
        w.fate = Box::new(move |from_a, p, _| {
            let r = Rmpp::new_unchecked(&p.mad[..]);
            if from_a && r.rmpp_type() == RmppType::Ack {
                acks += 1;
                if acks == 2 {
                    return 0; // the ACK that opens the third window
                }
            }
            1
        });
    });
    w.run_until(Duration::from_secs(10), |w| !w.a.ready().is_empty());
    check_whole(&w.a.pop_ready().unwrap(), &sent);
    assert!(w.b.stats().retransmissions >= 1);
}

#[test]
fn duplicates_and_out_of_order_segments_are_placed_once() {
    let (mut w, sent, _) = table_exchange(500 * SEG, |w| {
        w.reorder = true;
        w.fate = Box::new(|from_a, _, i| if !from_a && i % 7 == 0 { 2 } else { 1 });
    });
    w.run_until(Duration::from_secs(20), |w| !w.a.ready().is_empty());
    check_whole(&w.a.pop_ready().unwrap(), &sent);
    w.advance(Duration::from_secs(3));
    assert!(w.a.ready().is_empty(), "delivered twice");
}

/// A sends a 10-segment request to a scripted peer; returns the engine and agent.
fn scripted_sender(timeout: u32, retries: u32) -> (Engine, AgentId, Instant) {
    let mut a = Engine::new(LayerConfig::default(), "simA", 1);
    let ca = a.register(&client()).unwrap();
    let now = Instant::now();
    send(
        &mut a,
        now,
        ca,
        &sa_mad(SET, 9, 56 + 10 * SEG, true),
        to_b(),
        timeout,
        retries,
    );
    (a, ca, now)
}

/// The peer's answer to `seg` (an RMPP packet of A): its header, method flipped, `h`.
fn answer(seg: &Packet, h: RmppHeader) -> Packet {
    let mut m = seg.mad.clone();
    m[3] ^= 0x80;
    h.emit(&mut Rmpp::new_unchecked(&mut m[..]));
    Packet {
        mad: m,
        addr: MadAddr::new(2, 1, 0, MadAddr::DEFAULT_QKEY),
        qp: 1,
        status: 0,
    }
}

fn data_segments(out: &[Packet]) -> Vec<u32> {
    out.iter()
        .map(|p| Rmpp::new_unchecked(&p.mad[..]))
        .filter(|r| r.rmpp_type() == RmppType::Data)
        .map(|r| r.segment_number())
        .collect()
}

#[test]
fn the_peers_window_is_honoured() {
    let (mut a, _, now) = scripted_sender(1000, 3);
    let out = a.take_outbox();
    assert_eq!(data_segments(&out), [1], "the first window is one segment");
    a.on_packet(now, answer(&out[0], RmppHeader::ack(1, 5)));
    let out = a.take_outbox();
    assert_eq!(data_segments(&out), [2, 3, 4, 5]);
    // An ACK inside the window grants nothing new: nothing is sent.
    a.on_packet(now, answer(&out[0], RmppHeader::ack(3, 5)));
    assert!(a.take_outbox().is_empty());
    a.on_packet(now, answer(&out[0], RmppHeader::ack(5, 12)));
    let out = a.take_outbox();
    assert_eq!(data_segments(&out), (6..=10).collect::<Vec<_>>());
    let last = Rmpp::new_unchecked(&out[4].mad[..]);
    assert!(last.flags().is_last());
    assert_eq!(last.payload_length(), 220);
    a.on_packet(now, answer(&out[0], RmppHeader::ack(10, 12)));
    assert_eq!(a.transfers(), (0, 0), "the send is complete");
}

#[test]
fn a_bounced_segment_is_resent_to_the_peer_at_once() {
    let (mut a, _, now) = scripted_sender(1000, 3);
    let out = a.take_outbox();
    assert_eq!(out[0].addr.lid, 2);
    // ibsim hands the lost packet back with our own LID as its source.
    let mut back = out[0].clone();
    back.addr = MadAddr::new(1, 1, 0, MadAddr::DEFAULT_QKEY);
    back.status = 110;
    a.on_packet(now, back);
    let again = a.take_outbox();
    assert_eq!(data_segments(&again), [1]);
    assert_eq!(
        again[0].addr.lid, 2,
        "resent to the receiver, not to ourselves"
    );
    assert_eq!(again[0].mad, out[0].mad);
}

#[test]
fn stop_and_abort_from_the_receiver_end_the_send() {
    for (h, nack) in [
        (
            RmppHeader::stop_or_abort(false, RmppStatus::ResourcesExhausted),
            None,
        ),
        (
            RmppHeader::stop_or_abort(true, RmppStatus::TotalTimeTooLong),
            None,
        ),
        (
            RmppHeader::stop_or_abort(true, RmppStatus::Normal),
            Some(RmppStatus::IllegalStatus),
        ),
    ] {
        let (mut a, ca, now) = scripted_sender(1000, 3);
        let out = a.take_outbox();
        a.on_packet(now, answer(&out[0], h));
        let r = a.pop_ready().expect("the request is reported");
        assert_eq!((r.agent, r.status), (ca, STATUS_ABORTED));
        assert_eq!(a.transfers(), (0, 0));
        let out = a.take_outbox();
        match nack {
            None => assert!(out.is_empty()),
            Some(s) => {
                let r = Rmpp::new_unchecked(&out[0].mad[..]);
                assert_eq!((r.rmpp_type(), r.status()), (RmppType::Abort, s));
            }
        }
        // Nothing more happens later.
        a.on_timer(now + Duration::from_secs(60));
        assert!(a.ready().is_empty() && a.take_outbox().is_empty());
    }
}

#[test]
fn bad_acks_abort_with_their_status() {
    for (ack, status) in [
        (RmppHeader::ack(3, 2), RmppStatus::NewWindowLastTooSmall),
        (RmppHeader::ack(11, 20), RmppStatus::SegmentNumberTooBig),
    ] {
        let (mut a, ca, now) = scripted_sender(1000, 3);
        let out = a.take_outbox();
        a.on_packet(now, answer(&out[0], RmppHeader::ack(1, 64)));
        a.take_outbox();
        a.on_packet(now, answer(&out[0], ack));
        let r = Rmpp::new_unchecked(&a.take_outbox()[0].mad[..]).status();
        assert_eq!(r, status);
        assert_eq!(a.pop_ready().unwrap().status, STATUS_ABORTED);
        assert!(a.ready().is_empty());
        let _ = ca;
    }
}

#[test]
fn the_sender_gives_up_after_its_retries_with_etimedout() {
    let (mut a, ca, now) = scripted_sender(100, 3);
    let mut firsts = data_segments(&a.take_outbox()).len();
    let mut t = now;
    for _ in 0..10 {
        t += Duration::from_millis(100);
        a.on_timer(t);
        firsts += data_segments(&a.take_outbox()).len();
    }
    assert_eq!(firsts, 4, "segment 1 once and three resends");
    let r = a.pop_ready().expect("a timeout report");
    assert_eq!((r.agent, r.status), (ca, STATUS_TIMEOUT));
    assert!(r.mad.len() <= 256);
    assert_eq!(a.transfers(), (0, 0));
    assert!(a.ready().is_empty());
}

#[test]
fn a_reassembly_that_never_completes_is_aborted_and_freed() {
    let mut w = Wire::new();
    let ca = w.a.register(&client()).unwrap();
    let sb = w.b.register(&server()).unwrap();
    let now = w.now;
    send(
        &mut w.a,
        now,
        ca,
        &sa_mad(GET_TABLE, 5, 256, false),
        to_b(),
        60_000,
        0,
    );
    w.pump();
    let req = w.b.pop_ready().unwrap();
    // B's segments after the first window vanish; B itself is then forgotten.
    w.fate = Box::new(|from_a, p, _| {
        let r = Rmpp::new_unchecked(&p.mad[..]);
        usize::from(from_a || r.segment_number() <= 3)
    });
    let resp = sa_mad(
        GET_TABLE_RESP,
        Mad::new_unchecked(&req.mad[..]).tid(),
        56 + 100 * SEG,
        true,
    );
    send(&mut w.b, now, sb, &resp, req.addr, 0, 0);
    w.pump();
    assert_eq!(w.a.transfers().0, 1);
    w.b.unregister(sb).unwrap();
    w.log.clear();
    w.advance(Duration::from_secs(41));
    assert_eq!(w.a.transfers(), (0, 0), "the reassembly is freed");
    let aborts: Vec<_> = w
        .log
        .iter()
        .filter(|l| l.0 && l.1 == RmppType::Abort)
        .collect();
    assert_eq!(aborts.len(), 1, "T2L abort sent: {:?}", w.log);
    // The request itself ends with its own timeout.
    w.run_until(Duration::from_secs(70), |w| !w.a.ready().is_empty());
    assert_eq!(w.a.pop_ready().unwrap().status, STATUS_TIMEOUT);
}

#[test]
fn requests_go_to_their_agent_and_responses_by_tid() {
    let mut w = Wire::new();
    let pm = w.a.register(&AgentSpec::new(0x04, 1)).unwrap();
    let _sa = w.a.register(&client()).unwrap();
    let srv =
        w.b.register(&AgentSpec::new(0x04, 1).methods(MethodMask::of(&[1])))
            .unwrap();
    let now = w.now;
    let mut req = vec![0u8; 256];
    req[..4].copy_from_slice(&[1, 0x04, 1, 1]);
    req[12..16].copy_from_slice(&42u32.to_be_bytes());
    send(&mut w.a, now, pm, &req, to_b(), 100, 0);
    w.pump();
    let r = w.b.pop_ready().unwrap();
    assert_eq!(r.agent, srv);
    assert_eq!(Mad::new_unchecked(&r.mad[..]).tid() >> 32, u64::from(pm));
    let mut resp = r.mad.clone();
    resp[3] = 0x81;
    send(&mut w.b, now, srv, &resp, r.addr, 0, 0);
    w.pump();
    let got = w.a.pop_ready().unwrap();
    assert_eq!((got.agent, got.status), (pm, 0));
    // A late duplicate response finds no request and is dropped.
    send(&mut w.b, now, srv, &resp, r.addr, 0, 0);
    w.pump();
    assert!(w.a.ready().is_empty());
    assert_eq!(w.a.stats().dropped_unmatched, 1);
}

/// An engine with `cfg` and a PerfMgt server agent.
fn perf_server(cfg: LayerConfig) -> Engine {
    let mut e = Engine::new(cfg, "sim", 1);
    e.register(&AgentSpec::new(0x04, 1).methods(MethodMask::of(&[1])))
        .unwrap();
    e
}

/// Makes `n` 256-byte PerfMgt requests arrive at `e`.
fn requests_arrive(e: &mut Engine, n: usize) {
    let mut mad = vec![0u8; 256];
    mad[..4].copy_from_slice(&[1, 0x04, 1, 1]);
    for _ in 0..n {
        let p = Packet {
            mad: mad.clone(),
            addr: to_b(),
            qp: 1,
            status: 0,
        };
        e.on_packet(Instant::now(), p);
    }
}

#[test]
fn the_application_queue_is_bounded() {
    let mut e = perf_server(LayerConfig {
        max_queued: 10,
        ..LayerConfig::default()
    });
    requests_arrive(&mut e, 100);
    assert_eq!(e.ready().len(), 10);
    assert_eq!(e.stats().dropped_queue_full, 90);
}

#[test]
fn reassemblies_are_bounded() {
    let cfg = LayerConfig {
        max_reassemblies: 8,
        ..LayerConfig::default()
    };
    let mut e = Engine::new(cfg, "sim", 1);
    e.register(&server()).unwrap();
    let now = Instant::now();
    let seg = |tid: u64, last: bool| {
        let mut m = sa_mad(SET, tid, 256, false);
        RmppHeader::data(1, true, last, 220).emit(&mut Rmpp::new_unchecked(&mut m[..]));
        Packet {
            mad: m,
            addr: to_b(),
            qp: 1,
            status: 0,
        }
    };
    // Finished one-segment messages are remembered, but never more than the bound.
    for tid in 0..100 {
        e.on_packet(now, seg(tid, true));
    }
    assert_eq!(e.ready().len(), 100);
    assert_eq!(e.transfers().0, 8);
    // Unfinished ones fill it; the next is stopped with RESX.
    for tid in 100..108 {
        e.on_packet(now, seg(tid, false));
    }
    e.take_outbox();
    e.on_packet(now, seg(200, false));
    let out = e.take_outbox();
    let r = Rmpp::new_unchecked(&out[0].mad[..]);
    assert_eq!(
        (r.rmpp_type(), r.status()),
        (RmppType::Stop, RmppStatus::ResourcesExhausted)
    );
    assert_eq!(e.transfers().0, 8);
}

#[test]
fn registration_refuses_rmpp_where_it_cannot_work() {
    let mut e = Engine::new(LayerConfig::default(), "sim", 1);
    let err = e
        .register(&AgentSpec::new(0x81, 1).rmpp_version(1))
        .unwrap_err();
    assert!(err.to_string().contains("RMPP"), "{err}");
    assert!(e.register(&AgentSpec::new(SA, 2).rmpp_version(2)).is_err());
    let a = e.register(&AgentSpec::new(0x04, 1)).unwrap();
    // Longer than one MAD without RMPP: refused with the reason.
    let err = e
        .send(
            Instant::now(),
            &Outgoing {
                agent: a,
                mad: &[0u8; 300],
                addr: to_b(),
                timeout_ms: 0,
                retries: 0,
            },
        )
        .unwrap_err();
    assert!(err.to_string().contains("rmpp_version"), "{err}");
    assert!(e
        .send(
            Instant::now(),
            &Outgoing {
                agent: 9,
                mad: &[0u8; 256],
                addr: to_b(),
                timeout_ms: 0,
                retries: 0
            }
        )
        .is_err());
}

#[test]
fn a_short_rmpp_segment_counts_as_a_whole_mad() {
    // Found by the mad_layer fuzz target: an SA DATA segment shorter than the SA header.
    let mut e = Engine::new(LayerConfig::default(), "sim", 1);
    e.register(&server()).unwrap();
    let mut m = sa_mad(SET, 3, 256, false);
    RmppHeader::data(1, true, true, 220).emit(&mut Rmpp::new_unchecked(&mut m[..]));
    m.truncate(44);
    e.on_packet(
        Instant::now(),
        Packet {
            mad: m,
            addr: to_b(),
            qp: 1,
            status: 0,
        },
    );
    let r = e.pop_ready().expect("delivered as one segment");
    assert_eq!(r.mad.len(), 256);
    assert_eq!(e.take_outbox().len(), 1, "ACKed");
}

/// An SA MAD from B at LID `lid` (the wire's receive view).
fn from(lid: u16, mad: Vec<u8>) -> Packet {
    Packet {
        mad,
        addr: MadAddr::new(lid, 1, 0, MadAddr::DEFAULT_QKEY),
        qp: 1,
        status: 0,
    }
}

#[test]
fn a_response_that_overtakes_the_last_ack_ends_the_request() {
    let mut a = Engine::new(LayerConfig::default(), "simA", 1);
    let ca = a.register(&client()).unwrap();
    let now = Instant::now();
    send(&mut a, now, ca, &sa_mad(SET, 4, 100, true), to_b(), 1000, 1);
    let seg = a.take_outbox().remove(0);
    // B answers before its ACK of the single segment arrives.
    let mut resp = seg.mad.clone();
    resp[3] = GET_RESP;
    resp[24..36].fill(0);
    a.on_packet(now, from(2, resp));
    let r = a.pop_ready().expect("the response");
    assert_eq!((r.agent, r.status), (ca, 0));
    assert_eq!(a.transfers(), (0, 0));
    a.on_timer(now + Duration::from_secs(10));
    assert!(a.ready().is_empty(), "no timeout report after the answer");
}

#[test]
fn responses_with_one_tid_to_two_requesters_are_two_transfers() {
    let mut b = Engine::new(LayerConfig::default(), "simB", 1);
    let sb = b.register(&server()).unwrap();
    let now = Instant::now();
    let resp = sa_mad(GET_TABLE_RESP, 0x0001_0000_0000_0042, 56 + 5 * SEG, true);
    for lid in [5, 6] {
        let to = MadAddr::new(lid, 1, 0, MadAddr::DEFAULT_QKEY);
        send(&mut b, now, sb, &resp, to, 0, 3);
    }
    assert_eq!(b.transfers().1, 2, "both sends held");
    let out = b.take_outbox();
    // LID 6 ACKs its first segment: only its transfer moves on.
    let ack = answer(&out[1], RmppHeader::ack(1, 64));
    b.on_packet(now, from(6, ack.mad));
    let next = b.take_outbox();
    assert_eq!(data_segments(&next), [2, 3, 4, 5]);
    assert!(next.iter().all(|p| p.addr.lid == 6));
}

#[test]
fn a_closed_window_is_probed_once_per_ack_timeout() {
    let (mut a, ca, now) = scripted_sender(100, 3);
    let out = a.take_outbox();
    a.on_packet(now, answer(&out[0], RmppHeader::ack(1, 1)));
    assert!(a.take_outbox().is_empty(), "the window is closed");
    let mut t = now;
    for step in 1..=3 {
        t += Duration::from_millis(100);
        a.on_timer(t);
        assert_eq!(data_segments(&a.take_outbox()), [2], "probe {step}");
        a.on_timer(t); // no second probe at the same instant
        assert!(a.take_outbox().is_empty());
    }
    t += Duration::from_millis(100);
    a.on_timer(t);
    assert_eq!(a.pop_ready().unwrap().status, STATUS_TIMEOUT);
    let _ = ca;
}

#[test]
fn a_repeated_ack_keeps_no_send_alive() {
    let (mut a, _, now) = scripted_sender(100, 2);
    let out = a.take_outbox();
    a.on_packet(now, answer(&out[0], RmppHeader::ack(1, 5)));
    a.take_outbox();
    let mut t = now;
    // The peer repeats ACK(1, 5) forever; segments 2-5 are lost each time.
    while a.ready().is_empty() {
        t += Duration::from_millis(90);
        assert!(t < now + Duration::from_secs(5), "the send never ends");
        a.on_packet(t, answer(&out[0], RmppHeader::ack(1, 5)));
        a.on_timer(t);
        a.take_outbox();
    }
    assert_eq!(a.pop_ready().unwrap().status, STATUS_TIMEOUT);
}

#[test]
fn reports_are_queued_even_when_the_queue_is_full() {
    let cfg = LayerConfig {
        max_queued: 2,
        ..LayerConfig::default()
    };
    let mut e = Engine::new(cfg, "sim", 1);
    let a = e.register(&AgentSpec::new(0x04, 1)).unwrap();
    let now = Instant::now();
    for tid in 0..5u32 {
        let mut req = vec![0u8; 256];
        req[..4].copy_from_slice(&[1, 0x04, 1, 1]);
        req[12..16].copy_from_slice(&tid.to_be_bytes());
        send(&mut e, now, a, &req, to_b(), 10, 0);
    }
    e.on_timer(now + Duration::from_millis(10));
    assert_eq!(e.ready().len(), 5, "every request ends");
    assert!(e
        .ready()
        .iter()
        .all(|r| r.status == STATUS_TIMEOUT && r.mad.len() == 24));
}

#[test]
fn a_class_zero_agent_gets_the_responses_to_its_requests() {
    let mut w = Wire::new();
    let any = w.a.register(&AgentSpec::new(0, 0)).unwrap();
    let srv =
        w.b.register(&AgentSpec::new(0x04, 1).methods(MethodMask::of(&[1])))
            .unwrap();
    let now = w.now;
    let mut req = vec![0u8; 256];
    req[..4].copy_from_slice(&[1, 0x04, 1, 1]);
    send(&mut w.a, now, any, &req, to_b(), 100, 0);
    w.pump();
    let r = w.b.pop_ready().unwrap();
    let mut resp = r.mad.clone();
    resp[3] = 0x81;
    send(&mut w.b, now, srv, &resp, r.addr, 0, 0);
    w.pump();
    assert_eq!(w.a.pop_ready().map(|r| (r.agent, r.status)), Some((any, 0)));
}

#[test]
fn overlapping_method_masks_and_unknown_flags_are_refused() {
    let mut e = Engine::new(LayerConfig::default(), "sim", 1);
    e.register(&server()).unwrap();
    let err = e
        .register(&AgentSpec::new(SA, 2).methods(MethodMask::of(&[SET])))
        .unwrap_err();
    assert!(err.to_string().contains("disjoint"), "{err}");
    e.register(&AgentSpec::new(SA, 2).methods(MethodMask::of(&[0x14])))
        .unwrap();
    e.register(&AgentSpec::new(SA, 1).methods(MethodMask::of(&[SET])))
        .unwrap();
    assert!(e.register(&AgentSpec::new(0x04, 1).flags(4)).is_err());
}

#[test]
fn hostile_packets_never_panic() {
    let mut e = Engine::new(LayerConfig::default(), "sim", 1);
    e.register(&server()).unwrap();
    e.register(&client()).unwrap();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let now = Instant::now();
    for i in 0..20_000 {
        let len = (next() % 300) as usize;
        let mut m: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        if m.len() > 40 && i % 2 == 0 {
            // Mostly-valid SA RMPP packets reach the deeper paths.
            m[1] = SA;
            m[2] = 2;
            m[3] = [GET_TABLE, GET_TABLE_RESP, SET][i % 3];
            m[24] = 1;
            m[26] |= 1;
            m[25] = (next() % 5) as u8;
            m[28..32].copy_from_slice(&((next() % 4) as u32).to_be_bytes());
        }
        e.on_packet(
            now + Duration::from_millis(i as u64),
            Packet {
                mad: m,
                addr: to_b(),
                qp: 1,
                status: (next() % 8 == 0) as u32 * 110,
            },
        );
        e.take_outbox();
        while e.pop_ready().is_some() {}
    }
    e.on_timer(now + Duration::from_secs(100));
    assert_eq!(e.transfers(), (0, 0));
}

/// A carrier that has no room for the first `refuse` packets (EAGAIN), then records every
/// packet sent and answers each request with its response.
#[derive(Debug)]
struct Congested {
    refuse: std::sync::Mutex<u32>,
    sent: std::sync::Mutex<Vec<Packet>>,
    inbox: std::sync::Mutex<std::collections::VecDeque<Packet>>,
    ready: crate::sys::EventFlag,
}

impl super::Carrier for Congested {
    fn ca_name(&self) -> &str {
        "congested0"
    }
    fn port_num(&self) -> u32 {
        1
    }
    fn ca(&self) -> crate::Result<crate::device::Ca> {
        Err(crate::Error::InvalidArgument("no CA".into()))
    }
    fn issm(&self) -> crate::Result<crate::transport::Issm> {
        Err(crate::Error::InvalidArgument("no issm".into()))
    }
    fn send(&self, p: &Packet) -> crate::Result<()> {
        let mut refuse = self.refuse.lock().unwrap();
        if *refuse > 0 {
            *refuse -= 1;
            return Err(crate::Error::Send {
                ca: "congested0".into(),
                port: 1,
                agent: 0,
                source: std::io::Error::from_raw_os_error(libc::EAGAIN),
            });
        }
        self.sent.lock().unwrap().push(p.clone());
        let mut resp = p.mad.clone();
        resp[3] |= 0x80;
        self.inbox.lock().unwrap().push_back(Packet {
            mad: resp,
            addr: p.addr,
            qp: p.qp,
            status: 0,
        });
        self.ready.raise();
        Ok(())
    }
    fn try_recv(&self) -> crate::Result<Option<Packet>> {
        let mut inbox = self.inbox.lock().unwrap();
        let p = inbox.pop_front();
        if inbox.is_empty() {
            self.ready.lower();
        }
        Ok(p)
    }
    fn raw_fd(&self) -> std::os::unix::io::RawFd {
        self.ready.raw()
    }
}

#[test]
fn a_carrier_without_room_is_back_pressure_not_a_failure() {
    let carrier = Congested {
        refuse: std::sync::Mutex::new(3),
        sent: std::sync::Mutex::new(Vec::new()),
        inbox: std::sync::Mutex::new(std::collections::VecDeque::new()),
        ready: crate::sys::EventFlag::new().unwrap(),
    };
    let layer = crate::Port::from_carrier(Box::new(carrier), LayerConfig::default()).unwrap();
    let agent = layer.register(&AgentSpec::new(0x04, 1)).unwrap();
    for tid in 0..5u32 {
        let mut req = vec![0u8; 256];
        req[..4].copy_from_slice(&[1, 0x04, 1, 1]);
        req[12..16].copy_from_slice(&tid.to_be_bytes());
        layer.send(agent, &req, &to_b(), 5000, 0).unwrap();
    }
    let mut tids = Vec::new();
    while tids.len() < 5 {
        let r = layer
            .recv_fit(Some(Duration::from_secs(5)), usize::MAX)
            .unwrap()
            .expect("every request answered");
        assert_eq!(r.status, 0);
        tids.push(u32::from_be_bytes(r.mad[12..16].try_into().unwrap()));
    }
    assert_eq!(
        tids,
        [0, 1, 2, 3, 4],
        "all sent, in order, after the refusals"
    );
}

impl super::Carrier for std::sync::Arc<Congested> {
    fn ca_name(&self) -> &str {
        (**self).ca_name()
    }
    fn port_num(&self) -> u32 {
        (**self).port_num()
    }
    fn ca(&self) -> crate::Result<crate::device::Ca> {
        (**self).ca()
    }
    fn issm(&self) -> crate::Result<crate::transport::Issm> {
        (**self).issm()
    }
    fn send(&self, p: &Packet) -> crate::Result<()> {
        (**self).send(p)
    }
    fn try_recv(&self) -> crate::Result<Option<Packet>> {
        (**self).try_recv()
    }
    fn raw_fd(&self) -> std::os::unix::io::RawFd {
        (**self).raw_fd()
    }
}

fn echo() -> std::sync::Arc<Congested> {
    std::sync::Arc::new(Congested {
        refuse: std::sync::Mutex::new(0),
        sent: std::sync::Mutex::new(Vec::new()),
        inbox: std::sync::Mutex::new(std::collections::VecDeque::new()),
        ready: crate::sys::EventFlag::new().unwrap(),
    })
}

fn get(tid: u32) -> Vec<u8> {
    let mut req = vec![0u8; 256];
    req[..4].copy_from_slice(&[1, 0x04, 1, 1]);
    req[12..16].copy_from_slice(&tid.to_be_bytes());
    req
}

/// Threads that send and receive at once share the reader's role and the carrying: every
/// request is carried once and every answer reaches the application once.
#[test]
fn many_threads_send_and_read_through_one_layer() {
    const THREADS: u32 = 8;
    const EACH: u32 = 300;
    let carrier = echo();
    let layer =
        crate::Port::from_carrier(Box::new(carrier.clone()), LayerConfig::default()).unwrap();
    let agent = layer.register(&AgentSpec::new(0x04, 1)).unwrap();
    let got = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (layer, got) = (&layer, &got);
            s.spawn(move || {
                for i in 0..EACH {
                    let req = get(t * EACH + i);
                    layer.send(agent, &req, &to_b(), 10_000, 0).unwrap();
                    // Some answers are read by another thread: take whatever comes.
                    if let Some(r) = layer.recv_fit(Some(Duration::from_millis(1)), 256).unwrap() {
                        got.lock().unwrap().push(r);
                    }
                }
            });
        }
    });
    let mut got = got.into_inner().unwrap();
    while got.len() < (THREADS * EACH) as usize {
        let r = layer
            .recv_fit(Some(Duration::from_secs(5)), 256)
            .unwrap()
            .expect("every request answered");
        got.push(r);
    }
    assert!(layer.recv_fit(Some(Duration::ZERO), 256).unwrap().is_none());
    let mut tids: Vec<u32> = got
        .iter()
        .map(|r| {
            assert_eq!(r.status, 0, "answered, not timed out");
            u32::from_be_bytes(r.mad[12..16].try_into().unwrap())
        })
        .collect();
    tids.sort_unstable();
    assert_eq!(tids, (0..THREADS * EACH).collect::<Vec<_>>());
    assert_eq!(
        carrier.sent.lock().unwrap().len(),
        (THREADS * EACH) as usize
    );
}

/// After the application stops reading, the progress thread takes the carrier back: a MAD
/// that arrives later raises the layer's descriptor with nobody inside `recv`.
#[test]
fn the_progress_thread_takes_the_carrier_back() {
    let carrier = echo();
    let layer =
        crate::Port::from_carrier(Box::new(carrier.clone()), LayerConfig::default()).unwrap();
    let client = layer.register(&AgentSpec::new(0x04, 1)).unwrap();
    let server = layer
        .register(&AgentSpec::new(0x04, 1).methods(MethodMask::of(&[1])))
        .unwrap();
    assert_ne!(client, server);
    // One transaction: this thread reads the carrier itself.
    layer.send(client, &get(7), &to_b(), 10_000, 0).unwrap();
    let r = layer
        .recv_fit(Some(Duration::from_secs(5)), 256)
        .unwrap()
        .unwrap();
    assert_eq!(r.mad[3], 0x81);
    // Then a request arrives from the fabric while nobody reads.
    std::thread::sleep(Duration::from_millis(1));
    carrier.inbox.lock().unwrap().push_back(Packet {
        mad: get(99),
        addr: to_b(),
        qp: 1,
        status: 0,
    });
    carrier.ready.raise();
    let readable =
        crate::sys::poll_in(std::os::unix::io::AsRawFd::as_raw_fd(&layer), 5000).unwrap();
    assert!(readable, "the progress thread delivered the late MAD");
    let r = layer.recv_fit(Some(Duration::ZERO), 256).unwrap().unwrap();
    assert_eq!(r.agent, server);
    assert_eq!(u32::from_be_bytes(r.mad[12..16].try_into().unwrap()), 99);
}

/// What an engine launches in one go (a window's worth of requests through the port's
/// driver) leaves in order, carried by the thread that submitted it, and every request ends.
#[test]
fn a_window_of_requests_leaves_in_order() {
    use crate::rpc::{Request, Rpc, Window};
    let carrier = echo();
    let port =
        crate::Port::from_carrier(Box::new(carrier.clone()), LayerConfig::default()).unwrap();
    let rpc = Rpc::with_window(port, Window::of(20));
    let sent_tids = || -> Vec<u32> {
        carrier
            .sent
            .lock()
            .unwrap()
            .iter()
            .map(|p| u32::from_be_bytes(p.mad[12..16].try_into().unwrap()))
            .collect()
    };
    for i in 0..20 {
        let r = Request::new(get(1000 + i), to_b()).timeout(Duration::from_secs(10));
        rpc.submit(r).unwrap();
    }
    let sent = sent_tids();
    assert_eq!(
        sent.len(),
        20,
        "carried by the submitting thread, before any read"
    );
    assert!(sent.windows(2).all(|w| w[0] < w[1]), "in order: {sent:?}");
    let mut answered = 0;
    while let Some(c) = rpc.next(Some(Duration::from_secs(5))).unwrap() {
        assert!(c.outcome.response().is_some(), "{:?}", c.outcome);
        answered += 1;
    }
    assert_eq!(answered, 20);
}

#[test]
fn the_bytes_held_are_bounded_too() {
    let cfg = LayerConfig {
        max_held: 100 * SEG,
        ..LayerConfig::default()
    };
    // A table larger than the budget is stopped with RESX and its request ends.
    let (mut w, _, ca) = table_exchange(1000 * SEG, |w| w.a = Engine::new(cfg, "simA", 1));
    let r = w.a.pop_ready().expect("the request is reported");
    assert_eq!((r.agent, r.status), (ca, STATUS_ABORTED));
    assert!(w
        .log
        .iter()
        .any(|(from_a, t, ..)| *from_a && *t == RmppType::Stop));
    assert_eq!((w.a.transfers(), w.b.transfers()), ((0, 0), (0, 0)));
    // Tables within it still arrive whole, one after the other: what was read is not held.
    for _ in 0..3 {
        let (mut w, sent, _) = table_exchange(60 * SEG, |w| w.a = Engine::new(cfg, "simA", 1));
        check_whole(&w.a.pop_ready().expect("the table"), &sent);
    }

    // The application's queue counts bytes: 10 MADs of 256 fill 2560 bytes.
    let mut e = perf_server(LayerConfig {
        max_held: 10 * 256,
        ..LayerConfig::default()
    });
    requests_arrive(&mut e, 100);
    assert_eq!((e.ready().len(), e.stats().dropped_queue_full), (10, 90));
    for _ in 0..4 {
        e.pop_ready().unwrap();
    }
    requests_arrive(&mut e, 100);
    assert_eq!((e.ready().len(), e.stats().dropped_queue_full), (10, 186));
}

/// A wire on which A (agent [`client`]) has sent B (agent [`server`], returned) a GetTable
/// with `tid`, `timeout_ms` and `retries`; the request as B got it.
fn get_table_at_b(tid: u64, timeout_ms: u32, retries: u32) -> (Wire, AgentId, Received) {
    let mut w = Wire::new();
    let ca = w.a.register(&client()).unwrap();
    let sb = w.b.register(&server()).unwrap();
    let now = w.now;
    let req = sa_mad(GET_TABLE, tid, 256, false);
    send(&mut w.a, now, ca, &req, to_b(), timeout_ms, retries);
    w.pump();
    let req = w.b.pop_ready().expect("B got the request");
    (w, sb, req)
}

/// A asks B for a 100-segment table with `timeout_ms` and `retries`; B's segments after the
/// third never arrive (B died in the middle). Returns the simulated time from the last
/// segment to A's report, the report's status and the RMPP packets A sent meanwhile.
fn silent_response(timeout_ms: u32, retries: u32) -> (Duration, u32, Vec<(RmppType, u32)>) {
    let (mut w, sb, req) = get_table_at_b(5, timeout_ms, retries);
    let now = w.now;
    w.fate = Box::new(|from_a, p, _| {
        usize::from(from_a || Rmpp::new_unchecked(&p.mad[..]).segment_number() <= 3)
    });
    let tid = Mad::new_unchecked(&req.mad[..]).tid();
    let resp = sa_mad(GET_TABLE_RESP, tid, 56 + 100 * SEG, true);
    send(&mut w.b, now, sb, &resp, req.addr, 0, 0);
    w.pump();
    assert_eq!(w.a.transfers().0, 1, "the reassembly started");
    w.b.unregister(sb).unwrap();
    w.log.clear();
    let start = w.now;
    while w.a.ready().is_empty() {
        assert!(w.now - start < Duration::from_secs(60), "never reported");
        w.advance(Duration::from_millis(10));
    }
    let status = w.a.pop_ready().unwrap().status;
    assert_eq!(w.a.transfers(), (0, 0), "the reassembly is freed");
    let sent = w.log.iter().filter(|l| l.0).map(|l| (l.1, l.2)).collect();
    (w.now - start, status, sent)
}

#[test]
fn a_response_that_goes_silent_ends_after_the_requests_own_budget() {
    for (timeout, retries) in [(1000, 0), (200, 3), (5000, 1)] {
        let (took, status, sent) = silent_response(timeout, retries);
        let budget = Duration::from_millis(u64::from(timeout) * u64::from(retries + 1));
        assert_eq!(status, STATUS_TIMEOUT, "{timeout} ms × {retries}");
        assert!(
            took >= budget && took <= budget + Duration::from_millis(20),
            "{timeout} ms × {} took {took:?}, not the budget {budget:?}",
            retries + 1
        );
        // One abort tells the sender to stop; nothing else went out (no resent request).
        assert_eq!(sent, [(RmppType::Abort, 0)], "{timeout} ms × {retries}");
    }
}

#[test]
fn a_slow_response_that_keeps_arriving_is_not_cut_short() {
    // Each segment arrives 900 ms after the one before, under a 1 s timeout: 20 segments
    // take 18 s, the response's silence never reaches a whole timeout.
    let mut w = Wire::new();
    let ca = w.a.register(&client()).unwrap();
    let now = w.now;
    send(
        &mut w.a,
        now,
        ca,
        &sa_mad(GET_TABLE, 7, 256, false),
        to_b(),
        1000,
        0,
    );
    let tid = Mad::new_unchecked(&w.a.take_outbox()[0].mad[..]).tid();
    let mut b = Engine::new(LayerConfig::default(), "simB", 1);
    let sb = b.register(&server()).unwrap();
    let resp = sa_mad(GET_TABLE_RESP, tid, 56 + 20 * SEG, true);
    // B sends to A at LID 1; its ACK timer is long enough that only A's ACKs move it on.
    send(
        &mut b,
        now,
        sb,
        &resp,
        MadAddr::new(1, 1, 0, MadAddr::DEFAULT_QKEY),
        60_000,
        0,
    );
    w.b = b;
    let mut t = w.now;
    for _ in 0..200 {
        // Deliver B's packets one at a time, 900 ms apart.
        let out = w.b.take_outbox();
        if out.is_empty() && w.a.ready().len() == 1 {
            break;
        }
        for p in out {
            t += Duration::from_millis(900);
            w.a.on_timer(t);
            w.now = t;
            w.deliver(false, p);
            for q in w.a.take_outbox() {
                w.deliver(true, q);
            }
        }
    }
    let got = w.a.pop_ready().expect("the whole response");
    assert_eq!(got.status, 0);
    assert_eq!(got.mad.len(), resp.len());
    assert!(t - now >= Duration::from_secs(17));
}

#[test]
fn a_vanished_receiver_draws_a_few_immediate_resends_then_the_ack_timer() {
    // B sends a 4,900-segment table to a receiver that is gone: ibsim hands every segment
    // back at once (status 110). The immediate resends stop after the bounce budget; the
    // ACK timer's retries end the send.
    let mut b = Engine::new(LayerConfig::default(), "simB", 1);
    let sb = b.register(&server()).unwrap();
    let now = Instant::now();
    let resp = sa_mad(GET_TABLE_RESP, 0x77, 56 + 4_900 * SEG, true);
    send(
        &mut b,
        now,
        sb,
        &resp,
        MadAddr::new(1, 1, 0, MadAddr::DEFAULT_QKEY),
        1000,
        3,
    );
    let mut t = now;
    let (mut sent, mut bounced_at_once) = (0usize, 0usize);
    let mut immediate = 0;
    while b.transfers().1 > 0 {
        assert!(t - now < Duration::from_secs(30), "the send never ended");
        let mut out = b.take_outbox();
        while !out.is_empty() {
            sent += out.len();
            for mut p in out {
                p.status = 110;
                p.addr = MadAddr::new(2, 1, 0, MadAddr::DEFAULT_QKEY);
                b.on_packet(t, p);
                bounced_at_once += 1;
            }
            out = b.take_outbox();
            immediate += out.len();
        }
        t += Duration::from_millis(100);
        b.on_timer(t);
    }
    let cfg = LayerConfig::default();
    assert_eq!(immediate, cfg.bounce_budget as usize, "immediate resends");
    // First segment, the budget, then one probe per retry (the window never opened).
    assert_eq!(
        sent,
        1 + cfg.bounce_budget as usize + 3,
        "{bounced_at_once} bounced"
    );
    let r = b.pop_ready().expect("a report");
    assert_eq!(r.status, STATUS_TIMEOUT);
    assert!(
        t - now >= Duration::from_secs(4),
        "four ACK timeouts of 1 s"
    );
}

#[test]
fn a_lossy_path_still_resends_bounced_segments_at_once() {
    // Every tenth packet B sends is bounced back to it (ibsim's answer to a loss): the
    // transfer completes without waiting for a single ACK timeout, the budget renewed by
    // each ACK.
    let (mut w, sb, req) = get_table_at_b(9, 1000, 3);
    let now = w.now;
    let tid = Mad::new_unchecked(&req.mad[..]).tid();
    let resp = sa_mad(GET_TABLE_RESP, tid, 56 + 2_000 * SEG, true);
    send(&mut w.b, now, sb, &resp, req.addr, 0, 3);
    let mut n = 0usize;
    loop {
        let out = w.b.take_outbox();
        if out.is_empty() {
            break;
        }
        for p in out {
            n += 1;
            if n % 10 == 0 {
                let mut back = p.clone();
                back.status = 110;
                w.b.on_packet(now, back);
            } else {
                w.deliver(false, p);
                for q in w.a.take_outbox() {
                    w.deliver(true, q);
                }
            }
        }
    }
    let got = w.a.pop_ready().expect("delivered without any timer");
    check_whole(&got, &resp);
    assert_eq!(w.b.stats().retransmissions, 0, "no ACK timeout fired");
}

#[test]
fn the_same_script_gives_the_same_outbox() {
    // Fifty requests due at the same instant, in two engines (each map hashes differently):
    // the resends leave in the same order, byte for byte.
    let run = || {
        let mut e = Engine::new(LayerConfig::default(), "simA", 1);
        let a = e.register(&AgentSpec::new(0x04, 1)).unwrap();
        let now = Instant::now();
        for tid in 0..50u64 {
            let mut m = vec![0u8; 256];
            m[..4].copy_from_slice(&[1, 0x04, 1, 0x01]);
            Mad::new_unchecked(&mut m[..]).set_tid(tid * 7919 % 1000);
            send(&mut e, now, a, &m, to_b(), 100, 2);
        }
        let mut out = e.take_outbox();
        for step in 1..=4 {
            e.on_timer(now + Duration::from_millis(100 * step));
            out.extend(e.take_outbox());
        }
        let reports: Vec<_> = std::iter::from_fn(|| e.pop_ready())
            .map(|r| r.mad)
            .collect();
        (out, reports)
    };
    let (out, reports) = run();
    assert_eq!(out.len(), 150, "50 requests, each resent twice");
    assert_eq!(reports.len(), 50);
    for _ in 0..5 {
        assert_eq!(run(), (out.clone(), reports.clone()));
    }
}
