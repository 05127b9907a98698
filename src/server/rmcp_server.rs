//! [`SkillServer`] on rmcp's server side: an rmcp `ServerHandler` over stdio (our bounded
//! transport, module `stdio`) or Streamable HTTP (module `http`), and the watcher that rescans
//! the folder and tells peers when it changes.
//!
//! rmcp 3.11 negotiates the protocol revision: the `initialize` handshake (up to 2025-11-25) and
//! the 2026-07-28 flow (`server/discover`, per-request `_meta`), where it also requires the
//! `ttlMs`/`cacheScope` hints our results always carry and turns "resource not found" into
//! `-32602`. It parses the skills methods (`skills/list`, `skills/get`,
//! `resources/directory/read`) into typed requests and checks every entry we answer with against
//! SEP-2640's structural rules before it leaves. Our answers are built once, as JSON, by
//! [`SkillServer::call`] — the same code the in-process source runs — and converted to rmcp's
//! types here.
//!
//! Change notifications: peers that came through `initialize` get
//! `notifications/resources/list_changed` whenever the published set or any entry changes, and
//! `notifications/resources/updated` for the URIs they subscribed to (`resources/subscribe`);
//! 2026-07-28 peers get the same through `subscriptions/listen`, filtered by what they asked for.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rmcp::model::{
    CustomRequest, CustomResult, ErrorCode, GetSkillRequestParams, GetSkillResult, Implementation, ListResourcesResult,
    ListSkillsResult, PaginatedRequestParams, ReadResourceDirectoryRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, ResourceContents,
    ResourceUpdatedNotificationParam, ServerCapabilities, ServerConfig, SubscribeRequestParams,
    SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler, ServiceExt as _};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::listen;
use super::stdio::StdioTransport;
use super::{Changes, RpcError, SkillServer};
use crate::entry::Limits;
use crate::source::{SKILLS_EXTENSION, message_bound};
use crate::uri::FileUri;

/// Serves the folder over stdio (newline-delimited JSON-RPC) until the peer closes stdin.
///
/// A request longer than the message bound of the baseline limits, or denser in JSON values
/// than any request within them, is refused as it is read (R-B2) and answered with `-32600`;
/// a line that is not JSON gets `-32700`; at most a few answers wait for a client that does not
/// read them before no further request is read (R-E3). The catalog is a snapshot, rescanned
/// every [`SkillServer::watch_interval`].
///
/// # Errors
/// The root is not a readable folder; the transport failed.
pub async fn serve_stdio(server: SkillServer) -> io::Result<()> {
    let every = server.watch_interval;
    start(&server)?;
    let listeners = Listeners::shared();
    let (input, output) = super::stdio::standard_streams();
    let transport = StdioTransport::new(input, output, bound());
    let handler = Handler::new(server.clone(), listeners.clone());
    let running = match handler.serve(transport).await {
        Ok(running) => running,
        // A peer that leaves before initialising ends the session, not the program, in error.
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
        Err(e) => return Err(io::Error::other(e)),
    };
    let watcher = tokio::spawn(watch(server, listeners, every));
    let quit = running.waiting().await;
    watcher.abort();
    // Said in words, not with rmcp's `Debug` (N4).
    let how = match quit {
        Ok(rmcp::service::QuitReason::Closed) => "the client closed it",
        Ok(rmcp::service::QuitReason::Cancelled) => "cancelled",
        // `QuitReason` is non-exhaustive: a reason added later reads as a failure.
        Ok(_) | Err(_) => "its task failed",
    };
    tracing::debug!(how, "stdio session ended");
    Ok(())
}

/// The largest request the server reads: the bound for a message under the baseline limits
/// (R-B2), larger than rmcp's defaults (16 MiB a line, 4 MiB a body) so that everything a
/// skillcache host may send fits, and no more.
pub(super) fn bound() -> usize {
    usize::try_from(message_bound(&Limits::BASELINE)).unwrap_or(usize::MAX)
}

/// Locks `mutex`, taking over a poisoned one: each value these locks guard (a set of URIs, a
/// peer, the listener lists) is changed by one call at a time, so a panic elsewhere never leaves
/// it half-updated, and a session must not lose its notifications over it.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The first scan: fails for a root that is not a folder, logs how much is published (each
/// refused folder was logged with its reasons as it was inspected), and drains the "changes" of
/// building the catalog so no peer is told about them. From here on the watcher rescans and
/// requests answer from its snapshots (R-E3).
pub(super) fn start(server: &SkillServer) -> io::Result<()> {
    // Watched before the first scan: only a watched server's scan keeps the bytes it hashed
    // (`held`), and the first scan is the one that hashes every file (round 26 of review).
    server.shared.watch();
    server.changes().map_err(io::Error::other)?;
    let published = server
        .snapshot()
        .map_err(|(_, message)| io::Error::other(message))?
        .len();
    let refused = server.shared.with_catalog(|c| c.refused().count());
    tracing::info!(root = %server.root.display(), published, refused, "serving");
    Ok(())
}

