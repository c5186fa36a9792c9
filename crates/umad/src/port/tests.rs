//! Unit tests for [`Port`]'s sharing between threads, over an in-memory [`Transport`] that
//! answers requests after a delay, loses some (with or without a timeout report), and injects
//! unsolicited MADs.

use super::*;
use crate::fake::*;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

fn port_over(b: Behaviour) -> (Port, Arc<Fake>) {
    let fake = Fake::new(b);
    (Port::from_transport(Box::new(fake.clone())), fake)
}

/// A Get whose TID is `tid` and whose payload names `(thread, i)`.
fn request(tid: u32, thread: u32, i: u32) -> Vec<u8> {
    let mut m = vec![0u8; 256];
    m[..4].copy_from_slice(&[1, CLASS, 1, GET]);
    m[12..16].copy_from_slice(&tid.to_be_bytes());
    m[64..68].copy_from_slice(&thread.to_be_bytes());
    m[68..72].copy_from_slice(&i.to_be_bytes());
    m
}

fn tid_of(r: &Received) -> u32 {
    tid_low(&r.mad).unwrap()
}

fn hi_of(r: &Received) -> u32 {
    u32::from_be_bytes(r.mad[8..12].try_into().unwrap())
}

/// Checks that `r` answers `req` sent by `agent`; `true` for a response, `false` for the
/// transport's timeout report. Panics on anything else (a misrouted MAD, the backstop).
fn answers(r: &Received, agent: AgentId, req: &[u8]) -> bool {
    assert_eq!(r.agent, agent, "delivered to the wrong agent");
    assert_eq!(tid_of(r), tid_low(req).unwrap(), "someone else's TID");
    // The requests leave the upper half 0; the transport fills it in (the backstop does not).
    assert_ne!(
        hi_of(r),
        0,
        "not from the transport (the backstop gave up?)"
    );
    if r.is_timeout() {
        // The kernel's report: the request's common header only.
        assert_eq!(
            r.mad.len(),
            REPORT_LEN,
            "a timeout report is the common header"
        );
        assert_eq!(r.mad[3], GET, "a timeout report holds the request");
        false
    } else {
        assert_eq!(r.mad[64..72], req[64..72], "someone else's payload");
        assert_eq!(r.mad[3], GET | 0x80);
        true
    }
}

fn register(port: &Port) -> AgentId {
    port.register(&AgentSpec::new(CLASS, 1)).unwrap()
}

/// Takes everything queued now.
fn drain(port: &Port) -> Vec<Received> {
    std::iter::from_fn(|| port.recv(Some(Duration::ZERO)).unwrap()).collect()
}

#[test]
fn eight_threads_2000_transacts_each_get_exactly_their_own_answers() {
    const THREADS: u32 = 8;
    const EACH: u32 = 2000;
    const LOSE_EVERY: u64 = 41;
    const UNSOLICITED_EVERY: u64 = 97;
    let (port, fake) = port_over(Behaviour {
        jitter: Duration::from_micros(40),
        lose_every: LOSE_EVERY,
        unsolicited_every: UNSOLICITED_EVERY,
        ..Behaviour::default()
    });
    let agents = [register(&port), register(&port)];
    let started = Instant::now();
    let (responses, reports) = thread::scope(|s| {
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let port = &port;
                let agent = agents[t as usize % 2];
                s.spawn(move || {
                    let (mut responses, mut reports) = (0u32, 0u32);
                    for i in 0..EACH {
                        let req = request((t << 24) | i, t, i);
                        let r = port
                            .transact(agent, &req, &MadAddr::directed_route(), 20, 0)
                            .unwrap();
                        if answers(&r, agent, &req) {
                            responses += 1;
                        } else {
                            reports += 1;
                        }
                    }
                    (responses, reports)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().unwrap())
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    });
    let total = u64::from(THREADS * EACH);
    assert_eq!(u64::from(responses + reports), total, "lost transactions");
    assert_eq!(
        u64::from(reports),
        total / LOSE_EVERY,
        "reports of the lost requests"
    );
    assert_eq!(fake.sent(), total);
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        fake.max_readers.load(Ordering::SeqCst),
        1,
        "one reader at a time"
    );
    // The unsolicited MADs are all waiting for recv, in order, and nothing else is.
    let rest = drain(&port);
    assert_eq!(rest.len() as u64, total / UNSOLICITED_EVERY);
    for (k, r) in rest.iter().enumerate() {
        assert_eq!(
            tid_of(r),
            UNSOLICITED + k as u32,
            "unsolicited MADs out of order"
        );
    }
    assert_eq!(port.dropped(), 0);
}

