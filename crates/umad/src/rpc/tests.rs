//! The engine over the in-memory fake transport ([`crate::fake`]), which counts what is in
//! flight independently of the engine: windows, completion of every request under loss,
//! many threads, blocking and async agreeing.

use std::collections::HashSet;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use super::*;
use crate::fake::{Behaviour, Fake, Loss, GET};

fn engine(b: Behaviour, window: Window) -> (Rpc, Arc<Fake>) {
    let fake = Fake::new(b);
    let port = Port::from_transport(Box::new(fake.clone()));
    (Rpc::with_window(port, window), fake)
}

/// A LID-routed-looking Get to `lid` whose payload names `(who, i)`.
fn request(lid: u16, who: u32, i: u32) -> Request {
    let mut m = vec![0u8; 256];
    m[..4].copy_from_slice(&[1, 0x01, 1, GET]);
    m[64..68].copy_from_slice(&who.to_be_bytes());
    m[68..72].copy_from_slice(&i.to_be_bytes());
    Request::new(m, MadAddr::smi(lid))
        .timeout(Duration::from_millis(50))
        .retries(1)
}

/// Checks that a completion answers its own request (same payload, same TID).
fn own_response(c: &Completion) -> bool {
    match &c.outcome {
        Outcome::Response(r) => {
            assert_eq!(
                r.mad[64..72],
                c.request.mad[64..72],
                "someone else's payload"
            );
            assert_eq!(r.mad[12..16], c.request.mad[12..16], "someone else's TID");
            true
        }
        Outcome::Timeout => false,
        other => panic!("unexpected outcome {other:?}"),
    }
}

fn drain(rpc: &Rpc) -> Vec<Completion> {
    let mut out = Vec::new();
    while let Some(c) = rpc.next(Some(Duration::from_secs(20))).unwrap() {
        out.push(c);
    }
    out
}

#[test]
fn window_is_honoured_in_all_and_per_destination() {
    let b = Behaviour {
        delay: Duration::from_millis(2),
        jitter: Duration::from_millis(1),
        ..Behaviour::default()
    };
    let window = Window {
        total: 8,
        per_destination: 3,
    };
    let (rpc, fake) = engine(b, window);
    let mut tickets = HashSet::new();
    for i in 0..400 {
        tickets.insert(rpc.submit(request(1 + (i % 4) as u16, 0, i)).unwrap());
    }
    let done = drain(&rpc);
    assert_eq!(done.len(), 400);
    assert!(done.iter().all(own_response));
    let seen: HashSet<_> = done.iter().map(|c| c.ticket).collect();
    assert_eq!(seen, tickets, "every ticket exactly once");
    let st = fake.state();
    assert!(st.max_outstanding <= 8, "{} in flight", st.max_outstanding);
    assert!(
        st.max_outstanding_to <= 3,
        "{} to one LID",
        st.max_outstanding_to
    );
    // The window was used, not just respected: 4 destinations × 3 > 8.
    assert_eq!(st.max_outstanding, 8);
    assert_eq!(st.max_outstanding_to, 3);
    drop(st);
    let s = rpc.stats();
    assert_eq!((s.sent, s.responses, s.timeouts), (400, 400, 0));
    assert_eq!(rpc.outstanding(), 0);
    assert!(rpc.next(Some(Duration::ZERO)).unwrap().is_none());
}

#[test]
fn one_destination_waits_while_others_go() {
    // Destination 1 gets 50 requests, destination 2 one: it must not wait behind all 50.
    let b = Behaviour {
        delay: Duration::from_millis(5),
        ..Behaviour::default()
    };
    let (rpc, _fake) = engine(
        b,
        Window {
            total: 4,
            per_destination: 1,
        },
    );
    for i in 0..50 {
        rpc.submit(request(1, 0, i)).unwrap();
    }
    let lone = rpc.submit(request(2, 0, 99)).unwrap();
    let order: Vec<Ticket> = drain(&rpc).iter().map(|c| c.ticket).collect();
    let pos = order.iter().position(|t| *t == lone).unwrap();
    assert!(pos <= 2, "the lone request finished {pos}th");
}

