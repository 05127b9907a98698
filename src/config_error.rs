//! Refused configuration: a value the host gave (limits, an origin label, a principal), an MCP
//! configuration file or a lock file. A leaf module, so the constructors that can fail only this
//! way (`Origin::new`, `Limits::new`) return this type without depending on the superset `Error`.
//!
//! A file error names the file, the line and column, and the key path, and never quotes the
//! file's content (R-E4): its problem is in fixed words, and what it does show of the file (the
//! key path, the file's name) is display-safe (R-E5).

use std::fmt;

use crate::display::{SafePath, display_safe};

/// A configuration value, MCP configuration file or lock file the host gave is refused; nothing
/// from it is used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A configuration value was refused (for example, limits below the baseline, or an origin
    /// label or principal with an invisible character, R-E6).
    #[error("{what}")]
    Invalid {
        /// What was wrong, and how to fix it.
        what: String,
    },

    /// An MCP host configuration file (`mcpServers` / VS Code `servers`) is refused.
    #[error("config file {}: {}{problem}", SafePath(path), Place(*position, field))]
    File {
        /// The file.
        path: std::path::PathBuf,
        /// Where in it, as a JSON pointer (`/mcpServers/docs/args/0`; empty for the whole file).
        field: String,
        /// The line and column (1-based, the column in characters) of the value, or of the
        /// object that lacks it; `None` for the file as a whole (too large, not a regular file).
        position: Option<(usize, usize)>,
        /// What is wrong there.
        problem: FileProblem,
    },

    /// A lock file (`skills.lock`) is refused.
    #[error("lock file {}: {}{problem}", SafePath(path), Place(*position, field))]
    LockFile {
        /// The file.
        path: std::path::PathBuf,
        /// Where in it (`skill[2].file[0].digest`; empty for the whole file).
        field: String,
        /// The line and column (1-based, the column in characters) of the value, or of the
        /// table that lacks it; `None` for the file as a whole, or a pin checked after reading.
        position: Option<(usize, usize)>,
        /// What is wrong there.
        problem: FileProblem,
    },
}

/// Where in a file: `line 3, column 12: /mcpServers/d/args: `, `the whole file: `. The key path
/// comes from the file (a server's name is a key), so it is shown display-safe.
struct Place<'a>(Option<(usize, usize)>, &'a str);

impl fmt::Display for Place<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some((line, column)) => write!(f, "line {line}, column {column}: ")?,
            None if self.1.is_empty() => f.write_str("the whole file: ")?,
            None => {}
        }
        if !self.1.is_empty() {
            // A key path is short; one made of a huge key is cut, never printed whole.
            const SHOWN: usize = 160;
            match self.1.char_indices().nth(SHOWN) {
                Some((cut, _)) => write!(f, "{}…: ", display_safe(&self.1[..cut]))?,
                None => write!(f, "{}: ", display_safe(self.1))?,
            }
        }
        Ok(())
    }
}

/// What is wrong at one place in a configuration or lock file.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileProblem {
    /// The file is not valid JSON / TOML (or not UTF-8); the position is the error's.
    Syntax {
        /// What the parser found wrong, in fixed words: never text of the file (R-E4).
        message: &'static str,
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
            FileProblem::Invalid { why } => write!(f, "{}", display_safe(why)),
        }
    }
}

/// The one of `choices` whose name is `given`, or a refusal that names them all.
pub(crate) fn choice<T: Copy + std::fmt::Display>(
    what: &str,
    given: &str,
    choices: &[T],
) -> Result<T, crate::error::ConfigError> {
    choices
        .iter()
        .find(|c| c.to_string() == given)
        .copied()
        .ok_or_else(|| {
            let names: Vec<String> = choices.iter().map(ToString::to_string).collect();
            crate::error::ConfigError::Invalid {
                what: format!(
                    "{:?} is not {what}: use {}",
                    crate::display::display_safe(given),
                    names.join(" or ")
                ),
            }
        })
}
