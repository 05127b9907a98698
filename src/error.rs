//! The crate's one error type.
//!
//! Every failure is a variant with named fields that carry the data a host needs to show a person
//! *why* (origin, URI, field, expected and actual values). Rules broken by untrusted input are
//! described by [`Rule`]; verification failures by [`Mismatch`]. Messages are lowercase and speak
//! about their own layer; an underlying cause, where there is one, is in `source()`.

use std::fmt;

use crate::frontmatter::FieldDiff;

/// Everything that can go wrong in skillcache.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A digest string is not `sha256:` followed by 64 lowercase hex digits (R-W1).
    #[error("invalid digest {text:?}: {rule}")]
    InvalidDigest {
        /// The text that was offered as a digest.
        text: String,
        /// The rule it broke.
        rule: Rule,
    },

    /// A URI is not acceptable as a skill or file URI (R-W4, R-W5, R-V5).
    #[error("invalid uri {uri:?}: {rule}")]
    InvalidUri {
        /// The URI or reference as given.
        uri: String,
        /// The rule it broke.
        rule: Rule,
    },

    /// A skill entry from a server breaks a rule; nothing from it is cached or loaded (R-W*).
    #[error("invalid skill entry{}: {field}: {rule}", skill_label(skill.as_deref()))]
    InvalidEntry {
        /// The entry's `uri`, when it could be read.
        skill: Option<String>,
        /// Where in the entry the problem is, e.g. `resources[3].digest`.
        field: String,
        /// The rule it broke.
        rule: Rule,
    },

    /// A skill is larger than the configured limits; declined from its entry alone (R-W7).
    #[error("skill {skill} declined: {limit} is {declared}, above the limit of {max}")]
    LimitExceeded {
        /// The skill's URI.
        skill: String,
        /// Which limit.
        limit: Limit,
        /// What the entry declares (or, for a dynamic skill, what was received).
        declared: u64,
        /// The limit in force.
        max: u64,
    },

    /// A configuration value was refused (for example, limits below the baseline).
    #[error("invalid configuration: {what}")]
    InvalidConfig {
        /// What was wrong, and how to fix it.
        what: String,
    },

    /// A server's response broke the protocol (R-W9).
    #[error("invalid {method} response: {rule}")]
    InvalidResponse {
        /// The method whose response was wrong.
        method: &'static str,
        /// The rule it broke.
        rule: Rule,
    },

    /// The frontmatter of a `SKILL.md` could not be read (R-V6).
    #[error("unreadable frontmatter: {problem}")]
    Frontmatter {
        /// What is wrong with it.
        problem: FrontmatterProblem,
    },

    /// Bytes offered to the store are not the ones the entry promised; nothing was stored.
    #[error("refused to store blob {digest} for origin {origin}: {mismatch}")]
    BlobMismatch {
        /// The origin.
        origin: String,
        /// The digest the bytes were to be stored under (`sha256:` text).
        digest: String,
        /// What did not match.
        mismatch: Mismatch,
    },

    /// The cache root is refused (R-C1).
    #[error("cache root {} refused: {why} {}", root.display(), path.display())]
    RootRefused {
        /// The root that was asked for.
        root: std::path::PathBuf,
        /// Why, ending in the path it concerns.
        why: &'static str,
        /// The discovery path (or other path) it concerns.
        path: std::path::PathBuf,
    },

    /// The index database failed.
    #[error("index error: {what}")]
    Index {
        /// What was being done.
        what: &'static str,
        /// The cause (`SQLite`'s own error, kept out of the public API).
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    /// The index was written by a newer skillcache; it is left untouched (R-H6: not damage).
    #[error(
        "the index has schema version {found}, newer than this skillcache supports ({supported}); upgrade skillcache"
    )]
    IndexTooNew {
        /// The version found in the database.
        found: u32,
        /// The newest version this build knows.
        supported: u32,
    },

    /// The index could only be opened read-only (a read-only mount, no room for its shared
    /// memory file), so nothing can be recorded; cached entries are still served (R-H5).
    #[error("the index {} is open read-only (read-only mount or disk full): cannot {what}", path.display())]
    IndexReadOnly {
        /// The database file.
        path: std::path::PathBuf,
        /// What could not be done.
        what: &'static str,
    },

    /// The host key that seals index rows is refused or unreadable (R-H3).
    #[error("host key {} refused: {problem}", path.display())]
    HostKey {
        /// The key file.
        path: std::path::PathBuf,
        /// What is wrong with it, and how to fix it.
        problem: KeyProblem,
    },

    /// The server answered a request with a JSON-RPC error.
    #[error("{method} failed on the server: {message} (code {code})")]
    Server {
        /// The method.
        method: String,
        /// The JSON-RPC error code.
        code: i64,
        /// The server's message.
        message: String,
    },

    /// The connection to the server failed.
    #[error("{method}: the connection to the server failed")]
    Transport {
        /// The method (or `connect`).
        method: String,
        /// The cause.
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    /// A server did not answer in time (R-B1). The request was abandoned whole: nothing of it
    /// was stored, and the next call asks again.
    #[error("{method} to origin {origin} got no answer within {} s", after.as_secs_f64())]
    Timeout {
        /// The origin the request went to.
        origin: String,
        /// The method (`initialize` for the connection itself).
        method: String,
        /// The deadline that passed.
        after: std::time::Duration,
    },

    /// A message from the server is larger than the bound that follows from the limits (R-B2).
    /// It was refused while being read, never buffered whole.
    #[error("{method}: the server sent a message larger than the bound of {max} bytes")]
    MessageTooLarge {
        /// The method whose answer was too large (or `connect` before any request).
        method: String,
        /// The bound in bytes.
        max: u64,
    },

    /// No source is connected for this origin.
    #[error("origin {origin} is not connected to a server")]
    NotConnected {
        /// The origin.
        origin: String,
    },

    /// The host's policy declined the skill (R-V7, R-A2, approvals).
    #[error("skill {skill} from origin {origin} declined: {reason}")]
    Declined {
        /// The origin.
        origin: String,
        /// The skill URI.
        skill: String,
        /// Why.
        reason: Declined,
    },

    /// A local skill folder holds something a published skill cannot.
    #[error("{}: {why}", path.display())]
    InvalidSkillFolder {
        /// The offending path.
        path: std::path::PathBuf,
        /// What is wrong with it.
        why: &'static str,
    },

    /// An I/O operation failed.
    #[error("cannot {op} {}", path.display())]
    Io {
        /// What was being done.
        op: &'static str,
        /// On what.
        path: std::path::PathBuf,
        /// The cause.
        source: std::io::Error,
    },

    /// Bytes did not match the entry they were checked against (R-V2…R-V6). They were not used.
    #[error("verification failed for {uri} from origin {origin}: {mismatch}")]
    Verification {
        /// The host's label of the server the skill came from.
        origin: String,
        /// The file's URI.
        uri: String,
        /// What did not match.
        mismatch: Mismatch,
    },

    /// The cache's lock was still held when the wait ran out (R-H11).
    #[error(
        "the cache lock {} is still held after {:.1} s (by {}); try again when that is done",
        path.display(),
        waited.as_secs_f64(),
        holder.as_deref().unwrap_or("other skillcache processes")
    )]
    LockTimeout {
        /// The lock file.
        path: std::path::PathBuf,
        /// How long we waited.
        waited: std::time::Duration,
        /// Who holds it, when the holder said (an exclusive holder writes its pid and operation).
        holder: Option<String>,
    },

    /// An MCP host configuration file (`mcpServers` / VS Code `servers`) is refused; nothing from
    /// it is used.
    #[error("config file {}: {}: {problem}", path.display(), pointer_label(field))]
    InvalidConfigFile {
        /// The file.
        path: std::path::PathBuf,
        /// Where in it, as a JSON pointer (`/mcpServers/docs/args/0`; empty for the whole file).
        field: String,
        /// What is wrong there.
        problem: FileProblem,
    },

    /// A lock file (`skills.lock`) is refused; nothing from it is used.
    #[error("lock file {}: {}: {problem}", path.display(), pointer_label(field))]
    InvalidLockFile {
        /// The file.
        path: std::path::PathBuf,
        /// Where in it (`skill[2].file[0].digest`; empty for the whole file).
        field: String,
        /// What is wrong there.
        problem: FileProblem,
    },

    /// Offline mode: what was asked for needs a server, and the cache cannot stand in for it.
    /// No server was contacted.
    #[error("offline: {uri} from origin {origin}: {missing}")]
    Offline {
        /// The origin.
        origin: String,
        /// The skill or file URI (empty for a whole listing).
        uri: String,
        /// What the cache lacks.
        missing: OfflineMiss,
    },

    /// The shared tier (feature `l2`, issue 14) cannot be set up as given: a URL that names no
    /// supported store, a prefix that is not a valid object path, or a store that refused its
    /// configuration. Only configuration fails: an unreachable tier at run time never fails a
    /// load, it falls through to the server.
    #[error("cannot use {location:?} as the shared tier: {problem}")]
    L2Config {
        /// The URL or prefix as given.
        location: String,
        /// What is wrong with it, and how to fix it.
        problem: String,
        /// The object store's own error, when it refused.
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
}

