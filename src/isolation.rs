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