#[test]
fn transact_beside_a_recv_loop_each_gets_only_its_own() {
    const THREADS: u32 = 4;
    const EACH: u32 = 1000;
    const UNSOLICITED_EVERY: u64 = 7;
    let (port, _fake) = port_over(Behaviour {
        delay: Duration::from_micros(100),
        jitter: Duration::from_micros(50),
        unsolicited_every: UNSOLICITED_EVERY,
        ..Behaviour::default()
    });
    let agent = register(&port);
    let done = AtomicBool::new(false);
    let seen = thread::scope(|s| {
        let receiver = s.spawn(|| {
            let mut seen = Vec::new();
            loop {
                let finished = done.load(Ordering::SeqCst);
                // Alternate poll and recv: neither may take a transaction's answer.
                if port.poll(Some(Duration::from_millis(5))).unwrap() {
                    let r = port
                        .recv(Some(Duration::ZERO))
                        .unwrap()
                        .expect("poll said so");
                    assert!(
                        tid_of(&r) >= UNSOLICITED,
                        "recv took a transaction's answer"
                    );
                    seen.push(tid_of(&r));
                }
                match port.recv(Some(Duration::from_millis(5))).unwrap() {
                    Some(r) => {
                        assert!(
                            tid_of(&r) >= UNSOLICITED,
                            "recv took a transaction's answer"
                        );
                        seen.push(tid_of(&r));
                    }
                    None if finished => return seen,
                    None => {}
                }
            }
        });
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let port = &port;
                s.spawn(move || {
                    for i in 0..EACH {
                        let req = request((t << 24) | i, t, i);
                        let r = port
                            .transact(agent, &req, &MadAddr::directed_route(), 1000, 0)
                            .unwrap();
                        assert!(answers(&r, agent, &req), "spurious timeout");
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        done.store(true, Ordering::SeqCst);
        receiver.join().unwrap()
    });
    let expected = u64::from(THREADS * EACH) / UNSOLICITED_EVERY;
    assert_eq!(
        seen.len() as u64,
        expected,
        "unsolicited MADs lost or duplicated"
    );
    let unique: HashSet<_> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len());
    assert_eq!(port.dropped(), 0);
}

#[test]
fn the_receive_queue_is_bounded_when_nobody_receives() {
    let (port, fake) = port_over(Behaviour::default());
    let agent = register(&port);
    const N: usize = 10_000;
    fake.inject(agent, N, 256);
    // A transaction reads everything that came before its response.
    let req = request(1, 0, 0);
    assert!(answers(
        &port
            .transact(agent, &req, &MadAddr::directed_route(), 100, 0)
            .unwrap(),
        agent,
        &req
    ));
    assert_eq!(port.dropped(), (N - RECV_QUEUE_MADS) as u64);
    let rest = drain(&port);
    assert_eq!(rest.len(), RECV_QUEUE_MADS, "the newest ones are kept");
    assert_eq!(tid_of(&rest[0]), UNSOLICITED + (N - RECV_QUEUE_MADS) as u32);
    assert_eq!(tid_of(rest.last().unwrap()), UNSOLICITED + N as u32 - 1);

    // The byte bound: three 7 MiB messages do not fit in 16 MiB; the oldest goes.
    fake.inject(agent, 3, 7 << 20);
    let req = request(2, 0, 0);
    port.transact(agent, &req, &MadAddr::directed_route(), 100, 0)
        .unwrap();
    assert_eq!(port.dropped(), (N - RECV_QUEUE_MADS) as u64 + 1);
    let rest = drain(&port);
    assert_eq!(rest.len(), 2);
    assert_eq!(tid_of(&rest[0]), UNSOLICITED + N as u32 + 1);
}

#[test]
fn unregister_discards_that_agents_queued_mads_and_ends_its_transactions() {
    let (port, fake) = port_over(Behaviour {
        lose_every: 1,
        loss: Loss::Silent,
        ..Behaviour::default()
    });
    let (a, b, c) = (register(&port), register(&port), register(&port));
    fake.inject(a, 5, 256);
    fake.inject(b, 5, 256);
    let waiter = thread::scope(|s| {
        let waiter = s.spawn(|| {
            let started = Instant::now();
            let r = port.transact(c, &request(9, 0, 0), &MadAddr::directed_route(), 10_000, 0);
            (r, started.elapsed())
        });
        // The transaction reads all ten into the port's queue (the fake loses its request).
        while fake.sent() == 0 || !fake.state().due.is_empty() {
            thread::sleep(Duration::from_millis(5));
        }
        thread::sleep(Duration::from_millis(20));
        port.unregister(a).unwrap();
        port.unregister(c).unwrap();
        waiter.join().unwrap()
    });
    let (r, took) = waiter;
    assert!(
        matches!(r, Err(Error::BadAgent { agent, .. }) if agent == c),
        "{r:?}"
    );
    assert!(took < Duration::from_secs(2), "{took:?}");
    let rest = drain(&port);
    assert_eq!(rest.len(), 5);
    assert!(rest.iter().all(|r| r.agent == b), "{rest:?}");
    assert_eq!(port.dropped(), 0);
}

#[test]
fn the_same_agent_and_tid_twice_at_once_is_refused_at_once() {
    let (port, fake) = port_over(Behaviour {
        delay: Duration::from_millis(300),
        ..Behaviour::default()
    });
    let (a, b) = (register(&port), register(&port));
    thread::scope(|s| {
        let first =
            s.spawn(|| port.transact(a, &request(5, 1, 0), &MadAddr::directed_route(), 2000, 0));
        let other_agent =
            s.spawn(|| port.transact(b, &request(5, 2, 0), &MadAddr::directed_route(), 2000, 0));
        while fake.sent() < 2 {
            thread::sleep(Duration::from_millis(1));
        }
        let started = Instant::now();
        let e = port
            .transact(a, &request(5, 3, 0), &MadAddr::directed_route(), 2000, 0)
            .unwrap_err();
        assert!(started.elapsed() < Duration::from_millis(100));
        assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
        let text = e.to_string();
        assert!(
            text.contains("fake0 port 1")
                && text.contains(&format!("agent {a}"))
                && text.contains("0x00000005"),
            "{text}"
        );
        assert_eq!(fake.sent(), 2, "the refused request was not sent");
        assert!(answers(
            &first.join().unwrap().unwrap(),
            a,
            &request(5, 1, 0)
        ));
        assert!(answers(
            &other_agent.join().unwrap().unwrap(),
            b,
            &request(5, 2, 0)
        ));
    });
    // Once the first one is over, the key is free again.
    let req = request(5, 4, 0);
    assert!(answers(
        &port
            .transact(a, &req, &MadAddr::directed_route(), 2000, 0)
            .unwrap(),
        a,
        &req
    ));
}

#[test]
fn a_silently_lost_request_ends_by_the_backstop_and_its_late_answer_is_discarded() {
    let (port, _fake) = port_over(Behaviour {
        lose_every: 1,
        loss: Loss::Late(Duration::from_millis(900)),
        ..Behaviour::default()
    });
    let agent = register(&port);
    let req = request(77, 0, 0);
    let started = Instant::now();
    let r = port
        .transact(agent, &req, &MadAddr::directed_route(), 10, 0)
        .unwrap();
    let took = started.elapsed();
    assert!(r.is_timeout());
    assert_eq!(
        r.mad,
        req[..crate::fake::REPORT_LEN],
        "the backstop's report holds the request's common header, as the kernel's"
    );
    assert!(
        took >= Duration::from_millis(10) + Duration::from_millis(500)
            && took < Duration::from_millis(890),
        "{took:?}"
    );
    // The late response is not handed to recv.
    assert!(port.recv(Some(Duration::from_secs(1))).unwrap().is_none());
    assert_eq!(port.dropped(), 1);
}

#[test]
fn recv_fit_leaves_a_longer_mad_queued() {
    let (port, fake) = port_over(Behaviour::default());
    let agent = register(&port);
    fake.inject(agent, 1, 300);
    for _ in 0..2 {
        let e = port.recv_fit(Some(Duration::ZERO), 256).unwrap_err();
        assert!(
            matches!(
                e,
                Error::TooLong {
                    needed: 300,
                    capacity: 256,
                    ..
                }
            ),
            "{e:?}"
        );
        assert_eq!(e.errno(), libc::ENOSPC);
    }
    assert!(port.poll(Some(Duration::ZERO)).unwrap(), "still queued");
    let r = port.recv_fit(Some(Duration::ZERO), 300).unwrap().unwrap();
    assert_eq!(r.mad.len(), 300);
    assert!(port.recv_fit(Some(Duration::ZERO), 300).unwrap().is_none());
}

#[test]
fn poll_sees_the_ports_own_queue() {
    let (port, fake) = port_over(Behaviour::default());
    let agent = register(&port);
    fake.inject(agent, 1, 256);
    // A transaction reads the unsolicited MAD into the port's queue: the transport is empty.
    let req = request(3, 0, 0);
    port.transact(agent, &req, &MadAddr::directed_route(), 100, 0)
        .unwrap();
    assert!(fake.state().due.is_empty());
    assert!(port.poll(Some(Duration::ZERO)).unwrap());
    assert!(port.poll(None).unwrap());
    assert_eq!(tid_of(&port.recv(None).unwrap().unwrap()), UNSOLICITED);
    assert!(!port.poll(Some(Duration::ZERO)).unwrap());
    assert!(!port.poll(Some(Duration::from_millis(10))).unwrap());
}

#[test]
fn nobody_sleeps_past_their_deadline_and_a_waiting_transact_wakes_at_once() {
    let (port, fake) = port_over(Behaviour {
        delay: Duration::from_millis(1),
        ..Behaviour::default()
    });
    let agent = register(&port);
    thread::scope(|s| {
        // A receiver that waits forever is the reader most of the time.
        let forever = s.spawn(|| port.recv(None).unwrap().unwrap());
        thread::sleep(Duration::from_millis(20));
        for wait in [Duration::ZERO, Duration::from_millis(30)] {
            let started = Instant::now();
            assert!(port.recv(Some(wait)).unwrap().is_none());
            let took = started.elapsed();
            assert!(
                took >= wait && took < wait + READ_SLICE / 2,
                "{wait:?}: {took:?}"
            );
        }
        // Its reads deliver our responses; we are woken for each at once, not when its
        // read slice (READ_SLICE) ends.
        let started = Instant::now();
        for i in 0..20 {
            let req = request(i, 0, i);
            let r = port
                .transact(agent, &req, &MadAddr::directed_route(), 1000, 0)
                .unwrap();
            assert!(answers(&r, agent, &req));
        }
        let took = started.elapsed();
        assert!(took < READ_SLICE * 5, "20 transactions took {took:?}");
        fake.inject(agent, 1, 256);
        assert_eq!(tid_of(&forever.join().unwrap()), UNSOLICITED);
    });
}

#[test]
fn a_mad_without_a_tid_is_refused() {
    let (port, fake) = port_over(Behaviour::default());
    let agent = register(&port);
    let e = port
        .transact(
            agent,
            &[1, CLASS, 1, GET],
            &MadAddr::directed_route(),
            100,
            0,
        )
        .unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
    assert!(
        e.to_string()
            .contains("4-byte MAD is shorter than the 24-byte MAD header"),
        "{e}"
    );
    assert_eq!(fake.sent(), 0);
}

#[test]
fn a_request_to_our_own_agent_is_not_taken_for_the_response() {
    // An incoming request with the same agent and TID (a peer's, or our own looped back) is
    // not the answer: it goes to recv.
    let (port, fake) = port_over(Behaviour {
        delay: Duration::from_millis(20),
        ..Behaviour::default()
    });
    let agent = register(&port);
    let req = request(UNSOLICITED, 0, 0);
    thread::scope(|s| {
        let t = s.spawn(|| port.transact(agent, &req, &MadAddr::directed_route(), 1000, 0));
        while fake.sent() == 0 {
            thread::sleep(Duration::from_millis(1));
        }
        fake.inject(agent, 1, 256); // a Trap with TID UNSOLICITED: the same key
        assert!(answers(&t.join().unwrap().unwrap(), agent, &req));
    });
    let rest = drain(&port);
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0].mad[3], TRAP);
}