fn pointer_label(field: &str) -> &str {
    if field.is_empty() {
        "the whole file"
    } else {
        field
    }
}

/// What is wrong at one place in a configuration or lock file.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileProblem {
    /// The file is not valid JSON / TOML.
    Syntax {
        /// The parser's message (with line and column).
        message: String,
    },
    /// A required field is absent.
    Missing,
    /// A field has the wrong type.
    WrongType {
        /// The type it must have.
        expected: &'static str,
    },
    /// A value is refused.
    Invalid {
        /// Why, and how to fix it.
        why: String,
    },
}

impl fmt::Display for FileProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileProblem::Syntax { message } => write!(f, "cannot be parsed: {message}"),
            FileProblem::Missing => f.write_str("is missing"),
            FileProblem::WrongType { expected } => write!(f, "must be {expected}"),
            FileProblem::Invalid { why } => f.write_str(why),
        }
    }
}

/// What offline mode could not serve from the cache ([`Error::Offline`]).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OfflineMiss {
    /// No entry for the skill is cached (for this principal).
    Entry,
    /// The cached entry is stale, and stale entries were not allowed.
    Stale {
        /// How long ago it was fetched, in ms.
        age_ms: u64,
    },
    /// The file's verified bytes are not in the cache.
    File,
    /// The operation always asks the server (`skills/get` to refresh, `skills/list`).
    Server {
        /// The method it would send.
        method: &'static str,
    },
}

