//! The shared tier on an object store (feature `l2`): S3 and S3-compatible stores through
//! `object_store`, or any `ObjectStore` a host builds. What the tier promises and what it may
//! never do is in the parent module; this is the store behind it: keys, deadlines, conditional
//! creates, claims.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use object_store::path::Path;
use object_store::{GetOptions, ObjectStore, ObjectStoreExt as _, PutMode, PutOptions, PutPayload};

use super::{BlobTier, TierFuture};
use crate::entry::ManifestFile;
use crate::error::{Error, Mismatch};
use crate::origin::Origin;
use crate::stats::{Counter, Counters};
use crate::verify::VerifiedBytes;

/// How long a tier that missed a deadline or failed is left alone before it is tried again.
const RETRY_AFTER: Duration = Duration::from_secs(30);

/// How many late answers in a row leave the tier alone even while it answers other requests.
const LATE_IN_A_ROW: u32 = 3;

/// How many times one request is sent again after a throttling or server-error answer, or a
/// connection that failed before an answer.
const RETRIES: u32 = 3;
/// The ceiling of the first pause before a retry; it doubles for each retry after it.
const RETRY_PAUSE: Duration = Duration::from_millis(50);

/// A shared tier for a fleet of hosts: an object store and a key prefix (feature `l2`).
///
/// Give it to [`SkillCacheBuilder::l2`](crate::SkillCacheBuilder::l2). Only files of
/// entries the server marked `cacheScope: public` are read from it or written to it; every
/// byte read from it is verified against the entry this host holds before it is used; and a
/// tier that does not answer within [`L2::timeout`] is skipped, never waited for.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use skillcache::L2;
///
/// // Any object store: S3 from a URL and the `AWS_*` environment, or one the host builds.
/// let tier = L2::new(Arc::new(object_store::memory::InMemory::new()), "fleet/skills")?
///     .timeout(Duration::from_millis(500));
/// assert_eq!(tier.prefix(), "fleet/skills");
/// # Ok::<(), skillcache::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct L2 {
    store: Arc<dyn ObjectStore>,
    prefix: String,
    timeout: Duration,
    claim_wait: Duration,
}

impl L2 {
    /// The default deadline of one operation on the tier: 2 s.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);
    /// The default longest wait for a file another host claimed: 5 s.
    pub const DEFAULT_CLAIM_WAIT: Duration = Duration::from_secs(5);

    /// A tier on `store`, with every key under `prefix` (`""` for the store's root).
    ///
    /// # Errors
    /// [`Error::L2Config`] for a prefix that is not a valid object path (an empty segment,
    /// `.` or `..`, a control character).
    pub fn new(store: Arc<dyn ObjectStore>, prefix: &str) -> Result<L2, Error> {
        let trimmed = prefix.trim_matches('/');
        if !trimmed.is_empty() {
            Path::parse(trimmed).map_err(|e| Error::L2Config {
                location: prefix.to_owned(),
                problem: "the prefix is not a valid object path".into(),
                source: Some(Box::new(e)),
            })?;
        }
        Ok(L2 {
            store,
            prefix: trimmed.to_owned(),
            timeout: L2::DEFAULT_TIMEOUT,
            claim_wait: L2::DEFAULT_CLAIM_WAIT,
        })
    }

    /// An S3 (or S3-compatible) tier from `s3://bucket/prefix`, configured from the standard
    /// `AWS_*` environment: `AWS_ENDPOINT_URL` (or `AWS_ENDPOINT`) for a store other than
    /// AWS, `AWS_ALLOW_HTTP=true` for a plain-HTTP one, `AWS_REGION` or `AWS_DEFAULT_REGION`,
    /// and credentials (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, or
    /// the instance's role).
    ///
    /// # Errors
    /// [`Error::L2Config`] for a URL that is not `s3://` (or `s3a://`) with a bucket, or a
    /// configuration the S3 client refuses.
    pub fn from_url(url: &str) -> Result<L2, Error> {
        L2::from_url_with(url, std::iter::empty::<(&str, &str)>())
    }

