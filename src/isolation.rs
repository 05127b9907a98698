//! The host's choice of how cached bytes are checked: a policy the store applies and the host
//! API exposes, so it lives above both.

/// How cached files are checked on every access (R-C2). The host chooses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Isolation {
    /// Re-hash the cached bytes on every access and compare with the entry (the default).
    #[default]
    Rehash,
    /// The host declares that only it can write the cache. The store skips hashing when the
    /// evidence it can see holds — a regular file opened without following a symlink, owned by
    /// the cache owner, no write bits, one link, the expected size, and the inode and ctime
    /// recorded at publish — and re-hashes when any of it is off. After the read it checks the
    /// same handle again (R-H4): if the size, ctime or mtime moved while it read, it re-hashes.
    /// What it still trusts: that nobody but this host's user writes the root (the evidence
    /// cannot see a writer with our uid who restores ctime, which needs root or a clock change).
    Guaranteed,
}

/// A host's choice named as text: the Python and Node packages' options, a configuration value.
/// Spelled in snake case: `rehash`, `guaranteed` (what [`Display`](std::fmt::Display) writes).
///
/// ```
/// use skillcache::Isolation;
/// assert_eq!("guaranteed".parse::<Isolation>().ok(), Some(Isolation::Guaranteed));
/// assert_eq!(Isolation::Rehash.to_string(), "rehash");
/// assert!("sometimes".parse::<Isolation>().is_err());
/// ```
impl std::str::FromStr for Isolation {
    type Err = crate::error::ConfigError;

    fn from_str(s: &str) -> Result<Isolation, Self::Err> {
        crate::config_error::choice(
            "an isolation",
            s,
            &[Isolation::Rehash, Isolation::Guaranteed],
        )
    }
}

impl std::fmt::Display for Isolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Isolation::Rehash => "rehash",
            Isolation::Guaranteed => "guaranteed",
        })
    }
}
