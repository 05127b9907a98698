//! [`SkillServer`] on rmcp's server side: an rmcp `ServerHandler` over stdio or Streamable
//! HTTP, and the watcher that tells peers when the folder changes.
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
    ErrorCode, GetSkillRequestParams, GetSkillResult, Implementation, ListResourcesResult,
    ListSkillsResult, PaginatedRequestParams, ReadResourceDirectoryRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    ResourceUpdatedNotificationParam, ServerCapabilities, ServerConfig, SubscribeRequestParams,
    SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext, SubscriptionSink};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler, ServiceExt as _};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::{Changes, RpcError, SkillServer};
use crate::entry::Limits;
use crate::source::{SKILLS_EXTENSION, message_bound};

/// Serves the folder over stdio (newline-delimited JSON-RPC) until the peer closes stdin.
/// A request longer than the message bound of the baseline limits is discarded as it is read
/// (R-B2).
///
/// # Errors
/// The root is not a readable folder; the transport failed.
pub async fn serve_stdio(server: SkillServer) -> io::Result<()> {
    let every = server.watch_interval;
    start(&server)?;
    let listeners = Listeners::shared();
    let transport = AsyncRwTransport::new_server(tokio::io::stdin(), tokio::io::stdout())
        .with_max_line_length(bound());
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
    tracing::debug!(?quit, "stdio session ended");
    Ok(())
}

/// Serves the folder over Streamable HTTP at `/mcp` (any path, in fact) on `listener` until the
/// process ends. Sessions from `initialize` get server-initiated notifications on their GET
/// stream; 2026-07-28 requests are served statelessly. Only loopback `Host` headers are
/// accepted (rmcp's DNS-rebinding guard). A request body over the message bound is refused
/// (413).
///
/// # Errors
/// The root is not a readable folder; the listener cannot be used.
pub async fn serve_http(server: SkillServer, listener: std::net::TcpListener) -> io::Result<()> {
    let every = server.watch_interval;
    start(&server)?;
    listener.set_nonblocking(true)?;
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let listeners = Listeners::shared();
    let config = StreamableHttpServerConfig::default().with_max_request_body_bytes(bound());
    let (for_sessions, listeners_for_sessions) = (server.clone(), listeners.clone());
    let service = StreamableHttpService::new(
        move || {
            Ok(Handler::new(
                for_sessions.clone(),
                listeners_for_sessions.clone(),
            ))
        },
        Arc::new(LocalSessionManager::default()),
        config,
    );
    tokio::spawn(watch(server, listeners, every));
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of descriptors and the like: wait for a connection to close.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let service = hyper_util::service::TowerToHyperService::new(service.clone());
        tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(stream);
            if let Err(e) = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, service)
                .await
            {
                tracing::debug!(%peer, error = %e, "connection ended");
            }
        });
    }
}

/// The largest request the server reads: the bound for a message under the baseline limits
/// (R-B2), larger than rmcp's defaults (16 MiB a line, 4 MiB a body) so that everything a
/// skillcache host may send fits, and no more.
fn bound() -> usize {
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
/// building the catalog so no peer is told about them.
fn start(server: &SkillServer) -> io::Result<()> {
    server.changes().map_err(io::Error::other)?;
    server
        .with_catalog(|c| {
            tracing::info!(
                root = %server.root.display(),
                published = c.skills().count(),
                refused = c.refused().count(),
                "serving"
            );
        })
        .map_err(|(_, message)| io::Error::other(message))
}

/// Everyone to tell about changes.
#[derive(Debug, Default)]
struct Listeners {
    /// Sessions from `initialize`: their peer and the URIs they subscribed to.
    sessions: Vec<Arc<Session>>,
    /// 2026-07-28 `subscriptions/listen` streams, by a local id.
    streams: BTreeMap<u64, SubscriptionSink>,
    next_stream: u64,
}

type Shared = Arc<Mutex<Listeners>>;

impl Listeners {
    fn shared() -> Shared {
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
struct Handler {
    server: SkillServer,
    listeners: Shared,
    session: Arc<Session>,
}

impl Handler {
    fn new(server: SkillServer, listeners: Shared) -> Handler {
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
        let server = self.server.clone();
        let result = tokio::task::spawn_blocking(move || server.call(method, &params))
            .await
            .map_err(|e| ErrorData::internal_error(format!("{method} failed: {e}"), None))?
            .map_err(rpc_error)?;
        serde_json::from_value(result).map_err(|e| {
            ErrorData::internal_error(format!("{method}: cannot build the result: {e}"), None)
        })
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
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, ErrorData> {
        // One page: the whole catalog (entries are never split, SEP-2640).
        self.call("skills/list", json!({})).await
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
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.call("resources/list", json!({})).await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.call::<ReadResourceResult>("resources/read", json!({"uri": request.uri}))
            .await
            .map(ReadResourceResponse::Complete)
    }

    async fn read_resource_directory(
        &self,
        request: ReadResourceDirectoryRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.call("resources/directory/read", json!({"uri": request.uri}))
            .await
    }

    #[allow(deprecated)] // the legacy (pre-2026-07-28) subscription, for `initialize` peers
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        lock(&self.session.subscribed).insert(request.uri);
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
        Some(requested.clone())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let id = {
            let mut l = lock(&self.listeners);
            let id = l.next_stream;
            l.next_stream += 1;
            l.streams.insert(id, context.sink().clone());
            id
        };
        context.cancelled().await;
        lock(&self.listeners).streams.remove(&id);
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
async fn watch(server: SkillServer, listeners: Shared, every: Duration) {
    loop {
        tokio::time::sleep(every).await;
        let scanned = {
            let server = server.clone();
            tokio::task::spawn_blocking(move || server.changes()).await
        };
        match scanned {
            Ok(Ok(changes)) if changes != Changes::default() => notify(&listeners, &changes).await,
            Ok(Ok(_)) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "cannot scan the served folder"),
            Err(e) => tracing::warn!(error = %e, "the folder scan failed"),
        }
    }
}

/// Sends `changes` to every live listener, dropping the ones that are gone. A skillcache host
/// marks the affected entries stale on either notification (R-B5).
async fn notify(listeners: &Shared, changes: &Changes) {
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
        // A peer that went away mid-send is dropped at the next change.
        if changes.list_changed {
            let _ = peer.notify_resource_list_changed().await;
        }
        for uri in subscribed {
            let _ = peer
                .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                .await;
        }
    }
    for sink in streams {
        let accepted = sink.accepted().clone();
        if changes.list_changed && accepted.resources_list_changed == Some(true) {
            let _ = sink.notify_resource_list_changed().await;
        }
        for uri in accepted.resource_subscriptions.iter().flatten() {
            if changes.uris.contains(uri) {
                let _ = sink.notify_resource_updated(uri.clone()).await;
            }
        }
    }
}