    /// [`L2::from_url`] with explicit settings that take precedence over the environment,
    /// named like the variables in lower case (`aws_endpoint_url`, `aws_allow_http`,
    /// `aws_region`, `aws_access_key_id`, …).
    ///
    /// # Errors
    /// As [`L2::from_url`]; also a setting name the S3 client does not know.
    pub fn from_url_with<'a>(
        url: &str,
        settings: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<L2, Error> {
        use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
        let refused = |problem: &str, source: Option<Box<dyn std::error::Error + Send + Sync>>| {
            Error::L2Config {
                location: url.to_owned(),
                problem: problem.to_owned(),
                source,
            }
        };
        let rest = url
            .strip_prefix("s3://")
            .or_else(|| url.strip_prefix("s3a://"))
            .ok_or_else(|| {
                refused(
                    "only s3:// URLs are read here; build any other object store and pass it to L2::new",
                    None,
                )
            })?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(refused(
                "the URL names no bucket (s3://bucket/prefix)",
                None,
            ));
        }
        // No timeouts of the client's own: every request is bounded by the tier's deadline for
        // its operation (`L2::timeout`, which a host may set after this), and a fixed one here
        // would undercut a longer deadline (a crowded store that accepts connections slowly).
        let client = object_store::ClientOptions::new()
            .with_timeout_disabled()
            .with_connect_timeout_disabled();
        // No retries inside the S3 client: the tier retries throttling and server errors
        // itself, jittered and within its own deadline (`Tier::call_until`), for any store. The
        // client's own first pause is a fixed 100 ms (a fleet throttled at once would retry in
        // step) and its budget knows nothing of `L2::timeout`.
        let retry = object_store::RetryConfig {
            max_retries: 0,
            retry_timeout: L2::DEFAULT_TIMEOUT,
            ..object_store::RetryConfig::default()
        };
        // Client options first: the environment and the settings then change single fields
        // of them (`AWS_ALLOW_HTTP`), where replacing them afterwards would drop those.
        let mut builder = AmazonS3Builder::new()
            .with_client_options(client)
            .with_retry(retry);
        let env = std::env::vars().filter(|(k, _)| k.starts_with("AWS_"));
        for (name, value) in env {
            // As `AmazonS3Builder::from_env`: variables it does not know are not its own.
            if let Ok(key) = name.to_ascii_lowercase().parse::<AmazonS3ConfigKey>() {
                builder = builder.with_config(key, value);
            }
        }
        for (name, value) in settings {
            let key: AmazonS3ConfigKey = name.parse().map_err(|e: object_store::Error| {
                refused(&format!("unknown setting {name:?}"), Some(Box::new(e)))
            })?;
            builder = builder.with_config(key, value);
        }
        let store = builder
            .with_bucket_name(bucket)
            .build()
            .map_err(|e| refused("the S3 client refused its configuration", Some(Box::new(e))))?;
        L2::new(Arc::new(store), prefix)
    }

    /// The deadline of one operation on the tier (a whole get, its body included; a claim;
    /// a put). The file whose operation misses it comes from the server. A tier that answers
    /// nothing within it, or misses it three times in a row, is then skipped for 30 s, with one
    /// warning; one that answers this host's other requests meanwhile (a crowded store) stays
    /// in use. Default: [`L2::DEFAULT_TIMEOUT`] (2 s).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> L2 {
        self.timeout = timeout;
        self
    }

    /// How long a host that misses a file another host has claimed waits for that host's
    /// object before it asks the server itself. When a fleet starts cold at once, the first
    /// host to miss a file claims it (a small marker under `<prefix>/claims/`, created
    /// conditionally) and the others poll for its object, so the server sees each file about
    /// once instead of once per host. A claim is only a hint: one left by a host that died
    /// costs the others this wait once, then they read from the server and clear it.
    /// Default: [`L2::DEFAULT_CLAIM_WAIT`] (5 s); zero turns claims off.
    #[must_use]
    pub fn claim_wait(mut self, wait: Duration) -> L2 {
        self.claim_wait = wait;
        self
    }

    /// The key prefix, without leading or trailing `/`.
    #[must_use]
    pub fn prefix(&self) -> &str {
        &self.prefix
    }
}

