//! [`McpSource`]: a [`SkillSource`] over `rmcp`, the official Rust MCP SDK — a stdio child
//! process or a Streamable HTTP server.
//!
//! The lifecycle prefers protocol revision 2026-07-28, the one SEP-2640 is written against: the
//! client sends `server/discover` and, from then on, self-contained per-request metadata
//! (revision, client info and capabilities in each request's `_meta`; rmcp adds them to our
//! custom requests too). A server that answers `server/discover` with a JSON-RPC error (the
//! official TS server over stdio: "Method not found"), or does not answer it within rmcp's probe
//! time (10 s; a connect deadline shorter than that leaves no room for the handshake), gets the
//! `initialize` handshake of 2025-11-25 instead. Some servers (`FastMCP`) declare the skills
//! extension only in the modern flow, so the order matters. The revision that was negotiated is
//! [`McpSource::protocol_version`].
//!
//! `skills/list`, `skills/get` and `resources/read` are sent as custom requests only after the
//! server declared both `io.modelcontextprotocol/skills` and `resources` (the spec's order).
//! rmcp decodes each response into its own typed model first; skillcache re-serialises it and
//! validates that JSON by its own, stricter rules. rmcp's only relaxations on the way are benign
//! (a negative `ttlMs` becomes 0, an empty `cacheScope` absent), and a response its typed model
//! refuses reaches us as raw JSON or as an empty object — which our parsers then refuse: it fails
//! closed either way.

use std::sync::{Arc, Mutex};

use rmcp::model::{
    ClientCapabilities, ClientConfig, ClientRequest, CustomRequest, ExtensionCapabilities,
    Implementation, ProtocolVersion, ResourceUpdatedNotificationParam, ServerResult,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt as _, NotificationContext, Peer, RoleClient,
    RunningService, ServiceError,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

use super::broken::{self, Place};
use super::stdio::{ChildEnd, ChildTransport, EndSlot, Exit, child_end};
use super::{Change, OnChange, SKILLS_EXTENSION, SkillSource, SourceFuture, message_bound};
use crate::entry::Limits;
use crate::error::{Error, Rule};

/// How to reach the server.
enum Target {
    /// A command the host built; spawned again for each connection attempt.
    Stdio(Mutex<tokio::process::Command>),
    /// A Streamable HTTP endpoint, and the headers sent with every request (a host
    /// configuration's `headers`, such as `Authorization`).
    Http(String, http::HeaderMap),
    /// A transport the host opened, served on the first request; used once.
    Transport(Mutex<Option<Starter>>),
    /// A session the host already holds and initialised.
    Peer(Peer<RoleClient>),
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Stdio(c) => f.debug_tuple("Stdio").field(c).finish(),
            // Header values are credentials: their names only.
            Target::Http(url, headers) => f
                .debug_tuple("Http")
                .field(url)
                .field(&headers.keys().collect::<Vec<_>>())
                .finish(),
            Target::Transport(_) => f.write_str("Transport"),
            Target::Peer(_) => f.write_str("Peer"),
        }
    }
}

/// Runs the lifecycle (`server/discover`, or `initialize`) over a host's transport with our
/// handler.
type Starter = Box<
    dyn FnOnce(
            Handler,
        ) -> std::pin::Pin<
            Box<
                dyn Future<
                        Output = Result<
                            RunningService<RoleClient, Handler>,
                            rmcp::service::ClientInitializeError,
                        >,
                    > + Send,
            >,
        > + Send,
>;

/// A live connection and what its transport says when it ends.
struct Connection {
    peer: Peer<RoleClient>,
    /// The protocol revision negotiated by `server/discover` or `initialize`.
    revision: String,
    /// The session we run (none for a host's peer): dropping it ends the session.
    _service: Option<RunningService<RoleClient, Handler>>,
    ended: EndSlot,
    /// How a child process ended (stdio only), for an error that says so.
    exit: Option<Exit>,
    /// At 2026-07-28, the `subscriptions/listen` stream that carries the server's change
    /// notifications (R-B5); aborted with the connection.
    _listen: Option<AbortOnDrop>,
}