impl fmt::Display for OfflineMiss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OfflineMiss::Entry => f.write_str("no entry for it is in the cache"),
            OfflineMiss::Stale { age_ms } => write!(
                f,
                "its cached entry is stale (fetched {} s ago); allow stale entries to use it",
                age_ms / 1000
            ),
            OfflineMiss::File => f.write_str("its verified bytes are not in the cache"),
            OfflineMiss::Server { method } => {
                write!(
                    f,
                    "{method} needs the server, which offline mode never contacts"
                )
            }
        }
    }
}

fn skill_label(skill: Option<&str>) -> String {
    skill.map_or_else(String::new, |s| format!(" {s}"))
}

/// What is wrong with a host key file (R-H3). Each message says how to fix it.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyProblem {
    /// A symlink, folder, device or other non-regular file is where the key should be.
    NotARegularFile,
    /// The file does not hold exactly 32 bytes.
    WrongLength {
        /// Its length.
        len: u64,
    },
    /// Group or others may read or write it.
    Accessible {
        /// Its permission bits.
        mode: u32,
    },
    /// It belongs to another user.
    NotOwned {
        /// Its owner.
        owner: u32,
    },
    /// It lies inside the cache root, which anyone who may write the root could read or replace.
    InsideRoot {
        /// The cache root.
        root: std::path::PathBuf,
    },
}