/// The opened tier: the host's [`L2`] and whether it is answering.
#[derive(Debug)]
pub(crate) struct Tier {
    config: L2,
    /// Until when the tier is skipped after it missed a deadline or failed.
    down_until: Mutex<Option<Instant>>,
    /// A put the store refused (read-only credentials, no conditional create) is said once.
    put_warned: AtomicBool,
    /// Until when claim markers are not waited on: a claim whose object never came makes
    /// every claim suspect (a crashed host, or a writer who planted markers for every blob),
    /// so a cold load pays at most one `claim_wait` per [`RETRY_AFTER`], not one per blob.
    claims_off_until: Mutex<Option<Instant>>,
    /// When the store last answered one of this host's requests (any answer, "not found"
    /// included): a late answer while the store answers others is a crowded store, not a
    /// dead one (see [`Tier::late`]).
    answered_at: Mutex<Option<Instant>>,
    /// Late answers since the store last answered.
    late_in_a_row: AtomicU32,
}

/// Whether the window in `until` is still open; a passed window is cleared.
fn until_passed(until: &Mutex<Option<Instant>>) -> bool {
    let mut window = until
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    match *window {
        Some(end) if Instant::now() < end => true,
        Some(_) => {
            *window = None;
            false
        }
        None => false,
    }
}

/// What a get found.
enum Fetched {
    /// At most the entry's size in bytes, not yet hashed.
    Bytes(Vec<u8>),
    /// No such object.
    Missing,
    /// The object's size is not the entry's (nothing or not all of it was read).
    Rejected(Mismatch),
    /// The tier did not answer in time, failed, or is being left alone.
    Unavailable,
}

/// What a claim found.
enum Claim {
    /// This host fetches the file from the server and publishes it.
    Won,
    /// Another host claimed it: wait for its object.
    Taken,
    /// Claims are off, or the tier did not take the claim: ask the server.
    Unavailable,
}

/// What a put did.
enum Put {
    Created,
    /// Another host created it first (or it was there before): not an error.
    Exists,
    Unavailable,
}

/// A failed or late operation.
enum Failure {
    NotFound,
    AlreadyExists,
    Down,
}

impl Tier {
    pub(crate) fn new(config: L2) -> Tier {
        Tier {
            config,
            down_until: Mutex::new(None),
            put_warned: AtomicBool::new(false),
            claims_off_until: Mutex::new(None),
            answered_at: Mutex::new(None),
            late_in_a_row: AtomicU32::new(0),
        }
    }