/// Everyone to tell about changes.
#[derive(Debug, Default)]
pub(super) struct Listeners {
    /// Sessions from `initialize`: their peer and the URIs they subscribed to.
    sessions: Vec<Arc<Session>>,
    /// 2026-07-28 `subscriptions/listen` streams, by a local id.
    streams: BTreeMap<u64, Arc<listen::Stream>>,
    next_stream: u64,
}

pub(super) type Shared = Arc<Mutex<Listeners>>;

impl Listeners {
    pub(super) fn shared() -> Shared {
        Arc::default()
    }

    /// Forgets the sessions whose peer is gone.
    fn prune(&mut self) {
        self.sessions
            .retain(|s| lock(&s.peer).as_ref().is_some_and(|p| !p.is_transport_closed()));
    }
}

/// One `initialize` session.
#[derive(Debug, Default)]
struct Session {
    peer: Mutex<Option<Peer<RoleServer>>>,
    subscribed: Mutex<BTreeSet<String>>,
}

/// The rmcp handler: one per stdio connection, per HTTP session, or per stateless HTTP request.
#[derive(Debug, Clone)]
pub(super) struct Handler {
    server: SkillServer,
    listeners: Shared,
    session: Arc<Session>,
}

impl Handler {
    pub(super) fn new(server: SkillServer, listeners: Shared) -> Handler {
        Handler {
            server,
            listeners,
            session: Arc::default(),
        }
    }

    /// Runs [`SkillServer::call`] off the async threads (it may hash files) and converts the
    /// answer to rmcp's type for it.
    async fn call<T: DeserializeOwned>(
        &self,
        method: &'static str,
        params: Value,
    ) -> Result<T, ErrorData> {
        let result = self.call_json(method.to_owned(), params).await?;
        serde_json::from_value(result).map_err(|e| {
            ErrorData::internal_error(format!("{method}: cannot build the result: {e}"), None)
        })
    }

    /// [`SkillServer::call`] on the blocking pool, its answer as JSON.
    async fn call_json(&self, method: String, params: Value) -> Result<Value, ErrorData> {
        let server = self.server.clone();
        tokio::task::spawn_blocking(move || server.call(&method, &params))
            .await
            .map_err(|e| ErrorData::internal_error(format!("the request failed: {e}"), None))?
            .map_err(rpc_error)
    }
}

/// A `resources/read` answer as rmcp's type, its contents' strings (a file's text or base64, up
/// to the message bound) moved out of the JSON rather than copied: `ResourceContents` is an
/// untagged enum, which serde reads by buffering each string and copying it again, so a large
/// file cost twice its size more at the answer's peak (issue 41, P3 peak RSS).
fn read_result(mut result: Value) -> Result<ReadResourceResult, String> {
    let contents = result
        .get_mut("contents")
        .map(|c| std::mem::replace(c, json!([])));
    let mut typed: ReadResourceResult =
        serde_json::from_value(result).map_err(|e| e.to_string())?;
    let Some(Value::Array(items)) = contents else {
        return Err("no contents".to_owned());
    };
    typed.contents = items.into_iter().map(content).collect::<Result<_, _>>()?;
    Ok(typed)
}

/// One content item of a `resources/read` answer, its strings moved.
fn content(item: Value) -> Result<ResourceContents, String> {
    let Value::Object(mut fields) = item else {
        return Err("a content item is not an object".to_owned());
    };
    let mut take = |key| match fields.remove(key) {
        Some(Value::String(s)) => Some(s),
        _ => None,
    };
    let uri = take("uri").ok_or("a content item has no URI")?;
    let mime = take("mimeType");
    match (take("text"), take("blob")) {
        (Some(text), None) => Ok(ResourceContents::TextResourceContents {
            uri,
            mime_type: mime,
            text,
            meta: None,
        }),
        (None, Some(blob)) => Ok(ResourceContents::BlobResourceContents {
            uri,
            mime_type: mime,
            blob,
            meta: None,
        }),
        _ => Err("a content item has not one of text and blob".to_owned()),
    }
}

/// The params of a listing: its cursor, if any.
fn cursor(request: Option<PaginatedRequestParams>) -> Value {
    match request.and_then(|r| r.cursor) {
        Some(cursor) => json!({"cursor": cursor}),
        None => json!({}),
    }
}