/// A task that ends when its owner drops.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// At 2026-07-28 a server sends change notifications only on a `subscriptions/listen` stream the
/// client opened (the handshake revision sends them on the session itself, where `Handler`
/// hears them). Opens one for `resources/list_changed` and forwards what arrives to the cache
/// (R-B5). Best effort: a server that refuses the stream still serves, and the cache then relies
/// on `ttlMs` alone — as it does for a server without notifications.
async fn listen(peer: &Peer<RoleClient>, handler: Handler) -> Option<AbortOnDrop> {
    let filter = rmcp::model::SubscriptionFilter::builder()
        .resources_list_changed()
        .build();
    let mut subscription = match peer.listen(filter).await {
        Ok(s) => s,
        Err(e) => {
            tracing::debug!(error = %e, "subscriptions/listen refused: change notifications are off");
            return None;
        }
    };
    Some(AbortOnDrop(tokio::spawn(async move {
        while let Ok(Some(note)) = subscription.next().await {
            match note {
                rmcp::model::ServerNotification::ResourceListChangedNotification(_) => {
                    handler.tell(Change::ListChanged);
                }
                rmcp::model::ServerNotification::ResourceUpdatedNotification(n) => {
                    handler.tell(Change::Updated { uri: n.params.uri });
                }
                _ => {}
            }
        }
    })))
}

/// An MCP server, connected on the first request that needs it (R-B4).
///
/// Constructing one starts nothing and contacts nobody: a warm load of a fresh entry never
/// reaches the server. The first request spawns the child (or opens the HTTP session), runs
/// the lifecycle (`server/discover`, falling back to `initialize`) and checks the server's
/// capabilities. A connection attempt that fails or is
/// abandoned (a deadline) leaves the source unconnected, so the next request tries again.
///
/// ```
/// use skillcache::source::McpSource;
/// // Nothing is started: the command would fail only when a request needs the server.
/// let mut command = tokio::process::Command::new("/nonexistent/server");
/// command.arg("--flag").env("SERVER_LOG", "quiet");
/// let source = McpSource::stdio(command);
/// assert!(source.protocol_version().is_none());
/// ```
pub struct McpSource {
    target: Target,
    max_message: usize,
    connection: tokio::sync::OnceCell<Connection>,
    on_change: Arc<Mutex<Option<OnChange>>>,
}

impl std::fmt::Debug for McpSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpSource")
            .field("target", &self.target)
            .field("max_message", &self.max_message)
            .field("connected", &self.connection.initialized())
            .finish_non_exhaustive()
    }
}

/// Hands `change` to the cache watching the source, if one does (R-B5): from our own session's
/// handler and from [`McpSource::notify`] alike. The sink is called after the lock is released,
/// so a sink that calls back into the source cannot deadlock on it.
fn tell(on_change: &Mutex<Option<OnChange>>, change: Change) {
    let sink = on_change
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    if let Some(sink) = sink {
        sink(change);
    }
}

/// Our side of the session: who we are, and where change notifications go (R-B5).
struct Handler {
    info: ClientConfig,
    on_change: Arc<Mutex<Option<OnChange>>>,
}

impl Handler {
    fn tell(&self, change: Change) {
        tell(&self.on_change, change);
    }
}

impl rmcp::ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.tell(Change::Updated { uri: params.uri });
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tell(Change::ListChanged);
    }
}

fn client_info() -> ClientConfig {
    // Declare the extension on our side too, so servers that gate on it know we speak it.
    let mut extensions = ExtensionCapabilities::new();
    extensions.insert(SKILLS_EXTENSION.to_owned(), serde_json::Map::new());
    let mut capabilities = ClientCapabilities::default();
    capabilities.extensions = Some(extensions);
    let mut info = ClientConfig::default();
    info.capabilities = capabilities;
    info.client_info = Implementation::new("skillcache", env!("CARGO_PKG_VERSION"));
    info
}

fn transport_err(
    method: &str,
) -> impl FnOnce(Box<dyn std::error::Error + Send + Sync>) -> Error + '_ {
    move |source| {
        Error::Source(crate::error::SourceError::Transport {
            origin: None,
            method: method.to_owned(),
            source,
        })
    }
}

fn bound_for(limits: &Limits) -> usize {
    usize::try_from(message_bound(limits)).unwrap_or(usize::MAX)
}

impl McpSource {
    /// A server spawned from `command`, spoken to over its stdin and stdout. The host builds the
    /// command as it likes (program, arguments, environment, working folder, stderr); the source
    /// takes over stdin and stdout (piped: the MCP stream, read within the message bound, R-B2)
    /// and kills the child when the source is dropped. Nothing is started until a request needs
    /// the server (R-B4); a connection attempt that fails spawns the command again next time.
    ///
    /// A command whose stderr is [`Stdio::piped()`](std::process::Stdio::piped) hands it to
    /// skillcache: every byte goes on to this process's stderr as it arrives, and when the server
    /// exits before answering, the error names its last stderr line ("the server exited before
    /// answering (exit status 1); its last stderr line: …"). Inherited (the default), discarded
    /// or sent to a file, it is the host's alone.
    #[must_use]
    pub fn stdio(command: tokio::process::Command) -> McpSource {
        McpSource::new(Target::Stdio(Mutex::new(command)))
    }