    /// The store answered a request: it is up, whatever the answer said.
    fn answered(&self) {
        *self
            .answered_at
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Instant::now());
        self.late_in_a_row.store(0, Ordering::Relaxed);
    }

    /// A request missed its deadline. A store that finished another of this host's requests
    /// while this one waited, or within one deadline before it was sent, is up but crowded —
    /// a fleet starting cold at once is exactly when its store is busiest — so this one file
    /// is asked of the server and the tier stays in use; leaving it alone for [`RETRY_AFTER`]
    /// would send every other file of that window to the server too. A store that finished
    /// nothing in that time, or missed [`LATE_IN_A_ROW`] deadlines in a row, is left alone as
    /// one that fails is: a store that never answers costs a load one deadline, and one that
    /// stops answering mid-sweep at most two (the second finds the last answer two deadlines
    /// old), never one per file.
    fn late(&self, op: &'static str, key: &Path) {
        let in_a_row = self.late_in_a_row.fetch_add(1, Ordering::Relaxed) + 1;
        let answering = self
            .answered_at
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is_some_and(|at| at.elapsed() < self.config.timeout * 2);
        if answering && in_a_row < LATE_IN_A_ROW {
            tracing::debug!(op, %key, timeout = ?self.config.timeout, in_a_row, "the shared tier (l2) answered others but not this request in time; this file comes from the server");
        } else {
            self.mark_down(
                op,
                key,
                &format_args!("no answer within {:?}", self.config.timeout),
            );
        }
    }

    fn is_down(&self) -> bool {
        until_passed(&self.down_until)
    }

    /// Whether claims are being ignored after one ran out (see `claims_off_until`).
    fn claims_off(&self) -> bool {
        until_passed(&self.claims_off_until)
    }

    /// Stops waiting on claims for [`RETRY_AFTER`]: one claimed object did not come in time.
    fn distrust_claims(&self) {
        let mut off = self
            .claims_off_until
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if off.is_none() {
            tracing::warn!(retry_after = ?RETRY_AFTER, "a claimed shared-tier (l2) object never came; claims are ignored for a while");
        }
        *off = Some(Instant::now() + RETRY_AFTER);
    }

    /// Leaves the tier alone for [`RETRY_AFTER`]; the first failure of an outage is a warning.
    fn mark_down(&self, op: &'static str, key: &Path, why: &dyn std::fmt::Display) {
        let mut down = self
            .down_until
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if down.is_none() {
            tracing::warn!(op, %key, error = %why, retry_after = ?RETRY_AFTER, "the shared tier (l2) is unavailable; loading from the server");
        } else {
            tracing::debug!(op, %key, error = %why, "the shared tier (l2) is still unavailable");
        }
        *down = Some(Instant::now() + RETRY_AFTER);
    }

    /// Runs one store request under the deadline of one operation (see [`Tier::call_until`]).
    async fn call<T, F>(
        &self,
        op: &'static str,
        key: &Path,
        counters: &Counters,
        send: impl FnMut() -> F,
    ) -> Result<T, Failure>
    where
        F: Future<Output = object_store::Result<T>>,
    {
        let deadline = tokio::time::Instant::now() + self.config.timeout;
        self.call_until(op, key, deadline, counters, send).await
    }

    /// Sends one store request under `deadline` (the whole operation's: a get and every chunk
    /// of its body share one). An answer that asks this host to slow down or is a server error
    /// (`503 SlowDown`, `429`, `5xx`), or a connection that failed before an answer, is sent
    /// again, at most [`RETRIES`] times, each after a jittered pause that must end before the
    /// deadline: a throttled or crowded store costs a few short pauses, never a wait past
    /// [`L2::timeout`]. A late or failed request marks the tier down.
    async fn call_until<T, F>(
        &self,
        op: &'static str,
        key: &Path,
        deadline: tokio::time::Instant,
        counters: &Counters,
        mut send: impl FnMut() -> F,
    ) -> Result<T, Failure>
    where
        F: Future<Output = object_store::Result<T>>,
    {
        let mut retries = 0;
        loop {
            let answer = tokio::time::timeout_at(deadline, send()).await;
            if let Ok(Err(e)) = &answer
                && transient(e)
                && let Some(pause) = pause_before_retry(retries, deadline)
            {
                retries += 1;
                counters.bump(Counter::L2Retries);
                tracing::debug!(op, %key, error = %e, ?pause, retry = retries, "the shared tier (l2) was busy or dropped the request; trying again");
                tokio::time::sleep(pause).await;
                continue;
            }
            let settled = self.settle(op, key, answer);
            // Only a finished operation shows the store is answering: a get's answer opens
            // its body, which may still drip past the deadline (`get_object` says when the
            // body is whole), so only its "not found" finishes it here.
            let finished = match &settled {
                Ok(_) | Err(Failure::AlreadyExists) => op != "get",
                Err(Failure::NotFound) => true,
                Err(Failure::Down) => false,
            };
            if finished {
                self.answered();
            }
            return settled;
        }
    }

    /// What one answer, or its absence at the deadline, means for the operation and the tier.
    fn settle<T>(
        &self,
        op: &'static str,
        key: &Path,
        answer: Result<object_store::Result<T>, tokio::time::error::Elapsed>,
    ) -> Result<T, Failure> {
        match answer {
            Err(_) => {
                self.late(op, key);
                Err(Failure::Down)
            }
            Ok(Ok(v)) => Ok(v),
            Ok(Err(object_store::Error::NotFound { .. })) => Err(Failure::NotFound),
            Ok(Err(
                object_store::Error::AlreadyExists { .. }
                | object_store::Error::Precondition { .. },
            )) => Err(Failure::AlreadyExists),
            Ok(Err(e)) => {
                if op == "get" {
                    self.mark_down(op, key, &e);
                } else if transient(&e) {
                    // A write the store throttled past its retries: this write is skipped,
                    // and nothing is said about the host's rights.
                    tracing::debug!(op, %key, error = %e, "the shared tier (l2) was too busy for a write");
                } else if !self.put_warned.swap(true, Ordering::Relaxed) {
                    // A refused write (put, claim, release) says nothing about reads
                    // (read-only credentials are a normal fleet setup): said once, and the
                    // tier stays in use for reads.
                    tracing::warn!(op, %key, error = %e, "the shared tier (l2) refused a write; this host will only read from it");
                }
                Err(Failure::Down)
            }
        }
    }
}

