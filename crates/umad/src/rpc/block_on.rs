//! The smallest executor, for the tests of [`Rpc::call_async`](super::Rpc::call_async)
//! futures without a runtime: the unit tests (`rpc/tests.rs`) and the ibsim integration test
//! (`tests/ibsim_rpc.rs`, which includes this file by path) share it.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::Duration;

/// Polls `f` on this thread until it is ready, parking between wake-ups (and at most 50 ms
/// at a time, so a future that forgets to wake is polled again anyway).
pub fn block_on<F: Future>(f: F) -> F::Output {
    struct Unpark(thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut f = pin!(f);
    loop {
        if let Poll::Ready(x) = f.as_mut().poll(&mut cx) {
            return x;
        }
        thread::park_timeout(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// Ready after another thread sets the flag and wakes the task.
    struct Flag(Arc<AtomicBool>, Option<thread::JoinHandle<()>>);

    impl Future for Flag {
        type Output = &'static str;
        fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
            if self.0.load(Ordering::SeqCst) {
                return Poll::Ready("done");
            }
            if self.1.is_none() {
                let (flag, waker) = (self.0.clone(), cx.waker().clone());
                self.1 = Some(thread::spawn(move || {
                    thread::sleep(Duration::from_millis(5));
                    flag.store(true, Ordering::SeqCst);
                    waker.wake();
                }));
            }
            Poll::Pending
        }
    }

    #[test]
    fn ready_and_woken_futures() {
        assert_eq!(block_on(async { 7 }), 7);
        assert_eq!(
            block_on(Flag(Arc::new(AtomicBool::new(false)), None)),
            "done"
        );
    }
}
