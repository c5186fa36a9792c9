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
    let st = rpc.inner.lock();
    assert_eq!(st.flights.len(), 1, "only the ignored request is in flight");
    assert!(
        st.deadlines.len() <= 2 * 8 + 64 + 1,
        "{} deadline entries for 1 flight",
        st.deadlines.len()
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
