//! The crate's errors: one superset, [`Error`], over one error type per layer.
//!
//! A function that can fail only one way returns that layer's type ([`UriError`], [`EntryError`],
//! [`VerifyError`], [`SourceError`], [`StoreError`], [`IndexError`], [`ConfigError`]); one that
//! can fail several ways returns [`Error`], and `?` converts upward through `From`. Every type
//! carries the data a host needs to show a person *why* (origin, URI, field, expected and actual
//! values) as typed values; an underlying cause, where there is one, is in `source()` — the
//! superset's `source()` is the layer error's own. Messages are lowercase and speak about their
//! own layer. This module is the one place hosts look: every error type is re-exported here.

use std::fmt;

pub use crate::config_error::{ConfigError, FileProblem};
pub use crate::entry::error::{EntryError, Limit};
pub use crate::frontmatter::FrontmatterProblem;
pub use crate::host::error::VerifyError;
pub use crate::index::error::{IndexError, KeyProblem};
pub use crate::mismatch::Mismatch;
pub use crate::origin::Origin;
pub use crate::rule::Rule;
pub use crate::source::error::SourceError;
pub use crate::store::error::StoreError;
pub use crate::uri::{FileUri, SkillUri, UriError};

/// Everything that can go wrong in skillcache: one variant per layer, plus the host's policy
/// declining and offline mode. Deliberately not `non_exhaustive`: the CLI's exit code is an
/// exhaustive `match` on it, so a new variant cannot ship without an exit code.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A URI is not acceptable as a skill or file URI.
    #[error(transparent)]
    Uri(#[from] UriError),

    /// Untrusted input (an entry, a digest, a response, a frontmatter, a skill folder) broke a
    /// rule.
    #[error(transparent)]
    Entry(#[from] EntryError),

    /// Bytes did not match their entry; they were not used.
    #[error(transparent)]
    Verify(#[from] VerifyError),

    /// A request to a server failed.
    #[error(transparent)]
    Source(#[from] SourceError),

    /// The blob store failed or refused.
    #[error(transparent)]
    Store(#[from] StoreError),

    /// The index failed or refused.
    #[error(transparent)]
    Index(#[from] IndexError),

    /// A configuration value, configuration file or lock file was refused.
    #[error(transparent)]
    Config(#[from] ConfigError),

    /// The host's policy declined the skill (R-V7, R-A2, approvals).
    #[error("skill {skill} from origin {origin} declined: {reason}")]
    Declined {
        /// The origin.
        origin: Origin,
        /// The skill URI.
        skill: SkillUri,
        /// Why.
        reason: Declined,
    },

    /// Offline mode: what was asked for needs a server, and the cache cannot stand in for it.
    /// No server was contacted.
    #[error("offline: {} from origin {origin}: {missing}", OfflineWhat(uri.as_ref()))]
    Offline {
        /// The origin.
        origin: Origin,
        /// The skill's `SKILL.md` or the file asked for; `None` for a whole listing.
        uri: Option<FileUri>,
        /// What the cache lacks.
        missing: OfflineMiss,
    },

    /// The shared tier (feature `l2`, issue 14) cannot be set up as given: a URL that names no
    /// supported store, a prefix that is not a valid object path, or a store that refused its
    /// configuration. Only configuration fails: an unreachable tier at run time never fails a
    /// load, it falls through to the server.
    #[error(
        "cannot use {:?} as the shared tier: {problem}",
        crate::display::display_safe(location)
    )]
    L2Config {
        /// The URL or prefix as given.
        location: String,
        /// What is wrong with it, and how to fix it.
        problem: String,
        /// The object store's own error, when it refused.
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
}

// Every `From` into the superset lives here, so no layer's error module imports this one.
impl From<FrontmatterProblem> for Error {
    fn from(problem: FrontmatterProblem) -> Error {
        Error::Entry(problem.into())
    }
}

impl Error {
    /// The error as the cache hands it out, for one that came of talking to `origin`'s server:
    /// a refusal of what the server sent names the origin, as a failed request does.
    pub(crate) fn sent_by(self, origin: &Origin) -> Error {
        match self {
            Error::Entry(e) => Error::Entry(e.sent_by(origin)),
            other => other,
        }
    }

    /// Whether the index found the disk full (R-H5: gc and purge free space and carry on).
    pub(crate) fn is_disk_full(&self) -> bool {
        matches!(self, Error::Index(e) if e.is_disk_full())
    }

    /// Whether the index can record nothing now (read-only, or a full disk), which a read must
    /// survive (R-H5).
    pub(crate) fn cannot_record(&self) -> bool {
        matches!(self, Error::Index(e) if e.cannot_record())
    }
}

/// What `Error::Offline` names: the file's URI (display-safe, R-E5), or the listing.
struct OfflineWhat<'a>(Option<&'a FileUri>);

impl fmt::Display for OfflineWhat<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(uri) => fmt::Display::fmt(uri, f),
            None => f.write_str("the listing"),
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
    /// files changed since it was approved (R-A2), or its frontmatter did under the same files
    /// — `allowed-tools` above all, which a tool grant was given for (E7).
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
    /// A per-origin quota is in force and the skill would take more room on disk than it, even
    /// stored alone (R-Q4): it could never be stored whole without going over, so it is declined
    /// from its entry, before any request.
    OverQuota {
        /// The origin's quota, in bytes.
        quota: u64,
        /// What the skill would take on disk as the quota charges it: each file's declared size
        /// rounded up to whole blocks, plus what its names, index rows and folders cost
        /// ([`SkillCacheBuilder::origin_quota`](crate::SkillCacheBuilder::origin_quota)).
        size: u64,
    },
}

impl fmt::Display for Declined {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Declined::Dynamic => f.write_str(
                "it is dynamic (no digests): declined unless dynamic skills are allowed, and never \
                 approved",
            ),
            Declined::NotApproved => f.write_str("it has not been approved"),
            Declined::Revoked { changes } => {
                write!(
                    f,
                    "its approval was revoked because the skill changed since it was approved: {changes}"
                )
            }
            Declined::NotLocked => f.write_str("the lock file in force does not list it"),
            Declined::Drift { changes } => {
                write!(f, "it differs from the lock file: {changes}")
            }
            Declined::OverQuota { quota, size } => write!(
                f,
                "it would take {size} bytes on disk, more than the origin's quota of {quota} bytes"
            ),
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::{ConfigError, Error};

    /// R-H5: the superset is disk-full only through the index's own error (the index's tests
    /// check which SQLite errors are); a configuration error never is.
    #[test]
    fn h5_only_an_index_error_can_be_disk_full() {
        let full = Error::Index(crate::index::db_err("store entry")(
            rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
                None,
            ),
        ));
        assert!(full.is_disk_full());
        let config = Error::Config(ConfigError::Invalid { what: "x".into() });
        assert!(!config.is_disk_full());
    }
}