impl fmt::Display for KeyProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyProblem::NotARegularFile => f.write_str(
                "it is not a regular file; remove it (a new key is created on next use) or point --key-file at the key",
            ),
            KeyProblem::WrongLength { len } => write!(
                f,
                "it holds {len} bytes, a host key holds 32; remove it to start with a new key (cached entries are then fetched again)"
            ),
            KeyProblem::Accessible { mode } => write!(
                f,
                "its mode is {mode:04o}: group or others may access it; run chmod 600 on it"
            ),
            KeyProblem::NotOwned { owner } => write!(
                f,
                "it belongs to user {owner}, not to the user running skillcache; use a key of your own"
            ),
            KeyProblem::InsideRoot { root } => write!(
                f,
                "it lies inside the cache root {}; keep it outside the root (the default is ~/.config/skillcache/host.key)",
                root.display()
            ),
        }
    }
}

/// Why a policy declined a skill.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Declined {
    /// The skill is dynamic and the host declines dynamic skills (R-V7).
    Dynamic,
    /// Approval is required (R-P1) and this principal never approved the skill — a nested skill
    /// included: the approval of the skill it lies in does not cover it.
    NotApproved,
    /// Approval is required (R-P1) and this principal's approval no longer holds: the skill's
    /// files changed since it was approved (R-A2).
    Revoked {
        /// What was added, removed or changed since the approved entry.
        changes: Box<crate::entry::EntryDiff>,
    },
    /// A lock file is in force and does not list the skill.
    NotLocked,
    /// A lock file is in force and the skill's entry differs from what it pins.
    Drift {
        /// What was added, removed or changed since the skill was locked.
        changes: Box<crate::entry::EntryDiff>,
    },
}

impl fmt::Display for Declined {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Declined::Dynamic => {
                f.write_str("it is dynamic (no digests) and dynamic skills are declined")
            }
            Declined::NotApproved => f.write_str("it has not been approved"),
            Declined::Revoked { changes } => {
                write!(
                    f,
                    "its approval was revoked because its files changed: {changes}"
                )
            }
            Declined::NotLocked => f.write_str("the lock file in force does not list it"),
            Declined::Drift { changes } => {
                write!(f, "it differs from the lock file: {changes}")
            }
        }
    }
}

/// A limit of R-W7.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// The number of entries in `resources`.
    Files,
    /// The sum of the declared sizes (or, for dynamic skills, the bytes received).
    TotalBytes,
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Limit::Files => "the number of files",
            Limit::TotalBytes => "the total size in bytes",
        })
    }
}

