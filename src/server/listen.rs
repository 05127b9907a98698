//! A 2026-07-28 `subscriptions/listen` stream and the notifications waiting for it (round 28 of
//! review, S3-HTTP).
//!
//! A client may open a stream and never read it. Each notification used to be its own send,
//! waiting in rmcp for room on the stream: an unread stream collected one waiting copy per
//! change, about 15 MB each. Now a stream has at most one send in flight, and what changed
//! meanwhile waits here as a set: a URI that changes again while it waits is not added twice
//! (the client reads the file when it is told, which is all either copy tells it), and at most
//! [`NOTIFICATIONS_WAITING`] distinct ones wait. Nothing is dropped for being slow: a client
//! that reads after a long stall is told of every file that changed, once. The send is not
//! bounded in time (a send given up after rmcp took it would be sent twice); it ends when the
//! client reads, or when the stream ends ([`Stream::close`]).

use std::collections::{BTreeSet, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::service::{SubscriptionSendError, SubscriptionSink};
use tokio::sync::watch;

use super::stdio::NOTIFICATIONS_WAITING;

/// One listen stream: its sink, what waits for it, and whether it has ended.
#[derive(Debug)]
pub(super) struct Stream {
    sink: SubscriptionSink,
    /// The files the stream accepted, for a lookup per changed file (a tick may change many).
    subscribed: HashSet<String>,
    waiting: Mutex<Waiting>,
    /// `true` once the stream has ended: a send still in flight is given up.
    ended: watch::Sender<bool>,
}

/// The notifications waiting for a stream.
#[derive(Debug, Default)]
struct Waiting {
    list_changed: bool,
    updated: BTreeSet<String>,
    /// Whether a task is sending: at most one per stream.
    sending: bool,
}

/// One notification to send.
enum Next {
    ListChanged,
    Updated(String),
}

impl Stream {
    pub(super) fn new(sink: SubscriptionSink) -> Arc<Stream> {
        let subscribed = sink
            .accepted()
            .resource_subscriptions
            .iter()
            .flatten()
            .cloned()
            .collect();
        Arc::new(Stream {
            sink,
            subscribed,
            waiting: Mutex::new(Waiting::default()),
            ended: watch::Sender::new(false),
        })
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The stream ended (the client closed it, or the session went): nothing more is sent.
    pub(super) fn close(&self) {
        self.ended.send_replace(true);
        let mut waiting = self.waiting();
        waiting.list_changed = false;
        waiting.updated.clear();
    }

    /// Tells the client of a change: the list changed (if it asked to hear of that), and the
    /// files of `changed` it subscribed to. Starts the stream's sending task unless one runs.
    pub(super) fn tell<'a>(self: &Arc<Self>, list_changed: bool, changed: impl Iterator<Item = &'a String>) {
        if *self.ended.borrow() {
            return;
        }
        let accepted = self.sink.accepted();
        let mut waiting = self.waiting();
        waiting.list_changed |= list_changed && accepted.resources_list_changed == Some(true);
        for uri in changed.filter(|uri| self.subscribed.contains(*uri)) {
            if waiting.updated.len() >= NOTIFICATIONS_WAITING && !waiting.updated.contains(uri) {
                tracing::warn!(waiting = waiting.updated.len(), "a listen stream reads no notifications: one more is dropped");
                continue;
            }
            waiting.updated.insert(uri.clone());
        }
        let any = waiting.list_changed || !waiting.updated.is_empty();
        if any && !waiting.sending {
            waiting.sending = true;
            drop(waiting);
            tokio::spawn(Arc::clone(self).send_waiting());
        }
    }

    /// The next notification waiting, taken out (so one that changes again during its send
    /// waits again); `None`, and the task's end marked, when nothing waits.
    fn next(&self) -> Option<Next> {
        let mut waiting = self.waiting();
        if std::mem::take(&mut waiting.list_changed) {
            return Some(Next::ListChanged);
        }
        if let Some(uri) = waiting.updated.pop_first() {
            return Some(Next::Updated(uri));
        }
        waiting.sending = false;
        None
    }

    /// Sends what waits, one at a time, until nothing does or the stream ends.
    async fn send_waiting(self: Arc<Self>) {
        let mut ended = self.ended.subscribe();
        loop {
            // Nothing waits: this task is over (another may have started since).
            let Some(next) = self.next() else { return };
            let delivery = async {
                match next {
                    Next::ListChanged => self.sink.notify_resource_list_changed().await,
                    Next::Updated(uri) => self.sink.notify_resource_updated(uri).await,
                }
            };
            tokio::select! {
                sent = delivery => match sent {
                    // Sent, or filtered out by rmcp (never the case for what `tell` keeps).
                    Ok(()) | Err(SubscriptionSendError::NotificationNotAccepted(_) | SubscriptionSendError::UnsupportedNotification(_)) => {}
                    Err(e) => {
                        tracing::debug!(error = %e, "a listen stream took no notification: it ended");
                        break;
                    }
                },
                _ = ended.wait_for(|ended| *ended) => break,
            }
        }
        // The stream ended: nothing that waits is ever sent, and no task starts for it again.
        self.close();
        self.waiting().sending = false;
    }
}