#[test]
fn every_request_ends_under_loss() {
    for loss in [
        Loss::Report,
        Loss::Silent,
        Loss::Late(Duration::from_millis(800)),
    ] {
        let b = Behaviour {
            delay: Duration::from_millis(1),
            lose_every: 5,
            loss,
            ..Behaviour::default()
        };
        let (rpc, _fake) = engine(b, Window::of(16));
        for i in 0..100 {
            rpc.submit(request(1, 0, i)).unwrap();
        }
        let done = drain(&rpc);
        assert_eq!(done.len(), 100, "{loss:?}");
        let answered = done.iter().filter(|c| own_response(c)).count();
        assert_eq!(answered, 80, "{loss:?}: every 5th is lost");
        let s = rpc.stats();
        assert_eq!(s.timeouts, 20, "{loss:?}");
        if loss != Loss::Report {
            // Nobody reported these: the user-space deadline ended them.
            assert_eq!(s.deadline_expired, 20, "{loss:?}");
        }
    }
}

#[test]
fn late_answers_are_strays_not_misdelivered() {
    let b = Behaviour {
        lose_every: 2,
        loss: Loss::Late(Duration::from_millis(700)),
        ..Behaviour::default()
    };
    let (rpc, _fake) = engine(b, Window::of(4));
    for i in 0..10 {
        rpc.submit(request(1, 0, i)).unwrap();
    }
    let done = drain(&rpc);
    assert_eq!(done.iter().filter(|c| own_response(c)).count(), 5);
    // The late answers arrive while these run, and must not be taken for theirs.
    for i in 10..20 {
        rpc.submit(request(1, 1, i).timeout(Duration::from_millis(400)))
            .unwrap();
    }
    let done = drain(&rpc);
    assert_eq!(done.len(), 10);
    done.iter().for_each(|c| {
        own_response(c);
    });
    assert!(rpc.stats().strays >= 1, "{:?}", rpc.stats());
}

#[test]
fn many_threads_call_and_submit_at_once() {
    let b = Behaviour {
        delay: Duration::from_millis(1),
        jitter: Duration::from_millis(1),
        ..Behaviour::default()
    };
    let (rpc, fake) = engine(b, Window::of(6));
    let callers: Vec<_> = (0..6u32)
        .map(|who| {
            let rpc = rpc.clone();
            thread::spawn(move || {
                for i in 0..60 {
                    let c = rpc.call(request(1 + (who % 3) as u16, who, i)).unwrap();
                    assert!(own_response(&c));
                    assert_eq!(c.request.mad[64..68], who.to_be_bytes());
                }
            })
        })
        .collect();
    // Meanwhile a pipelined user on the same engine gets only its own.
    for i in 0..200 {
        rpc.submit(request(4, 100, i)).unwrap();
    }
    let done = drain(&rpc);
    assert_eq!(done.len(), 200);
    for c in &done {
        assert!(own_response(c));
        assert_eq!(c.request.mad[64..68], 100u32.to_be_bytes());
    }
    for t in callers {
        t.join().unwrap();
    }
    assert!(fake.state().max_outstanding <= 6);
    assert_eq!(rpc.stats().responses, 200 + 6 * 60);
}

#[test]
fn run_all_keeps_submission_order() {
    let b = Behaviour {
        delay: Duration::from_millis(1),
        jitter: Duration::from_millis(3),
        ..Behaviour::default()
    };
    let (rpc, _fake) = engine(b, Window::DEFAULT);
    let done = rpc.run_all((0..64).map(|i| request(1, 7, i))).unwrap();
    for (i, c) in done.iter().enumerate() {
        assert!(own_response(c));
        assert_eq!(c.request.mad[68..72], (i as u32).to_be_bytes());
    }
}