fn rpc_error((code, message): RpcError) -> ErrorData {
    ErrorData::new(
        ErrorCode(i32::try_from(code).unwrap_or(ErrorCode::INTERNAL_ERROR.0)),
        message,
        None,
    )
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        let capabilities: ServerCapabilities = serde_json::from_value(json!({
            "resources": {"subscribe": true, "listChanged": true},
            "extensions": {SKILLS_EXTENSION: self.server.extension_settings()},
        }))
        .unwrap_or_default();
        let mut info = ServerConfig::default();
        info.capabilities = capabilities;
        info.server_info = Implementation::new("skillcache-serve", env!("CARGO_PKG_VERSION"));
        info
    }

    async fn list_skills(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, ErrorData> {
        // Pages well under a client's event limit; entries are never split (SEP-2640, R-E8).
        self.call("skills/list", cursor(request)).await
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, ErrorData> {
        self.call("skills/get", json!({"uri": request.uri})).await
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.call("resources/list", cursor(request)).await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        // A small published file is opened, read and hashed on this thread, as the cache reads
        // a small hit (`QUICK_HIT_MAX_BYTES`): a hop to the blocking pool costs more than a few
        // KiB of reading and hashing, and a sweep asks for hundreds of them (issue 41, P3).
        let small = FileUri::parse(&request.uri)
            .ok()
            .and_then(|uri| self.server.published_size(&uri))
            .is_some_and(|size| size <= crate::core::QUICK_HIT_MAX_BYTES);
        let params = json!({"uri": request.uri});
        let result = if small {
            self.server
                .call("resources/read", &params)
                .map_err(rpc_error)?
        } else {
            self.call_json("resources/read".to_owned(), params).await?
        };
        read_result(result)
            .map(ReadResourceResponse::Complete)
            .map_err(|e| {
                ErrorData::internal_error(format!("resources/read: cannot build the result: {e}"), None)
            })
    }

    async fn read_resource_directory(
        &self,
        request: ReadResourceDirectoryRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.call("resources/directory/read", json!({"uri": request.uri}))
            .await
    }

    /// What rmcp did not type — an unknown method, or a known one whose params do not fit
    /// rmcp's types (`resources/read` with a numeric `uri`) — is answered by our own dispatch:
    /// `-32601` or `-32602`, quoting nothing of the request (rmcp's default names the method,
    /// R-E3).
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let CustomRequest { method, params, .. } = request;
        self.call_json(method, params.unwrap_or(Value::Null))
            .await
            .map(CustomResult)
    }

    #[allow(deprecated)] // the legacy (pre-2026-07-28) subscription, for `initialize` peers
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // Bounded as a listen stream is (round 30 of review, H: a session subscribing to
        // 200,000 URIs took serve to 600 MB).
        let mut subscribed = lock(&self.session.subscribed);
        if subscribed.contains(&request.uri) {
            return Ok(());
        }
        let bytes: usize = subscribed.iter().map(String::len).sum::<usize>() + request.uri.len();
        if subscribed.len() >= MAX_LISTENED_FILES || bytes > MAX_LISTENED_BYTES {
            return Err(ErrorData::invalid_params(
                format!("a session may subscribe to at most {MAX_LISTENED_FILES} files ({} KiB of URIs); unsubscribe from some first", MAX_LISTENED_BYTES / 1024),
                None,
            ));
        }
        subscribed.insert(request.uri);
        Ok(())
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        lock(&self.session.subscribed).remove(&request.uri);
        Ok(())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // Whatever resource notifications were asked for; rmcp keeps only what we advertise.
        // Files only up to a bound: rmcp intersects what was asked with what is accepted by
        // comparing every pair, so a request naming 100,000 files held the server for minutes
        // (round 29 of review, S4-HTTP). Past the bound, the list's changes only, and the
        // acknowledgement says so.
        // Bytes too (round 30 of review, G: 1,024 URIs of 30 KB each kept the one worker
        // comparing for seconds).
        let files = requested.resource_subscriptions.as_ref().map_or(0, Vec::len);
        let bytes: usize = requested.resource_subscriptions.iter().flatten().map(String::len).sum();
        if files <= MAX_LISTENED_FILES && bytes <= MAX_LISTENED_BYTES {
            return Some(requested.clone());
        }
        tracing::warn!(files, bytes, "a listen stream asked to hear of more files than the bound: accepted the list's changes only");
        let mut accepted = SubscriptionFilter::default();
        accepted.resources_list_changed = requested.resources_list_changed;
        Some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let id = {
            let mut l = lock(&self.listeners);
            let id = l.next_stream;
            l.next_stream += 1;
            l.streams.insert(id, listen::Stream::new(context.sink().clone()));
            id
        };
        context.cancelled().await;
        if let Some(stream) = lock(&self.listeners).streams.remove(&id) {
            stream.close();
        }
        Ok(())
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        *lock(&self.session.peer) = Some(context.peer);
        let mut listeners = lock(&self.listeners);
        // Sessions that ended are forgotten here too, so a long-running HTTP server whose folder
        // never changes does not collect them.
        listeners.prune();
        listeners.sessions.push(self.session.clone());
    }
}