/// A rule that untrusted input broke. Each variant's message names the rule.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    /// A required field is absent.
    Missing,
    /// A field has the wrong JSON type.
    WrongType {
        /// The type the field must have.
        expected: &'static str,
    },
    /// A digest does not start with `sha256:`.
    DigestPrefix,
    /// A digest's hex part is not 64 characters.
    DigestLength {
        /// The number of characters after the prefix.
        actual: usize,
    },
    /// A digest's hex part has a character that is not lowercase hex.
    DigestCharacter,
    /// A size is not an integer in `0 ..= 2^53-1`.
    SizeRange,
    /// `resources` is neither a non-empty array nor the string `"dynamic"`.
    ResourcesShape,
    /// The manifest does not list the skill's own `SKILL.md`.
    MissingSkillMd,
    /// A URI appears twice (after percent-normalisation).
    DuplicateUri {
        /// The second spelling seen.
        uri: String,
    },
    /// A file URI is not inside the skill's root.
    OutsideRoot {
        /// The skill root it had to be inside.
        root: String,
    },
    /// A skill name breaks the Agent Skills naming rules.
    Name {
        /// Which part of the rule.
        why: &'static str,
    },
    /// The skill URI's last path segment is not `frontmatter.name`.
    NameMismatch {
        /// The last segment of the skill path.
        segment: String,
        /// `frontmatter.name`.
        name: String,
    },
    /// A description is empty or longer than 1024 characters.
    DescriptionLength {
        /// Its length in Unicode scalar values.
        chars: usize,
    },
    /// A strict Agent Skills rule (R-W6, strict mode).
    Strict {
        /// Which rule.
        why: &'static str,
    },
    /// A URI is not an absolute hierarchical URI (`scheme://authority/path`).
    NotHierarchical,
    /// A URI has a scheme that is not `ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`.
    Scheme,
    /// A URI has a query component.
    Query,
    /// A URI (not a reference) has a fragment.
    Fragment,
    /// A `skill://` URI has userinfo or a port, or an empty authority.
    Authority {
        /// Which part of the rule.
        why: &'static str,
    },
    /// A path segment is empty, `.`, `..`, or contains `/`, `\` or NUL after decoding once.
    Segment {
        /// The offending segment as written.
        segment: String,
        /// Which part of the rule.
        why: &'static str,
    },
    /// A `%` not followed by two hex digits.
    PercentEncoding,
    /// A control character in a URI.
    ControlCharacter,
    /// A skill URI that does not end in `/SKILL.md` or has no skill path before it.
    NotSkillMd,
    /// A reference that would leave the skill root (`../x`, `//host/x`, `/x`, another URI).
    EscapesRoot,
    /// A value that is not allowed (for example `cacheScope: "shared"`).
    Value {
        /// What is allowed.
        allowed: &'static str,
    },
    /// A response answered a different skill than the one asked for.
    WrongSkill {
        /// The URI that was requested.
        requested: String,
        /// The URI that came back.
        returned: String,
    },
    /// A listing repeated a skill URI; every copy is refused.
    RepeatedSkill {
        /// The repeated URI.
        uri: String,
    },
    /// A listing repeated a `nextCursor`; paging stops.
    RepeatedCursor {
        /// The cursor.
        cursor: String,
    },
    /// `resources/read` returned no item for the requested URI.
    NoContent {
        /// The requested URI.
        uri: String,
    },
    /// `resources/read` returned two different items for the requested URI.
    ConflictingContent {
        /// The requested URI.
        uri: String,
    },
    /// A content item has neither `text` nor `blob`, or both.
    ContentShape,
    /// A `blob` is not valid base64.
    Base64,
    /// A result's `resultType` is not `complete` (for example `input_required`): skillcache
    /// only accepts complete results.
    ResultType {
        /// The `resultType` the server sent.
        actual: String,
    },
    /// The server declared a capability set without this extension or without `resources`.
    Capability {
        /// What is missing.
        missing: &'static str,
    },
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rule::Missing => f.write_str("required field is missing"),
            Rule::WrongType { expected } => write!(f, "must be {expected}"),
            Rule::DigestPrefix => f.write_str("must start with \"sha256:\""),
            Rule::DigestLength { actual } => {
                write!(f, "must have 64 hex digits after \"sha256:\", not {actual}")
            }
            Rule::DigestCharacter => f.write_str("hex digits must be 0-9 or lowercase a-f"),
            Rule::SizeRange => f.write_str("must be an integer from 0 to 2^53-1"),
            Rule::ResourcesShape => {
                f.write_str("must be a non-empty array of {uri, digest, size} or \"dynamic\"")
            }
            Rule::MissingSkillMd => f.write_str("must list the skill's own SKILL.md"),
            Rule::DuplicateUri { uri } => write!(f, "lists {uri} more than once"),
            Rule::OutsideRoot { root } => write!(f, "must be inside the skill root {root}/"),
            Rule::Name { why } => write!(f, "invalid skill name: {why}"),
            Rule::NameMismatch { segment, name } => write!(
                f,
                "the skill path ends in {segment:?} but frontmatter.name is {name:?}"
            ),
            Rule::DescriptionLength { chars } => {
                write!(f, "must be 1 to 1024 characters, not {chars}")
            }
            Rule::Strict { why } => write!(f, "strict Agent Skills rule: {why}"),
            Rule::NotHierarchical => {
                f.write_str("must be an absolute URI of the form scheme://authority/path")
            }
            Rule::Scheme => f.write_str("has an invalid scheme"),
            Rule::Query => f.write_str("must not have a query"),
            Rule::Fragment => f.write_str("must not have a fragment"),
            Rule::Authority { why } => write!(f, "invalid authority: {why}"),
            Rule::Segment { segment, why } => write!(f, "path segment {segment:?} {why}"),
            Rule::PercentEncoding => f.write_str("has a '%' not followed by two hex digits"),
            Rule::ControlCharacter => f.write_str("contains a control character"),
            Rule::NotSkillMd => {
                f.write_str("must end in /SKILL.md with at least one skill path segment before it")
            }
            Rule::EscapesRoot => f.write_str("leaves the skill root"),
            Rule::Value { allowed } => write!(f, "must be {allowed}"),
            Rule::WrongSkill {
                requested,
                returned,
            } => {
                write!(f, "asked for {requested} but got {returned}")
            }
            Rule::RepeatedSkill { uri } => {
                write!(f, "{uri} is listed more than once; every copy is refused")
            }
            Rule::RepeatedCursor { cursor } => {
                write!(f, "nextCursor {cursor:?} was already seen; paging stopped")
            }
            Rule::NoContent { uri } => write!(f, "no content item for {uri}"),
            Rule::ConflictingContent { uri } => write!(f, "two different content items for {uri}"),
            Rule::ContentShape => {
                f.write_str("a content item must have exactly one of text or blob")
            }
            Rule::Base64 => f.write_str("blob is not valid base64"),
            Rule::ResultType { actual } => {
                write!(f, "resultType is {actual:?}; only \"complete\" is accepted")
            }
            Rule::Capability { missing } => write!(f, "the server did not declare {missing}"),
        }
    }
}