#[test]
fn recv_into_reuses_the_buffer_and_leaves_a_longer_mad_queued() {
    let (port, fake) = port_over(Behaviour::default());
    let agent = register(&port);
    fake.inject(agent, 1, 300);
    let mut rx = Received {
        mad: vec![0xee; 7],
        ..Received::default()
    };
    let e = port
        .recv_into(Some(Duration::ZERO), 256, &mut rx)
        .unwrap_err();
    assert!(matches!(e, Error::TooLong { needed: 300, .. }), "{e:?}");
    assert_eq!(
        rx.mad,
        vec![0xee; 7],
        "a refused receive leaves `into` alone"
    );
    assert!(port.recv_into(Some(Duration::ZERO), 300, &mut rx).unwrap());
    assert_eq!((rx.agent, rx.mad.len()), (agent, 300));
    assert!(!port.recv_into(Some(Duration::ZERO), 300, &mut rx).unwrap());
    assert_eq!(
        rx.mad.len(),
        300,
        "nothing came: `into` still holds the last MAD"
    );
    // Round trips into one buffer get their own answers.
    for i in 0..50 {
        let req = request(5, 0, i);
        port.send(agent, &req, &MadAddr::directed_route(), 100, 0)
            .unwrap();
        assert!(port
            .recv_into(Some(Duration::from_secs(5)), usize::MAX, &mut rx)
            .unwrap());
        assert_eq!(rx.status, 0);
        assert_eq!(rx.mad[12..16], req[12..16], "its own TID");
    }
}

#[test]
fn transact_into_leaves_the_answer_or_the_report_in_the_buffer() {
    let (port, _fake) = port_over(Behaviour {
        lose_every: 2,
        loss: Loss::Late(Duration::from_millis(900)),
        ..Behaviour::default()
    });
    let agent = register(&port);
    let mut rx = Received::default();
    let (mut answered, mut reported) = (0, 0);
    for i in 0..4 {
        let req = request(100 + i, 0, i);
        port.transact_into(agent, &req, &MadAddr::directed_route(), 10, 0, &mut rx)
            .unwrap();
        if rx.is_timeout() {
            reported += 1;
            assert_eq!(
                rx.mad,
                req[..crate::fake::REPORT_LEN],
                "the request's header"
            );
        } else {
            answered += 1;
            assert_eq!(rx.mad[12..16], req[12..16], "its own TID");
        }
        assert_eq!(rx.agent, agent);
    }
    assert_eq!((answered, reported), (2, 2));
}
