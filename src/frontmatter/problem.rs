//! Why a frontmatter could not be read.

use std::fmt;

// What the file holds is of any length: shown display-safe and cut (`display_cut`).
use crate::display::{display_cut as quoted, display_cut_bare as safe};

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
            // The parser's message and the file's keys and scalars are the server's text (R-E5).
            Self::Syntax { message } => write!(f, "yaml syntax error: {}", safe(message)),
            Self::NotAMapping => f.write_str("not a mapping"),
            Self::Anchor => f.write_str("anchors are not allowed"),
            Self::Alias => f.write_str("aliases are not allowed"),
            Self::Tag => f.write_str("explicit tags are not allowed"),
            Self::DuplicateKey { key } => write!(f, "duplicate key {}", quoted(key)),
            Self::NonStringKey => f.write_str("keys must be strings"),
            Self::NonFinite { scalar } => {
                write!(f, "{} is not a finite number and has no JSON form", quoted(scalar))
            }
            Self::TooDeep { max } => write!(f, "nested deeper than {max} levels"),
            Self::TooManyNodes { max } => write!(f, "more than {max} nodes"),
            Self::MultipleDocuments => f.write_str("more than one yaml document"),
        }
    }
}

impl std::error::Error for FrontmatterProblem {}
