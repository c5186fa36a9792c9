//! The async face of [`Rpc`] (feature `async`, also enabled by `tokio`): [`Rpc::call_async`]
//! returns a future that any executor can drive (tokio, async-std, a hand-made `block_on`).
//!
//! The futures share the engine with the blocking calls. While any is pending, one helper
//! thread collects for them (the engine's reads block, so they never run on an executor's
//! thread); it exits when none is left.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

use super::{Completion, Request, Rpc, Waiter};
use crate::{Error, Result};

/// How long the helper thread reads before looking whether futures are still pending.
const PUMP_SLICE: Duration = Duration::from_millis(100);

/// Where a completion waits for its future.
#[derive(Default)]
pub(crate) struct Slot {
    inner: Mutex<(Option<Result<Completion>>, Option<Waker>)>,
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Slot")
    }
}

impl Slot {
    /// Stores the completion and wakes the future.
    pub(crate) fn fill(&self, c: Completion) {
        self.put(Ok(c));
    }

    fn put(&self, r: Result<Completion>) {
        let waker = {
            let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            g.0 = Some(r);
            g.1.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }
}

/// The future of one [`Rpc::call_async`].
#[must_use = "futures do nothing unless awaited (the request is sent either way)"]
pub struct CallFuture {
    slot: Arc<Slot>,
}

impl Future for CallFuture {
    type Output = Result<Completion>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut g = self.slot.inner.lock().unwrap_or_else(|p| p.into_inner());
        match g.0.take() {
            Some(r) => Poll::Ready(r),
            None => {
                g.1 = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

impl Rpc {
    /// Sends a request; the future resolves to its completion. The same engine, window and
    /// deadlines as [`Rpc::call`]: blocking and async callers can share one engine.
    pub fn call_async(&self, request: Request) -> Result<CallFuture> {
        let slot = Arc::new(Slot::default());
        self.submit_as(request, Waiter::Future(slot.clone()))?;
        self.ensure_pump();
        Ok(CallFuture { slot })
    }

    /// Starts the helper thread that collects for pending futures, unless it runs.
    fn ensure_pump(&self) {
        let start = self
            .core(|c| {
                let start = !c.pumping && !c.futures.is_empty();
                c.pumping |= start;
                start
            })
            .unwrap_or(false);
        if !start {
            return;
        }
        let rpc = self.clone();
        let spawned = thread::Builder::new()
            .name("umad-rpc".into())
            .spawn(move || rpc.pump_futures());
        if let Err(e) = spawned {
            self.fail_futures(
                &format!("cannot start the thread that serves async requests: {e}"),
                libc::EAGAIN,
            );
        }
    }

    /// Ends every pending future with an error (the helper thread cannot go on).
    fn fail_futures(&self, reason: &str, errno: i32) {
        let slots: Vec<_> = self
            .core(|c| {
                c.pumping = false;
                c.futures.drain().map(|(_, s)| s).collect()
            })
            .unwrap_or_default();
        for s in slots {
            s.put(Err(Error::Failed {
                ca: self.port().ca_name().to_string(),
                port: self.port().port_num(),
                reason: reason.to_string(),
                errno,
            }));
        }
    }

    fn pump_futures(&self) {
        loop {
            // Whether the futures are all served is decided under the port's lock, together
            // with giving the pump role back: a future added later starts a new pump.
            let done = self.inner.port.drive(
                self.inner.owner,
                Some(Instant::now() + PUMP_SLICE),
                |c, _, _| {
                    let done = c.futures.is_empty();
                    c.pumping &= !done;
                    done.then_some(())
                },
            );
            match done {
                Ok(Some(())) => return,
                Ok(None) => {}
                Err(e) => {
                    self.fail_futures(&e.to_string(), e.errno());
                    return;
                }
            }
        }
    }
}
