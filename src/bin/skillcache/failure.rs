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