/// Why bytes failed verification (R-V2…R-V6).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mismatch {
    /// The byte length differs from the entry's `size` (checked before hashing, R-V3).
    Size {
        /// The entry's `size`.
        expected: u64,
        /// The bytes seen (for a stream cut off early, `size + 1`).
        actual: u64,
    },
    /// The SHA-256 differs from the entry's `digest`.
    Digest {
        /// The entry's `digest`.
        expected: crate::Digest,
        /// The digest of the bytes.
        actual: crate::Digest,
    },
    /// The `SKILL.md` frontmatter differs from the entry's `frontmatter` (R-V6).
    Frontmatter {
        /// Each differing key.
        diffs: Vec<FieldDiff>,
    },
    /// The `SKILL.md` frontmatter could not be parsed, so it cannot match (R-V6).
    FrontmatterUnreadable {
        /// Why.
        problem: FrontmatterProblem,
    },
    /// The file is not listed in the held entry (R-V4); no request was sent.
    Unlisted,
    /// The cached copy is not a regular file (a symlink, a folder, a device).
    NotARegularFile,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mismatch::Size { expected, actual } => {
                write!(f, "size is {actual} bytes, entry says {expected}")
            }
            Mismatch::Digest { expected, actual } => {
                write!(f, "digest is {actual}, entry says {expected}")
            }
            Mismatch::Frontmatter { diffs } => {
                f.write_str("frontmatter differs from the entry: ")?;
                for (i, d) in diffs.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{d}")?;
                }
                Ok(())
            }
            Mismatch::FrontmatterUnreadable { problem } => {
                write!(f, "frontmatter cannot be read: {problem}")
            }
            Mismatch::Unlisted => f.write_str("the file is not listed in the held entry"),
            Mismatch::NotARegularFile => f.write_str("the cached copy is not a regular file"),
        }
    }
}

/// Why a `SKILL.md` frontmatter could not be read (R-V6: these fail closed).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrontmatterProblem {
    /// The file does not start with a `---` line.
    NoOpening,
    /// No closing `---` line.
    NoClosing,
    /// The frontmatter is not UTF-8.
    NotUtf8,
    /// The frontmatter is larger than the bound.
    TooLarge {
        /// The bound in bytes.
        max: usize,
    },
    /// YAML syntax error.
    Syntax {
        /// The parser's message with its position.
        message: String,
    },
    /// The document is not a mapping.
    NotAMapping,
    /// An anchor (`&a`) — refused.
    Anchor,
    /// An alias (`*a`) — refused.
    Alias,
    /// An explicit tag (`!!str`) — refused.
    Tag,
    /// A key appears twice in one mapping.
    DuplicateKey {
        /// The key.
        key: String,
    },
    /// A key that is not a string (a number, a collection, null).
    NonStringKey,
    /// `.nan`, `.inf` or a float that overflows: not representable in JSON.
    NonFinite {
        /// The scalar as written.
        scalar: String,
    },
    /// Nesting deeper than the bound.
    TooDeep {
        /// The bound.
        max: usize,
    },
    /// More nodes than the bound.
    TooManyNodes {
        /// The bound.
        max: usize,
    },
    /// More than one YAML document.
    MultipleDocuments,
}

