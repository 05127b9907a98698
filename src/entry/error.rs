//! The entry layer's errors: digests, entries, wire responses, frontmatter, skill folders.

use std::fmt;

use crate::display::{SafePath, display_cut, display_cut_bare};
use crate::frontmatter::FrontmatterProblem;
use crate::origin::Origin;
use crate::rule::Rule;
use crate::uri::SkillUri;

/// Untrusted input (an entry, a digest, a response, a frontmatter, a skill folder) broke a rule.
#[derive(Debug, thiserror::Error)]
pub enum EntryError {
    /// A digest string is not `sha256:` followed by 64 lowercase hex digits (R-W1).
    #[error("invalid digest {}: {rule}", display_cut(text))]
    Digest {
        /// The text that was offered as a digest.
        text: String,
        /// The rule it broke.
        rule: Rule,
    },

    /// A skill entry from a server breaks a rule; nothing from it is cached or loaded (R-W*).
    #[error("invalid skill entry{}{}: {}: {rule}", skill_label(skill.as_deref()), from_label(origin.as_ref()), display_cut_bare(field))]
    Invalid {
        /// The origin whose server sent the entry; `None` for an entry that came from no server
        /// (a lock file's, a host's own JSON).
        origin: Option<Origin>,
        /// The entry's `uri`, when it could be read.
        skill: Option<String>,
        /// Where in the entry the problem is, e.g. `resources[3].digest`.
        field: String,
        /// The rule it broke.
        rule: Rule,
    },

    /// A skill is larger than the configured limits; declined from its entry alone (R-W7).
    #[error("skill {skill}{} declined: {limit} is {declared}, above the limit of {max}", from_label(origin.as_ref()))]
    LimitExceeded {
        /// The origin whose server published the entry, once the cache names it.
        origin: Option<Origin>,
        /// The skill's URI.
        skill: SkillUri,
        /// Which limit.
        limit: Limit,
        /// What the entry declares (or, for a dynamic skill, what was received).
        declared: u64,
        /// The limit in force.
        max: u64,
    },

    /// A server's response broke the protocol (R-W9).
    #[error("invalid {method} response{}: {rule}", from_label(origin.as_ref()))]
    Response {
        /// The origin whose server answered; filled in by the cache, which knows the host's label
        /// for the server (the code that reads a response does not).
        origin: Option<Origin>,
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

    /// A local skill folder holds something a published skill cannot.
    #[error("{}: {why}", SafePath(path))]
    Folder {
        /// The offending path.
        path: std::path::PathBuf,
        /// What is wrong with it.
        why: &'static str,
    },
}

/// The entry's `uri` as a message names it: display-safe and cut, as every URI a message shows
/// (a server chose it, of any length).
fn skill_label(skill: Option<&str>) -> String {
    skill.map_or_else(String::new, |s| {
        format!(" {}", crate::display::display_cut_bare(s))
    })
}

/// `from origin X`, for a message about what a server sent.
fn from_label(origin: Option<&Origin>) -> String {
    origin.map_or_else(String::new, |o| format!(" from origin {o}"))
}

impl EntryError {
    /// The error as the cache hands it out: what a server sent names the origin it came from,
    /// as its request errors do ([`SourceError`](crate::error::SourceError)'s).
    pub(crate) fn sent_by(self, from: &Origin) -> EntryError {
        match self {
            EntryError::Invalid {
                origin: None,
                skill,
                field,
                rule,
            } => EntryError::Invalid {
                origin: Some(from.clone()),
                skill,
                field,
                rule,
            },
            EntryError::Response {
                origin: None,
                method,
                rule,
            } => EntryError::Response {
                origin: Some(from.clone()),
                method,
                rule,
            },
            EntryError::LimitExceeded {
                origin: None,
                skill,
                limit,
                declared,
                max,
            } => EntryError::LimitExceeded {
                origin: Some(from.clone()),
                skill,
                limit,
                declared,
                max,
            },
            other => other,
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

impl From<FrontmatterProblem> for EntryError {
    fn from(problem: FrontmatterProblem) -> EntryError {
        EntryError::Frontmatter { problem }
    }
}
