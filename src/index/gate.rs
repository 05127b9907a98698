//! The fork gate: no thread is inside `SQLite` when a binding's host forks (issue 39, B4).
//!
//! A child forked from a threaded process has only the thread that forked. A lock another thread
//! held at that instant stays held in the child forever: `SQLite`'s own mutexes (its allocator's
//! among them) are process-wide, so a child that opens an index of its own would hang on the
//! first one a parent thread was holding. Every use of `SQLite` in this crate is in this layer and
//! passes the gate ([`enter`]); a binding whose language forks (Python's `os.fork`, through
//! `os.register_at_fork`) closes the gate before the fork ([`close`]: new work waits, and the
//! calls already inside finish) and opens it after, in the parent and in the child ([`open`]).
//!
//! The fast path is two atomic operations a call. A pass is counted once per thread, however
//! deeply a thread nests its passes, so a thread inside the gate never waits for itself.

use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Whether a fork is being prepared: new passes wait.
static CLOSED: AtomicBool = AtomicBool::new(false);
/// Threads holding a pass.
static INSIDE: AtomicUsize = AtomicUsize::new(0);
/// Held by the closing thread from [`close`] to [`open`]: a pass that finds the gate closed
/// waits on it. Held across the fork, so the child (whose forking thread holds it) never
/// inherits it locked by a thread it does not have.
static CLOSING: Mutex<()> = Mutex::new(());

thread_local! {
    /// This thread's nested passes.
    static DEPTH: Cell<usize> = const { Cell::new(0) };
    /// The closing thread's hold on [`CLOSING`], from [`close`] to [`open`].
    static HELD: RefCell<Option<MutexGuard<'static, ()>>> = const { RefCell::new(None) };
}

/// A thread's leave to use `SQLite` until it is dropped; not sent to another thread (its count is
/// this thread's).
pub(crate) struct Pass {
    _this_thread: PhantomData<*const ()>,
}

/// A pass, waiting while a fork is being prepared.
pub(crate) fn enter() -> Pass {
    DEPTH.with(|depth| {
        if depth.get() == 0 {
            loop {
                INSIDE.fetch_add(1, Ordering::SeqCst);
                if !CLOSED.load(Ordering::SeqCst) {
                    break;
                }
                INSIDE.fetch_sub(1, Ordering::SeqCst);
                // Blocks until the closing thread opens the gate again.
                drop(CLOSING.lock().unwrap_or_else(PoisonError::into_inner));
            }
        }
        depth.set(depth.get() + 1);
    });
    Pass {
        _this_thread: PhantomData,
    }
}

impl Drop for Pass {
    fn drop(&mut self) {
        DEPTH.with(|depth| {
            depth.set(depth.get() - 1);
            if depth.get() == 0 {
                INSIDE.fetch_sub(1, Ordering::SeqCst);
            }
        });
    }
}

/// Closes the gate and waits up to `within` for every other thread's pass to end; whether they
/// all did. The gate stays closed until [`open`] on this thread, whatever the answer.
pub(crate) fn close(within: Duration) -> bool {
    // Closed by this thread already (a second call before `open`): it waits again, and never
    // for its own hold.
    if HELD.with(|h| h.borrow().is_none()) {
        let held = CLOSING.lock().unwrap_or_else(PoisonError::into_inner);
        HELD.with(|h| *h.borrow_mut() = Some(held));
    }
    CLOSED.store(true, Ordering::SeqCst);
    let own = DEPTH.with(|d| usize::from(d.get() > 0));
    let end = Instant::now() + within;
    while INSIDE.load(Ordering::SeqCst) > own {
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    true
}

/// Opens the gate [`close`] closed on this thread. In a forked child, the passes of the parent's
/// other threads are forgotten: those threads do not exist here.
pub(crate) fn open(in_child: bool) {
    if in_child {
        let own = DEPTH.with(|d| usize::from(d.get() > 0));
        INSIDE.store(own, Ordering::SeqCst);
    }
    CLOSED.store(false, Ordering::SeqCst);
    HELD.with(|h| drop(h.borrow_mut().take()));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn b4_close_waits_for_a_pass_inside_and_new_passes_wait_for_open() {
        let inside = enter();
        let (entered, seen) = mpsc::channel();
        let (leave, left) = mpsc::channel::<()>();
        let worker = std::thread::spawn(move || {
            let pass = enter();
            entered.send(()).expect("send");
            left.recv().expect("recv");
            drop(pass);
        });
        seen.recv().expect("the worker entered");
        // This thread's own pass never holds the gate shut against itself; the worker's does.
        assert!(!close(Duration::from_millis(50)), "a pass is still inside");
        leave.send(()).expect("send");
        worker.join().expect("join");
        assert!(close(Duration::from_secs(5)), "every other pass ended");
        // A new pass from another thread waits until the gate opens.
        let (done, finished) = mpsc::channel();
        let waiter = std::thread::spawn(move || {
            let _pass = enter();
            done.send(()).expect("send");
        });
        assert!(finished.recv_timeout(Duration::from_millis(100)).is_err(), "it waited");
        open(false);
        finished.recv_timeout(Duration::from_secs(5)).expect("it entered once open");
        waiter.join().expect("join");
        drop(inside);
    }
}
