//! The host's policies for loading: dynamic skills, approval, deadlines, offline mode. Leaves of
//! the host layer: every other file of it reads them.

use std::time::Duration;

/// How long the cache waits for a server to connect and for each answer, unless the host says
/// otherwise (R-B1).
pub(super) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// What the host does with dynamic skills (`resources: "dynamic"`, R-V7).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DynamicPolicy {
    /// Refuse to load them (the default): they offer no content integrity.
    #[default]
    Decline,
    /// Load them, marked unverified, within the byte budget; never cached, never approvable.
    AllowUnverified,
}

/// Whether [`SkillCache::load`](crate::SkillCache::load) requires approval (R-P1).
///
/// The gate is checked from the index alone, before any `resources/read` is sent: a skill that
/// is not approved as it is now never has a byte fetched.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ApprovalPolicy {
    /// `load` succeeds only for a skill the handle's principal approved as it is now (its
    /// (URI, digest) set equals the approved one); otherwise it fails with
    /// [`Declined::NotApproved`](crate::error::Declined::NotApproved) or [`Declined::Revoked`](crate::error::Declined::Revoked). Dynamic skills can never be approved,
    /// so they are declined too. The default: secure unless the host opts out.
    #[default]
    Required,
    /// `load` does not consult approvals: for hosts that gate activation elsewhere. Nothing is
    /// granted through it ([`LoadedSkill::granted_tools`](crate::LoadedSkill::granted_tools) is `None`).
    NotRequired,
}

/// A host's choice named as text (the bindings' options): `decline`, `allow_unverified`, as
/// [`Display`](std::fmt::Display) writes them.
///
/// ```
/// use skillcache::DynamicPolicy;
/// assert_eq!("allow_unverified".parse::<DynamicPolicy>().ok(), Some(DynamicPolicy::AllowUnverified));
/// assert_eq!(DynamicPolicy::Decline.to_string(), "decline");
/// ```
impl std::str::FromStr for DynamicPolicy {
    type Err = crate::error::ConfigError;

    fn from_str(s: &str) -> Result<DynamicPolicy, Self::Err> {
        crate::config_error::choice(
            "a dynamic policy",
            s,
            &[DynamicPolicy::Decline, DynamicPolicy::AllowUnverified],
        )
    }
}

impl std::fmt::Display for DynamicPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DynamicPolicy::Decline => "decline",
            DynamicPolicy::AllowUnverified => "allow_unverified",
        })
    }
}

/// A host's choice named as text (the bindings' options): `required`, `not_required`, as
/// [`Display`](std::fmt::Display) writes them.
///
/// ```
/// use skillcache::ApprovalPolicy;
/// assert_eq!("not_required".parse::<ApprovalPolicy>().ok(), Some(ApprovalPolicy::NotRequired));
/// assert_eq!(ApprovalPolicy::Required.to_string(), "required");
/// ```
impl std::str::FromStr for ApprovalPolicy {
    type Err = crate::error::ConfigError;

    fn from_str(s: &str) -> Result<ApprovalPolicy, Self::Err> {
        crate::config_error::choice(
            "an approval policy",
            s,
            &[ApprovalPolicy::Required, ApprovalPolicy::NotRequired],
        )
    }
}

impl std::fmt::Display for ApprovalPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ApprovalPolicy::Required => "required",
            ApprovalPolicy::NotRequired => "not_required",
        })
    }
}

/// How long the cache waits for a server (R-B1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Deadlines {
    /// Starting the server and `initialize`.
    pub(super) connect: Duration,
    /// One request, from sending it to its whole answer.
    pub(super) request: Duration,
}

impl Default for Deadlines {
    fn default() -> Deadlines {
        Deadlines {
            connect: DEFAULT_TIMEOUT,
            request: DEFAULT_TIMEOUT,
        }
    }
}

/// Offline mode as the host chose it ([`SkillCacheBuilder::offline`](crate::SkillCacheBuilder::offline)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Offline {
    /// No source is ever contacted.
    pub(super) on: bool,
    /// A stale cached entry is used (and reported stale) instead of refused.
    pub(super) allow_stale: bool,
}
