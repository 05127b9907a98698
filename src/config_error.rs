//! Refused configuration: a value the host gave (limits, an origin label), an MCP configuration
//! file or a lock file. A leaf module, so the constructors that can fail only this way
//! (`Origin::new`, `Limits::new`) return this type without depending on the superset `Error`.

use std::fmt;

/// A configuration value, MCP configuration file or lock file the host gave is refused; nothing
/// from it is used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A configuration value was refused (for example, limits below the baseline).
    #[error("invalid configuration: {what}")]
    Invalid {
        /// What was wrong, and how to fix it.
        what: String,
    },

    /// An MCP host configuration file (`mcpServers` / VS Code `servers`) is refused.
    #[error("config file {}: {}: {problem}", path.display(), pointer_label(field))]
    File {
        /// The file.
        path: std::path::PathBuf,
        /// Where in it, as a JSON pointer (`/mcpServers/docs/args/0`; empty for the whole file).
        field: String,
        /// What is wrong there.
        problem: FileProblem,
    },

    /// A lock file (`skills.lock`) is refused.
    #[error("lock file {}: {}: {problem}", path.display(), pointer_label(field))]
    LockFile {
        /// The file.
        path: std::path::PathBuf,
        /// Where in it (`skill[2].file[0].digest`; empty for the whole file).
        field: String,
        /// What is wrong there.
        problem: FileProblem,
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