#[test]
fn a_request_shorter_than_a_header_is_refused() {
    let (rpc, fake) = engine(Behaviour::default(), Window::DEFAULT);
    let err = rpc
        .submit(Request::new(vec![1u8; 20], MadAddr::smi(1)))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("shorter than the 24-byte MAD header"),
        "{err}"
    );
    assert_eq!(fake.sent(), 0);
}

#[test]
fn a_timeout_is_a_typed_error() {
    let b = Behaviour {
        lose_every: 1,
        loss: Loss::Report,
        ..Behaviour::default()
    };
    let (rpc, _fake) = engine(b, Window::DEFAULT);
    let c = rpc.call(request(9, 0, 0)).unwrap();
    assert!(matches!(c.outcome, Outcome::Timeout));
    let err = c.into_response(rpc.port()).unwrap_err();
    assert!(
        matches!(err, Error::TimedOut { attempts: 2, .. }),
        "{err:?}"
    );
    assert_eq!(err.errno(), libc::ETIMEDOUT);
    assert!(err.to_string().contains("to LID 9"), "{err}");
}

#[cfg(feature = "async")]
mod async_api {
    use super::*;
    use crate::rpc::block_on::block_on;

    #[test]
    fn async_and_blocking_give_the_same_results() {
        let b = Behaviour {
            delay: Duration::from_millis(1),
            jitter: Duration::from_millis(2),
            lose_every: 7,
            loss: Loss::Silent,
            ..Behaviour::default()
        };
        let (rpc, _fake) = engine(b, Window::of(8));
        let futures: Vec<_> = (0..50)
            .map(|i| rpc.call_async(request(1, 3, i)).unwrap())
            .collect();
        let results: Vec<_> = futures.into_iter().map(|f| block_on(f).unwrap()).collect();
        let blocking = rpc.run_all((50..100).map(|i| request(1, 3, i))).unwrap();
        let kinds = |v: &[Completion]| v.iter().map(own_response).collect::<Vec<bool>>();
        assert_eq!(results.len(), 50);
        // The fake loses every 7th request sent; both halves see the same pattern shifted by
        // 50 sends (50 = 7 × 7 + 1).
        let a = kinds(&results);
        let b = kinds(&blocking);
        assert_eq!(a.iter().filter(|x| !**x).count(), 7);
        assert_eq!(b.iter().filter(|x| !**x).count(), 7);
        for (i, c) in results.iter().enumerate() {
            assert_eq!(c.request.mad[68..72], (i as u32).to_be_bytes());
        }
    }
}

#[test]
fn sessions_have_their_own_completion_queues() {
    let b = Behaviour {
        delay: Duration::from_millis(1),
        jitter: Duration::from_millis(2),
        ..Behaviour::default()
    };
    let (rpc, fake) = engine(b, Window::of(8));
    let users: Vec<_> = (0..4u32)
        .map(|who| {
            let mine = rpc.session();
            thread::spawn(move || {
                for i in 0..100 {
                    mine.submit(request(1 + who as u16, who, i)).unwrap();
                }
                let done = drain(&mine);
                assert_eq!(done.len(), 100, "session {who}");
                for c in &done {
                    assert!(own_response(c));
                    assert_eq!(
                        c.request.mad[64..68],
                        who.to_be_bytes(),
                        "another session's"
                    );
                }
                assert_eq!(mine.outstanding(), 0);
            })
        })
        .collect();
    // A session dropped with requests in flight takes its completions with it.
    let gone = rpc.session();
    for i in 0..20 {
        gone.submit(request(9, 99, i)).unwrap();
    }
    drop(gone);
    for u in users {
        u.join().unwrap();
    }
    assert_eq!(rpc.outstanding(), 0);
    assert!(rpc
        .next(Some(Duration::from_millis(200)))
        .unwrap()
        .is_none());
    assert!(fake.state().max_outstanding <= 8);
}