/// Whether `error` is the store asking this host to slow down or failing on its side (HTTP
/// `429`, `5xx` — S3's `SlowDown` is a `503`), or a connection that failed or was dropped
/// before an answer (a busy store's full accept queue, a reset): worth one more try after a
/// pause. Every request the tier sends may be sent twice: gets and deletes are idempotent, and
/// a put is a conditional create, so a second one finds the first's object (a claim sent twice
/// may then look taken: it costs this host one `claim_wait`, as a claim left by a host that
/// died does, and the server serves). The status is
/// read from the S3 client's message for a non-2xx answer, the one place `object_store`
/// exposes it; a store that says nothing of either (in memory, local files) is never retried.
fn transient(error: &object_store::Error) -> bool {
    use object_store::client::{HttpError, HttpErrorKind};
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = cause {
        if let Some(http) = e.downcast_ref::<HttpError>() {
            // A request that timed out is not sent again: the operation's deadline rules.
            return matches!(
                http.kind(),
                HttpErrorKind::Connect | HttpErrorKind::Request | HttpErrorKind::Interrupted
            );
        }
        let text = e.to_string();
        if let Some(rest) = text.strip_prefix("Server returned non-2xx status code: ") {
            let status = rest.get(..3).and_then(|code| code.parse::<u16>().ok());
            return matches!(status, Some(429 | 500..=599));
        }
        cause = e.source();
    }
    false
}

/// The pause before retry number `done + 1`, or `None` when the budget ([`RETRIES`]) is spent
/// or the pause would not end before `deadline`. Half of the pause is fixed and half random
/// ("equal jitter"), its ceiling doubling from [`RETRY_PAUSE`]: hosts of a fleet throttled at
/// the same moment do not all come back at the same moment.
fn pause_before_retry(done: u32, deadline: tokio::time::Instant) -> Option<Duration> {
    if done >= RETRIES {
        return None;
    }
    let half = RETRY_PAUSE * 2u32.pow(done) / 2;
    let pause = half + half.mul_f64(jitter());
    (tokio::time::Instant::now() + pause < deadline).then_some(pause)
}

/// A number in `[0, 1)` that differs from call to call and from process to process: std's
/// `RandomState` is seeded from the operating system, which is all a pause needs.
fn jitter() -> f64 {
    use std::hash::BuildHasher as _;
    let bits = std::collections::hash_map::RandomState::new().hash_one(Instant::now());
    // 53 random bits: exactly representable, so the cast loses nothing.
    #[allow(clippy::cast_precision_loss)]
    let unit = (bits >> 11) as f64 / (1u64 << 53) as f64;
    unit
}

impl Tier {
    /// `<prefix>/origins/<encoded origin>/sha256/<2 hex>/<62 hex>`: the local store's layout
    /// under the tier's prefix.
    fn key(&self, origin: &Origin, file: &ManifestFile) -> Path {
        let rel = crate::store::blob_rel(origin, &file.digest());
        let prefix = &self.config.prefix;
        let full = if prefix.is_empty() {
            rel
        } else {
            format!("{prefix}/{rel}")
        };
        // Every part is path-safe by construction (a checked prefix, the origin's encoding,
        // hex): parse cannot fail, and `from` would only re-encode what it already is.
        Path::parse(&full).unwrap_or_else(|_| Path::from(full.as_str()))
    }

    /// `<prefix>/claims/origins/…`: the marker of a host fetching `file` from the server.
    fn claim_key(&self, origin: &Origin, file: &ManifestFile) -> Path {
        let rel = crate::store::blob_rel(origin, &file.digest());
        let prefix = &self.config.prefix;
        let full = if prefix.is_empty() {
            format!("claims/{rel}")
        } else {
            format!("{prefix}/claims/{rel}")
        };
        Path::parse(&full).unwrap_or_else(|_| Path::from(full.as_str()))
    }

    fn claim_wait(&self) -> Duration {
        self.config.claim_wait
    }

    /// A claimed object did not come within `claim_wait`: claims are ignored for a while.
    fn claim_ran_out(&self) {
        self.distrust_claims();
    }

    /// Claims `file` for this host with a conditional create of its marker.
    async fn claim(&self, origin: &Origin, file: &ManifestFile, counters: &Counters) -> Claim {
        let tier = self;
        if tier.config.claim_wait.is_zero() || tier.is_down() || tier.claims_off() {
            return Claim::Unavailable;
        }
        let key = self.claim_key(origin, file);
        let opts = PutOptions {
            mode: PutMode::Create,
            ..PutOptions::default()
        };
        let marker = PutPayload::from_static(b"claimed\n");
        match tier
            .call("claim", &key, counters, || {
                tier.config
                    .store
                    .put_opts(&key, marker.clone(), opts.clone())
            })
            .await
        {
            Ok(_) => Claim::Won,
            Err(Failure::AlreadyExists) => Claim::Taken,
            Err(Failure::NotFound | Failure::Down) => Claim::Unavailable,
        }
    }