    /// A Streamable HTTP MCP endpoint. Nothing is contacted until a request needs the server.
    #[must_use]
    pub fn http(url: &str) -> McpSource {
        McpSource::new(Target::Http(url.to_owned(), http::HeaderMap::new()))
    }

    /// A server over any rmcp client transport the host opened (a socket, an in-process duplex,
    /// a custom framing). The lifecycle (`server/discover`, falling back to `initialize`) runs on
    /// the first request, with skillcache's own client handler (so change notifications reach
    /// the cache, R-B5), and the server's capabilities are checked. The transport is used once: if that first connection fails, later requests
    /// fail too, and the host makes a new source. The message bound is the transport's to
    /// enforce.
    #[must_use]
    pub fn from_transport<T, E, A: 'static>(transport: T) -> McpSource
    where
        T: rmcp::transport::IntoTransport<RoleClient, E, A> + Send + 'static,
        E: std::error::Error + Send + Sync + 'static,
    {
        let start: Starter = Box::new(move |handler: Handler| {
            Box::pin(handler.serve_with_lifecycle(transport, lifecycle()))
        });
        McpSource::new(Target::Transport(Mutex::new(Some(start))))
    }

    /// A session the host already holds: requests go through `peer`, which the host keeps
    /// running. Its capabilities are checked on the first request, as for any source. The
    /// session's notifications reach the host's own handler, not the cache: a host that wants
    /// them to mark entries stale (R-B5) forwards them with [`McpSource::notify`].
    #[must_use]
    pub fn from_peer(peer: Peer<RoleClient>) -> McpSource {
        McpSource::new(Target::Peer(peer))
    }

    /// Reports a change notification the host received for this source's server to the cache
    /// watching it (R-B5), as if the source had received it: for [`McpSource::from_peer`], whose
    /// notifications go to the host's handler.
    pub fn notify(&self, change: Change) {
        tell(&self.on_change, change);
    }

    fn new(target: Target) -> McpSource {
        McpSource {
            target,
            max_message: bound_for(&Limits::BASELINE),
            connection: tokio::sync::OnceCell::new(),
            on_change: Arc::default(),
        }
    }

    /// Sets the message bound from the host's limits (twice `max_total_bytes` plus room for the envelope); the default follows
    /// the baseline, [`Limits::default`]. A host that raises its limits must raise this with them.
    #[must_use]
    pub fn limits(mut self, limits: &Limits) -> McpSource {
        self.max_message = bound_for(limits);
        self
    }

    internal_pub! {
        /// Sets the message bound in bytes directly (tests and special hosts).
        #[must_use]
        fn max_message_bytes(mut self, max: usize) -> McpSource {
            self.max_message = max;
            self
        }
    }

    /// The MCP protocol revision negotiated with the server (`"2026-07-28"` through
    /// `server/discover`, or what the server answered to `initialize`, e.g. `"2025-11-25"`), once
    /// connected; `None` while the source has not contacted the server (a warm load of fresh
    /// entries never does, R-B4).
    ///
    /// ```
    /// use skillcache::source::McpSource;
    /// let source = McpSource::http("http://127.0.0.1:9/mcp");
    /// assert_eq!(source.protocol_version(), None);
    /// ```
    #[must_use]
    pub fn protocol_version(&self) -> Option<&str> {
        self.connection.get().map(|c| c.revision.as_str())
    }

    async fn connection(&self) -> Result<&Connection, Error> {
        self.connection.get_or_try_init(|| self.open()).await
    }