impl fmt::Display for FrontmatterProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoOpening => f.write_str("the file does not start with a '---' line"),
            Self::NoClosing => f.write_str("no closing '---' line"),
            Self::NotUtf8 => f.write_str("not valid UTF-8"),
            Self::TooLarge { max } => write!(f, "larger than {max} bytes"),
            Self::Syntax { message } => write!(f, "yaml syntax error: {message}"),
            Self::NotAMapping => f.write_str("not a mapping"),
            Self::Anchor => f.write_str("anchors are not allowed"),
            Self::Alias => f.write_str("aliases are not allowed"),
            Self::Tag => f.write_str("explicit tags are not allowed"),
            Self::DuplicateKey { key } => write!(f, "duplicate key {key:?}"),
            Self::NonStringKey => f.write_str("keys must be strings"),
            Self::NonFinite { scalar } => {
                write!(f, "{scalar:?} is not a finite number and has no JSON form")
            }
            Self::TooDeep { max } => write!(f, "nested deeper than {max} levels"),
            Self::TooManyNodes { max } => write!(f, "more than {max} nodes"),
            Self::MultipleDocuments => f.write_str("more than one yaml document"),
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The kind of an [`Error`]: what a host (or the CLI's exit code) acts on. Deliberately not
/// `non_exhaustive`, and [`Error::class`] matches every variant without a catch-all: a new
/// error cannot be added without deciding its class, and a new class breaks every exhaustive
/// `match` on it (the CLI's exit codes) until it is mapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// Bytes did not match their entry (CLI exit 3).
    Verification,
    /// The server broke the protocol, sent an invalid entry, failed, timed out, sent too much,
    /// or the connection failed (CLI exit 4).
    Server,
    /// The host's policy declined: limits, dynamic, approvals, a lock file, offline mode, a
    /// reference that leaves the skill (CLI exit 5).
    Declined,
    /// A configuration value, configuration file or lock file the host gave was refused (CLI
    /// exit 2, a usage error).
    Config,
    /// A local failure: the cache root, the index, I/O, an origin not bound (CLI exit 1).
    Local,
}

impl Error {
    /// This error's [`ErrorClass`].
    ///
    /// ```
    /// use skillcache::error::{Error, ErrorClass};
    /// let e = Error::Timeout { origin: "o".into(), method: "resources/read".into(), after: std::time::Duration::from_secs(2) };
    /// assert_eq!(e.class(), ErrorClass::Server);
    /// ```
    #[must_use]
    pub fn class(&self) -> ErrorClass {
        match self {
            Error::Verification { .. } | Error::BlobMismatch { .. } => ErrorClass::Verification,
            Error::InvalidEntry { .. }
            | Error::InvalidResponse { .. }
            | Error::InvalidDigest { .. }
            | Error::Server { .. }
            | Error::Frontmatter { .. }
            | Error::InvalidSkillFolder { .. }
            | Error::Transport { .. }
            | Error::Timeout { .. }
            | Error::MessageTooLarge { .. } => ErrorClass::Server,
            // Offline mode is the host's policy declining to reach the server.
            Error::LimitExceeded { .. }
            | Error::Declined { .. }
            | Error::InvalidUri { .. }
            | Error::Offline { .. } => ErrorClass::Declined,
            Error::InvalidConfig { .. }
            | Error::InvalidConfigFile { .. }
            | Error::InvalidLockFile { .. }
            | Error::L2Config { .. } => ErrorClass::Config,
            Error::RootRefused { .. }
            | Error::Index { .. }
            | Error::NotConnected { .. }
            | Error::LockTimeout { .. }
            | Error::IndexTooNew { .. }
            | Error::IndexReadOnly { .. }
            | Error::HostKey { .. }
            | Error::Io { .. } => ErrorClass::Local,
        }
    }
}