    /// Removes the claim marker of `file`, if any (best effort).
    async fn release(&self, origin: &Origin, file: &ManifestFile, counters: &Counters) {
        let tier = self;
        if tier.config.claim_wait.is_zero() || tier.is_down() {
            return;
        }
        let key = self.claim_key(origin, file);
        let _ = tier
            .call("release", &key, counters, || tier.config.store.delete(&key))
            .await;
    }

    /// The object for `file`: its listed size is compared first, then at most that many
    /// bytes are read. The whole get — the answer and every chunk of its body — is one
    /// operation under one deadline: a tier that drips its body, each chunk just inside a
    /// per-chunk deadline, cannot stretch a load past [`L2::timeout`] (F4).
    async fn get_object(
        &self,
        origin: &Origin,
        file: &ManifestFile,
        counters: &Counters,
    ) -> Fetched {
        let tier = self;
        if tier.is_down() {
            return Fetched::Unavailable;
        }
        let key = self.key(origin, file);
        let size = file.size();
        let deadline = tokio::time::Instant::now() + tier.config.timeout;
        let found = match tier
            .call_until("get", &key, deadline, counters, || {
                tier.config.store.get_opts(&key, GetOptions::default())
            })
            .await
        {
            Ok(found) => found,
            Err(Failure::NotFound) => return Fetched::Missing,
            Err(Failure::AlreadyExists | Failure::Down) => return Fetched::Unavailable,
        };
        if found.meta.size != size {
            tier.answered();
            // R-V3: size first; the body is not read.
            return Fetched::Rejected(Mismatch::Size {
                expected: size,
                actual: found.meta.size,
            });
        }
        // The entry's size passed the limits (R-W7) when the entry was validated.
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        let mut body = found.into_stream();
        loop {
            // A chunk is never asked for twice: only the request that opens the get is retried.
            let chunk = tokio::time::timeout_at(deadline, body.next())
                .await
                .map(Option::transpose);
            match tier.settle("get", &key, chunk) {
                Ok(None) => {
                    tier.answered();
                    break;
                }
                Ok(Some(chunk)) => {
                    let have = bytes.len() as u64 + chunk.len() as u64;
                    if have > size {
                        // A body longer than its own listed size: never buffered past the
                        // entry's size.
                        return Fetched::Rejected(Mismatch::Size {
                            expected: size,
                            actual: have,
                        });
                    }
                    bytes.extend_from_slice(&chunk);
                }
                Err(Failure::NotFound) => return Fetched::Missing,
                Err(Failure::AlreadyExists | Failure::Down) => return Fetched::Unavailable,
            }
        }
        Fetched::Bytes(bytes)
    }

    /// Publishes verified bytes with a conditional create: never replaces an object.
    async fn put_object(
        &self,
        origin: &Origin,
        file: &ManifestFile,
        bytes: &VerifiedBytes,
        counters: &Counters,
    ) -> Put {
        let tier = self;
        if tier.is_down() {
            return Put::Unavailable;
        }
        let key = self.key(origin, file);
        let payload = PutPayload::from(bytes.clone().into_shared());
        let opts = PutOptions {
            mode: PutMode::Create,
            ..PutOptions::default()
        };
        match tier
            .call("put", &key, counters, || {
                tier.config
                    .store
                    .put_opts(&key, payload.clone(), opts.clone())
            })
            .await
        {
            Ok(_) => {
                tracing::debug!(%key, "published to l2");
                Put::Created
            }
            Err(Failure::AlreadyExists) => Put::Exists,
            Err(Failure::NotFound | Failure::Down) => Put::Unavailable,
        }
    }
}