    async fn open(&self) -> Result<Connection, Error> {
        let ended = EndSlot::default();
        let handler = Handler {
            info: client_info(),
            on_change: Arc::clone(&self.on_change),
        };
        let mut exit = None;
        let started = match &self.target {
            Target::Stdio(command) => {
                let (transport, watch) = self.spawn(command, &ended)?;
                exit = Some(watch);
                handler.serve_with_lifecycle(transport, lifecycle()).await
            }
            Target::Http(url, headers) => {
                // rmcp's HTTP client reads bodies and SSE events within these bounds, refusing
                // more while reading (R-B2).
                let config = StreamableHttpClientTransportConfig::with_uri(url.clone())
                    .custom_headers(
                        headers
                            .iter()
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect(),
                    )
                    .max_json_response_size(self.max_message)
                    .max_sse_event_size(self.max_message);
                handler
                    .serve_with_lifecycle(
                        StreamableHttpClientTransport::from_config(config),
                        lifecycle(),
                    )
                    .await
            }
            Target::Transport(start) => {
                let start = start
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .take()
                    .ok_or_else(|| {
                        transport_err("connect")(
                            "the host's transport was used by an earlier connection attempt".into(),
                        )
                    })?;
                start(handler).await
            }
            Target::Peer(peer) => {
                let revision = checked(peer)?;
                return Ok(Connection {
                    peer: peer.clone(),
                    revision,
                    _service: None,
                    ended,
                    exit: None,
                    // The host's session: its notifications reach the host's own handler, which
                    // forwards them with `notify`.
                    _listen: None,
                });
            }
        };
        let service = match started {
            Ok(service) => service,
            Err(e) => {
                if let Some(why) = ended_reason(&ended) {
                    return Err(ended_error("initialize", why));
                }
                let end = exited(exit.as_mut()).await;
                let why = broken::handshake(&e, &self.place(), &end);
                return Err(transport_err("initialize")(Box::new(why)));
            }
        };
        self.connected(service, ended, exit).await
    }

    /// What the source talks to, for an error's words.
    fn place(&self) -> Place {
        match &self.target {
            Target::Stdio(_) => Place::Child,
            Target::Http(url, _) => Place::Http(url.clone()),
            Target::Transport(_) | Target::Peer(_) => Place::Host,
        }
    }

    /// Starts the host's command for a stdio connection, with our bounded framing.
    fn spawn(
        &self,
        command: &Mutex<tokio::process::Command>,
        ended: &EndSlot,
    ) -> Result<(ChildTransport, Exit), Error> {
        let mut command = command
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        ChildTransport::spawn(&mut command, self.max_message, Arc::clone(ended)).map_err(|e| {
            let program = command.as_std().get_program().to_owned();
            transport_err("connect")(
                format!(
                    "cannot start {}: {}",
                    crate::display::SafePath(std::path::Path::new(&program)),
                    e
                )
                .into(),
            )
        })
    }

    /// A running session, checked, and listening for changes when it speaks 2026-07-28.
    async fn connected(
        &self,
        service: RunningService<RoleClient, Handler>,
        ended: EndSlot,
        exit: Option<Exit>,
    ) -> Result<Connection, Error> {
        let revision = checked(service.peer())?;
        let modern = service
            .peer()
            .peer_info()
            .is_some_and(|i| !i.protocol_version.has_initialize());
        let listen = if modern {
            let listener = Handler {
                info: client_info(),
                on_change: Arc::clone(&self.on_change),
            };
            listen(service.peer(), listener).await
        } else {
            None
        };
        Ok(Connection {
            peer: service.peer().clone(),
            revision,
            _service: Some(service),
            ended,
            exit,
            _listen: listen,
        })
    }

    async fn call(&self, method: &'static str, params: Value) -> Result<Value, Error> {
        let connection = self.connection().await?;
        let request = ClientRequest::CustomRequest(CustomRequest::new(method, Some(params)));
        match connection.peer.send_request(request).await {
            Ok(result) => Ok(result_json(result)),
            Err(ServiceError::McpError(e)) => {
                Err(Error::Source(crate::error::SourceError::Server {
                    origin: None,
                    uri: None,
                    method: method.to_owned(),
                    code: i64::from(e.code.0),
                    message: e.message.into_owned(),
                }))
            }
            Err(e) => {
                if let Some(why) = ended_reason(&connection.ended) {
                    return Err(ended_error(method, why));
                }
                let end = exited(connection.exit.clone().as_mut()).await;
                let why = broken::request(&e, &self.place(), &end);
                Err(transport_err(method)(Box::new(why)))
            }
        }
    }