#[test]
fn deadlines_of_landed_requests_do_not_pile_up_behind_a_live_one() {
    // A request nobody answers (the fake ignores MADs with a response method) keeps the
    // earliest deadline on top of the heap; 2,000 answered requests with later deadlines
    // land meanwhile. Their entries must not pile up behind it.
    let (rpc, _fake) = engine(Behaviour::default(), Window::of(8));
    let mut ignored = request(1, 0, 0).timeout(Duration::from_secs(30)).retries(0);
    ignored.mad[3] = 0x81;
    rpc.submit(ignored).unwrap();
    for i in 1..=2000 {
        let r = request(2, 0, i).timeout(Duration::from_secs(60)).retries(0);
        rpc.submit(r).unwrap();
    }
    for _ in 0..2000 {
        let c = rpc
            .next(Some(Duration::from_secs(20)))
            .unwrap()
            .expect("a completion");
        assert!(own_response(&c), "{:?}", c.outcome);
    }
    let (flights, entries) = rpc.core(|c| (c.in_flight(), c.deadline_entries())).unwrap();
    assert_eq!(flights, 1, "only the ignored request is in flight");
    assert!(
        entries <= 2 * 8 + 64 + 1,
        "{entries} deadline entries for 1 flight"
    );
}

#[test]
fn the_observer_sees_every_mad_sent_and_read() {
    let (rpc, _fake) = engine(Behaviour::default(), Window::DEFAULT);
    /// (sending, the MAD, the LID).
    type Seen = Vec<(bool, Vec<u8>, u16)>;
    let seen: Arc<std::sync::Mutex<Seen>> = Arc::default();
    let log = seen.clone();
    rpc.set_observer(Some(Arc::new(move |e: &MadEvent<'_>| {
        let entry = match *e {
            MadEvent::Sending { mad, addr } => (true, mad.to_vec(), addr.lid),
            MadEvent::Received { mad, addr, status } => {
                assert_eq!(status, 0);
                (false, mad.to_vec(), addr.lid)
            }
        };
        log.lock().unwrap().push(entry);
    })));
    let c = rpc.call(request(7, 1, 2)).unwrap();
    assert!(own_response(&c));
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2, "one send, one receive");
        assert!(seen[0].0 && !seen[1].0);
        // The request as sent, with the engine's TID.
        assert_eq!(seen[0].1, c.request.mad);
        assert_eq!(seen[0].2, 7);
        assert_eq!(&seen[1].1, &c.outcome.response().unwrap().mad);
    }
    rpc.set_observer(None);
    assert!(own_response(&rpc.call(request(7, 1, 3)).unwrap()));
    assert_eq!(
        seen.lock().unwrap().len(),
        2,
        "removed observers see nothing"
    );
}

