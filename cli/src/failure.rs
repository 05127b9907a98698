//! How a command failed: shared by the commands and the demo, so neither imports the other.

use skillcache::Error;

/// How a command failed.
pub(crate) enum Failure {
    /// One skillcache error (its kind picks the exit code).
    Skill(Box<Error>),
    /// Several reasons, with the exit code they share.
    Many(u8, Vec<Error>),
    /// A bad argument, found before any server was started (exit 2).
    Usage(String),
    /// A file the command line names that could not be read (exit 2), with its cause.
    Given(Box<Error>),
    /// Anything else (exit 1).
    Other(Box<dyn std::error::Error + Send + Sync>),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        Failure::Skill(Box::new(e))
    }
}

impl From<skillcache::error::UriError> for Failure {
    fn from(e: skillcache::error::UriError) -> Failure {
        Error::from(e).into()
    }
}

impl From<skillcache::error::ConfigError> for Failure {
    fn from(e: skillcache::error::ConfigError) -> Failure {
        Error::from(e).into()
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Failure {
        Failure::Other(Box::new(e))
    }
}

impl Failure {
    /// A file named on the command line (`--config`, `--locked`, `--from-lock`) that could not
    /// be read: a usage error (exit 2), as a refused one is, with the library's error and its
    /// cause. Every other error keeps its own exit code.
    pub(crate) fn given(e: Error) -> Failure {
        match e {
            e @ Error::Store(skillcache::error::StoreError::Io { .. }) => {
                Failure::Given(Box::new(e))
            }
            e => e.into(),
        }
    }
}