    /// A Streamable HTTP MCP endpoint sent `headers` (name, value) with every request: an MCP
    /// host configuration's `headers`, such as `Authorization`. Otherwise as [`McpSource::http`]:
    /// nothing is contacted until a request needs the server, a lost session is reopened, and
    /// the message bound follows [`McpSource::limits`].
    ///
    /// # Errors
    /// [`ConfigError::Invalid`](crate::error::ConfigError::Invalid) for a URL that is not an
    /// `http://` or `https://` URL with a host ([`http_url_problem`](super::http_url_problem)),
    /// and for a header name or value HTTP does not allow.
    pub fn http_with_headers(url: &str, headers: &[(String, String)]) -> Result<McpSource, Error> {
        if let Some(why) = super::http_url_problem(url) {
            return Err(Error::Config(crate::error::ConfigError::Invalid {
                what: format!("URL {}: {why}", crate::display::display_cut_bare(url)),
            }));
        }
        let mut map = http::HeaderMap::new();
        for (name, value) in headers {
            let bad = |what: &str| {
                Error::Config(crate::error::ConfigError::Invalid {
                    what: format!("HTTP header {name:?}: not a valid header {what}"),
                })
            };
            map.insert(
                http::HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad("name"))?,
                http::HeaderValue::from_str(value).map_err(|_| bad("value"))?,
            );
        }
        Ok(McpSource::new(Target::Http(url.to_owned(), map)))
    }
}

/// How the child ended, when the source has one and it ends within a moment: a closed pipe comes
/// a moment before the exit status.
async fn exited(exit: Option<&mut Exit>) -> ChildEnd {
    match exit {
        Some(exit) => child_end(exit, std::time::Duration::from_secs(2)).await,
        None => ChildEnd::default(),
    }
}

fn ended_reason(slot: &EndSlot) -> Option<super::stdio::Ended> {
    *slot
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn ended_error(method: &str, why: super::stdio::Ended) -> Error {
    match why {
        super::stdio::Ended::TooLarge { max } => {
            Error::Source(crate::error::SourceError::MessageTooLarge {
                origin: None,
                method: method.to_owned(),
                max: max as u64,
            })
        }
        super::stdio::Ended::MidMessage { .. } | super::stdio::Ended::TooManyValues { .. } => {
            transport_err(method)(Box::new(why))
        }
    }
}

/// How every session we open starts: `server/discover` at 2026-07-28 first, the `initialize`
/// handshake at 2025-11-25 for a server that refuses or ignores it.
fn lifecycle() -> ClientLifecycleMode {
    ClientLifecycleMode::Auto {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
    }
}

/// Skills calls go out only to a server that declared both the extension and `resources`;
/// returns the negotiated revision.
fn checked(peer: &Peer<RoleClient>) -> Result<String, Error> {
    let info = peer.peer_info();
    let caps = info.as_ref().map(|i| &i.capabilities);
    let revision = info.as_ref().map(|i| i.protocol_version.clone());
    // The capabilities came from whichever lifecycle step ran: name it in the error.
    let method = if revision
        .as_ref()
        .is_some_and(ProtocolVersion::has_initialize)
    {
        "initialize"
    } else {
        "server/discover"
    };
    let fail = |missing| {
        Err(Error::Entry(crate::error::EntryError::Response {
            origin: None,
            method,
            rule: Rule::Capability { missing },
        }))
    };
    if !caps.is_some_and(rmcp::model::ServerCapabilities::supports_skills) {
        return fail("the io.modelcontextprotocol/skills extension");
    }
    if caps.is_none_or(|c| c.resources.is_none()) {
        return fail("the resources capability");
    }
    Ok(revision.map(|r| r.to_string()).unwrap_or_default())
}

fn result_json(result: ServerResult) -> Value {
    match result {
        ServerResult::CustomResult(raw) => raw.0,
        other => serde_json::to_value(other).unwrap_or(Value::Null),
    }
}

impl SkillSource for McpSource {
    fn list_skills<'a>(&'a self, cursor: Option<&'a str>) -> SourceFuture<'a> {
        Box::pin(async move {
            let params = cursor.map_or_else(|| json!({}), |c| json!({"cursor": c}));
            self.call("skills/list", params).await
        })
    }

    fn get_skill<'a>(&'a self, uri: &'a str) -> SourceFuture<'a> {
        Box::pin(self.call("skills/get", json!({"uri": uri})))
    }

    fn read_resource<'a>(&'a self, uri: &'a str) -> SourceFuture<'a> {
        Box::pin(self.call("resources/read", json!({"uri": uri})))
    }

    fn ready(&self) -> SourceFuture<'_, ()> {
        Box::pin(async move { self.connection().await.map(|_| ()) })
    }

    fn watch(&self, on_change: OnChange) {
        // Replaced, never added to: one cache watches a source.
        *self
            .on_change
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(on_change);
    }
}