/// The engine's state machine driven by a script on a simulated clock: what it sends (the
/// outbox, byte for byte, with when) and how each request ends.
fn replay_script() -> (Vec<u8>, Vec<(u64, &'static str)>, RpcStats) {
    use super::core::{Core, Outbox};
    const AGENT: AgentId = 7;
    let t0 = std::time::Instant::now();
    let at = |ms: u64| t0 + Duration::from_millis(ms);
    let window = Window {
        total: 4,
        per_destination: 2,
    };
    let mut core = Core::new(5, window, Duration::from_millis(500), "sim", 1);
    core.agents.insert((0x01, 1), AGENT);
    let mut out = Outbox::default();
    let mut wire = Vec::new();
    // In flight on the simulated wire: (agent, MAD, LID), oldest first.
    let mut sent: Vec<(u32, Vec<u8>, u16)> = Vec::new();
    let mut carry = |out: &mut Outbox, ms: u64, sent: &mut Vec<(u32, Vec<u8>, u16)>| {
        for (_, o) in out.iter() {
            wire.extend(ms.to_be_bytes());
            wire.extend(o.agent.to_be_bytes());
            wire.extend(o.addr.lid.to_be_bytes());
            wire.extend(o.timeout_ms.to_be_bytes());
            wire.extend(o.retries.to_be_bytes());
            wire.extend_from_slice(o.mad);
            sent.push((o.agent, o.mad.to_vec(), o.addr.lid));
        }
        out.clear();
    };
    let answer = |(agent, mad, lid): &(u32, Vec<u8>, u16), status: u32| {
        let mut mad = mad.clone();
        if status == 0 {
            mad[3] |= 0x80;
        }
        crate::Received {
            agent: *agent,
            status,
            addr: MadAddr::smi(*lid),
            mad,
        }
    };
    // Ten requests to three LIDs: four fit the window, two per LID.
    for i in 0..10 {
        let r = request(1 + (i % 3) as u16, 9, i);
        core.submit(at(0), r, AGENT, Waiter::Next(0), &mut out);
    }
    carry(&mut out, 0, &mut sent);
    assert_eq!(sent.len(), 4, "the window's total");
    // Two answers at 10 ms make room for two more.
    let first = std::mem::take(&mut sent);
    core.on_received(at(10), answer(&first[0], 0), &mut out);
    core.on_received(at(10), answer(&first[2], 0), &mut out);
    // A second copy of an answer is a stray.
    core.on_received(at(10), answer(&first[0], 0), &mut out);
    carry(&mut out, 10, &mut sent);
    assert_eq!(sent.len(), 2);
    // At 605 ms the two unanswered requests of 0 ms are past their budget
    // (50 ms × 2 + 500 ms), those of 10 ms are not.
    assert_eq!(core.on_timer(at(599), &mut out), Some(at(600)));
    let next = core.on_timer(at(605), &mut out);
    assert_eq!(next, Some(at(610)));
    carry(&mut out, 605, &mut sent);
    assert_eq!(sent.len(), 4, "two launched in place of the expired ones");
    // From then on the transport reports the oldest one as timed out and answers the rest.
    let mut ms = 605;
    let mut reported = false;
    while core.in_flight() > 0 {
        ms += 1;
        let batch = std::mem::take(&mut sent);
        for (i, s) in batch.iter().enumerate() {
            let status = if i == 0 && !reported {
                reported = true;
                crate::transport::STATUS_TIMEOUT
            } else {
                0
            };
            core.on_received(at(ms), answer(s, status), &mut out);
        }
        carry(&mut out, ms, &mut sent);
    }
    let done = core
        .queues
        .get_mut(&0)
        .map(|q| std::mem::take(&mut q.done))
        .unwrap_or_default();
    let ends = done
        .iter()
        .map(|c| {
            let kind = match c.outcome {
                Outcome::Response(_) => "response",
                Outcome::Timeout => "timeout",
                _ => "other",
            };
            (c.ticket.0, kind)
        })
        .collect();
    (wire, ends, core.stats)
}

#[test]
fn the_state_machine_replays_byte_for_byte() {
    let (wire, ends, stats) = replay_script();
    let (wire2, ends2, stats2) = replay_script();
    assert_eq!(
        wire, wire2,
        "the same script sends the same bytes at the same times"
    );
    assert_eq!(ends, ends2);
    assert_eq!(stats, stats2);
    assert_eq!(ends.len(), 10, "every request ends once");
    let mut tickets: Vec<_> = ends.iter().map(|e| e.0).collect();
    tickets.sort_unstable();
    assert_eq!(tickets, (0..10).collect::<Vec<_>>());
    assert_eq!(ends.iter().filter(|e| e.1 == "timeout").count(), 3);
    assert_eq!(stats.deadline_expired, 2);
    assert_eq!(stats.strays, 1);
    assert_eq!(stats.sent, 10);
    assert!(stats.max_in_flight <= 4 && stats.max_in_flight_per_destination <= 2);
    // 10 MADs of 256 bytes, each with 22 bytes of when/agent/LID/timeout/retries.
    assert_eq!(wire.len(), 10 * (256 + 22));
}