impl Tier {
    /// The claim protocol around a get: a fleet that starts cold at once would send every host
    /// to the server for the same blob. The first host to miss claims the blob (a conditional
    /// create of a marker); the others wait — bounded by `claim_wait` — for its object instead
    /// of asking the server too. A claim is only a hint: whoever waits it out reads from the
    /// server.
    async fn fetch(
        &self,
        origin: &Origin,
        file: &ManifestFile,
        counters: &Counters,
    ) -> Option<Vec<u8>> {
        let uri = file.uri().as_str();
        let deadline = tokio::time::Instant::now() + self.claim_wait();
        let mut pause = Duration::from_millis(20);
        let mut waiting = false;
        loop {
            match self.get_object(origin, file, counters).await {
                Fetched::Bytes(bytes) => return Some(bytes),
                Fetched::Missing if !waiting => {
                    tracing::debug!(origin = origin.as_str(), uri, "l2 miss");
                    counters.bump(Counter::L2Misses);
                    match self.claim(origin, file, counters).await {
                        Claim::Taken => waiting = true,
                        Claim::Won => return self.look_again(origin, file, counters).await,
                        Claim::Unavailable => return None,
                    }
                }
                Fetched::Missing => {
                    if tokio::time::Instant::now() >= deadline {
                        tracing::debug!(
                            origin = origin.as_str(),
                            uri,
                            "the host that claimed this file did not publish it in time; asking the server"
                        );
                        self.claim_ran_out();
                        return None;
                    }
                }
                Fetched::Unavailable => {
                    counters.bump(Counter::L2Unavailable);
                    return None;
                }
                Fetched::Rejected(mismatch) => {
                    self.reject(origin, file, &mismatch, counters);
                    return None;
                }
            }
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            tokio::time::sleep(pause.min(left)).await;
            pause = (pause * 2).min(Duration::from_millis(250));
        }
    }

    /// This host won the claim on `file`: the object is asked for once more before the server
    /// is. A host that published it between this host's miss and its claim has removed its own
    /// claim already, so the claim alone cannot tell; without this look that host's server read
    /// is done twice. One get per blob the fleet misses, against one server read saved each
    /// time the race is lost — with a hundred hosts starting at once, it is lost often.
    async fn look_again(
        &self,
        origin: &Origin,
        file: &ManifestFile,
        counters: &Counters,
    ) -> Option<Vec<u8>> {
        match self.get_object(origin, file, counters).await {
            Fetched::Bytes(bytes) => {
                // The object came after all: this host's claim has no work left to guard.
                self.release(origin, file, counters).await;
                Some(bytes)
            }
            Fetched::Missing => None,
            Fetched::Unavailable => {
                counters.bump(Counter::L2Unavailable);
                None
            }
            Fetched::Rejected(mismatch) => {
                self.reject(origin, file, &mismatch, counters);
                None
            }
        }
    }

    fn reject(
        &self,
        origin: &Origin,
        file: &ManifestFile,
        mismatch: &Mismatch,
        counters: &Counters,
    ) {
        // Traced with the key so an operator can find and remove the object; it is left in place
        // (a bad object under a content address cannot fool a reader, only cost it one get).
        tracing::warn!(origin = origin.as_str(), uri = file.uri().as_str(), key = %self.key(origin, file), %mismatch, "an l2 object failed verification; asking the server");
        counters.bump(Counter::L2Rejected);
    }
}

impl BlobTier for Tier {
    fn get<'a>(
        &'a self,
        origin: &'a Origin,
        file: &'a ManifestFile,
        counters: &'a Counters,
    ) -> TierFuture<'a, Option<Vec<u8>>> {
        Box::pin(self.fetch(origin, file, counters))
    }

    fn rejected(
        &self,
        origin: &Origin,
        file: &ManifestFile,
        mismatch: &Mismatch,
        counters: &Counters,
    ) {
        self.reject(origin, file, mismatch, counters);
    }

    fn put<'a>(
        &'a self,
        origin: &'a Origin,
        file: &'a ManifestFile,
        bytes: &'a VerifiedBytes,
        counters: &'a Counters,
    ) -> TierFuture<'a, ()> {
        Box::pin(async move {
            match self.put_object(origin, file, bytes, counters).await {
                Put::Created => counters.bump(Counter::L2Puts),
                Put::Exists => {}
                Put::Unavailable => {
                    counters.bump(Counter::L2Unavailable);
                    return;
                }
            }
            // The object is there now: a claim on it (this host's, or a stale one it waited out)
            // has served its purpose.
            self.release(origin, file, counters).await;
        })
    }
}

/// The tier a host's [`L2`] opens.
pub(crate) fn open(config: L2) -> std::sync::Arc<dyn BlobTier> {
    Arc::new(Tier::new(config))
}