/// Scans the folder every `every` and tells the listeners what changed.
pub(super) async fn watch(server: SkillServer, listeners: Shared, every: Duration) {
    loop {
        tokio::time::sleep(every).await;
        let scanned = {
            let server = server.clone();
            tokio::task::spawn_blocking(move || server.changes()).await
        };
        match scanned {
            // Told on their own task: a peer that does not take its notifications never holds
            // up the next scan (one client cannot starve the rest, R-E2).
            Ok(Ok(changes)) if changes != Changes::default() => notify(&listeners, &changes),
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "cannot scan the served folder"),
            Err(e) => tracing::warn!(error = %e, "the folder scan failed"),
        }
        // Sessions that ended (closed, evicted, expired) are let go of on every tick, not only
        // when the next one starts: their peers hold memory (R-E2).
        lock(&listeners).prune();
    }
}

/// How long one notification may take to send before the peer is skipped.
const NOTIFY_TIMEOUT: Duration = Duration::from_secs(5);

/// Sends `changes` to every live listener, dropping the ones that are gone, each on its own task
/// bounded in time: a peer that does not read is skipped, never waited on. A skillcache host
/// marks the affected entries stale on either notification (R-B5).
fn notify(listeners: &Shared, changes: &Changes) {
    let (sessions, streams) = {
        let mut l = lock(listeners);
        l.prune();
        (
            l.sessions.clone(),
            l.streams.values().cloned().collect::<Vec<_>>(),
        )
    };
    tracing::info!(
        files = changes.uris.len(),
        sessions = sessions.len(),
        streams = streams.len(),
        "folder changed"
    );
    for session in sessions {
        let peer = lock(&session.peer).clone();
        let Some(peer) = peer else { continue };
        let subscribed: Vec<String> = changes
            .uris
            .intersection(&lock(&session.subscribed))
            .cloned()
            .collect();
        // Each notification handed over on its own task, each bounded: one a slow peer holds
        // up past the bound must not keep the others of the same change from being sent
        // (round 28 of review: a client stuck for 5 s lost every later URI of that tick). Over
        // stdio the transport keeps one waiting copy of each (`stdio::NOTIFICATIONS_WAITING`);
        // a 2025-11-25 HTTP session's are rmcp's, each task ending at the bound (a
        // `subscriptions/listen` stream has its own, `listen::Stream`). A peer that went away
        // mid-send is dropped at the next change.
        let updated = subscribed.into_iter().map(Some);
        for uri in changes.list_changed.then_some(None).into_iter().chain(updated) {
            let peer = peer.clone();
            tokio::spawn(bounded(async move {
                let _ = match uri {
                    None => peer.notify_resource_list_changed().await,
                    Some(uri) => {
                        let updated = ResourceUpdatedNotificationParam::new(uri);
                        peer.notify_resource_updated(updated).await
                    }
                };
            }));
        }
    }
    for stream in streams {
        stream.tell(changes.list_changed, changes.uris.iter());
    }
}

/// How many files one `subscriptions/listen` stream may ask to hear of (see
/// `accepted_subscription_filter`): a skill's files, or a host's loaded skills', with room.
const MAX_LISTENED_FILES: usize = 1024;

/// How many bytes of URIs one stream, or one 2025-11-25 session, may ask to hear of.
const MAX_LISTENED_BYTES: usize = 256 * 1024;

/// `f`, given up after [`NOTIFY_TIMEOUT`].
async fn bounded(f: impl Future<Output = ()>) {
    if tokio::time::timeout(NOTIFY_TIMEOUT, f).await.is_err() {
        tracing::debug!("a peer did not take its notifications in time; skipped");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The typed answer says what the JSON said — text or blob, MIME type, the cache hints —
    /// and an item that is neither is an error, never a guess.
    #[test]
    fn a_read_answer_keeps_its_contents_and_hints_when_its_strings_are_moved() {
        let answer = json!({"contents": [
            {"uri": "skill://a/SKILL.md", "mimeType": "text/markdown", "text": "# A\n"},
            {"uri": "skill://a/x.bin", "mimeType": "application/octet-stream", "blob": "AAE="},
        ], "ttlMs": 5000, "cacheScope": "public", "resultType": "complete"});
        let typed = read_result(answer.clone()).expect("typed");
        assert_eq!(serde_json::to_value(&typed).expect("json"), answer);
        let neither = json!({"contents": [{"uri": "skill://a/SKILL.md", "mimeType": "text/plain"}]});
        assert!(read_result(neither).is_err());
        let both = json!({"contents": [{"uri": "skill://a/SKILL.md", "text": "a", "blob": "YQ=="}]});
        assert!(read_result(both).is_err());
        assert!(read_result(json!({"ttlMs": 1})).is_err(), "no contents");
    }
}
