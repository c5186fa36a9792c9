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
pub(super) struct Slot {
    inner: Mutex<(Option<Result<Completion>>, Option<Waker>)>,
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Slot")
    }
}

impl Slot {
    /// Stores the completion and wakes the future.
    pub(super) fn fill(&self, c: Completion) {
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
        let mut st = self.inner.lock();
        if st.pumping || st.futures.is_empty() {
            return;
        }
        st.pumping = true;
        drop(st);
        let rpc = self.clone();
        let spawned = thread::Builder::new()
            .name("umad-rpc".into())
            .spawn(move || rpc.pump_futures());
        if let Err(e) = spawned {
            let mut st = self.inner.lock();
            st.pumping = false;
            let slots: Vec<_> = st.futures.drain().map(|(_, s)| s).collect();
            drop(st);
            for s in slots {
                s.put(Err(Error::InvalidArgument(format!(
                    "cannot start the thread that serves async requests: {e}"
                ))));
            }
        }
    }

    fn pump_futures(&self) {
        let mut st = self.inner.lock();
        loop {
            if st.futures.is_empty() {
                st.pumping = false;
                return;
            }
            st = match self.pump(st, Some(Instant::now() + PUMP_SLICE)) {
                Ok(st) => st,
                Err(e) => {
                    let mut st = self.inner.lock();
                    st.pumping = false;
                    let slots: Vec<_> = st.futures.drain().map(|(_, s)| s).collect();
                    drop(st);
                    let reason = e.to_string();
                    for s in slots {
                        s.put(Err(Error::Failed {
                            ca: self.port().ca_name().to_string(),
                            port: self.port().port_num(),
                            reason: reason.clone(),
                            errno: e.errno(),
                        }));
                    }
                    return;
                }
            };
        }
    }
}
