//! The rules untrusted input can break (URIs, entries, wire messages). A leaf: it imports nothing
//! of the crate, so every layer may name a rule without importing another layer.

use std::fmt;

// Every string a rule carries came from a server or a file: shown display-safe (R-E5), and cut
// after a few hundred characters with the count of the rest, since the server chose its length
// (a 200,000-character `nextCursor` made a message of that size).
use crate::display::{display_cut as quoted, display_cut_bare as safe};

/// A rule that untrusted input broke. Each variant's message names the rule.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rule {
    /// A required field is absent.
    Missing,
    /// A field has the wrong JSON type.
    WrongType {
        /// The type the field must have.
        expected: &'static str,
    },
    /// A digest does not start with `sha256:`.
    DigestPrefix,
    /// A digest's hex part is not 64 characters.
    DigestLength {
        /// The number of characters after the prefix.
        actual: usize,
    },
    /// A digest's hex part has a character that is not lowercase hex.
    DigestCharacter,
    /// A size is not an integer in `0 ..= 2^53-1`.
    SizeRange,
    /// `resources` is neither a non-empty array nor the string `"dynamic"`.
    ResourcesShape,
    /// The manifest does not list the skill's own `SKILL.md`.
    MissingSkillMd,
    /// A URI appears twice (after percent-normalisation).
    DuplicateUri {
        /// The second spelling seen.
        uri: String,
    },
    /// A file URI is not inside the skill's root.
    OutsideRoot {
        /// The skill root it had to be inside.
        root: String,
    },
    /// A skill name breaks the Agent Skills naming rules.
    Name {
        /// Which part of the rule.
        why: &'static str,
    },
    /// The skill URI's last path segment is not `frontmatter.name`.
    NameMismatch {
        /// The last segment of the skill path.
        segment: String,
        /// `frontmatter.name`.
        name: String,
    },
    /// A description is empty or longer than 1024 characters.
    DescriptionLength {
        /// Its length in Unicode scalar values.
        chars: usize,
    },
    /// A strict Agent Skills rule (R-W6, strict mode).
    Strict {
        /// Which rule.
        why: &'static str,
    },
    /// A URI is not an absolute hierarchical URI (`scheme://authority/path`).
    NotHierarchical,
    /// A URI has a scheme that is not `ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`.
    Scheme,
    /// A URI has a query component.
    Query,
    /// A URI (not a reference) has a fragment.
    Fragment,
    /// A `skill://` URI has userinfo or a port, or an empty authority.
    Authority {
        /// Which part of the rule.
        why: &'static str,
    },
    /// A path segment is empty, `.`, `..`, or contains `/`, `\` or NUL after decoding once.
    Segment {
        /// The offending segment as written.
        segment: String,
        /// Which part of the rule.
        why: &'static str,
    },
    /// A `%` not followed by two hex digits.
    PercentEncoding,
    /// A control character in a URI.
    ControlCharacter,
    /// A URI or a reference longer than [`MAX_URI_BYTES`](crate::MAX_URI_BYTES): refused
    /// before it is parsed, sent or stored, whoever chose it (a server, a host, a model).
    TooLong,
    /// A reference a binding was given is not well-formed Unicode: it holds a lone surrogate (a
    /// Python `str` decoded with `surrogateescape`, a JavaScript string cut inside a pair). The
    /// binding refuses it rather than replace the surrogate, which would make two references
    /// name one file.
    NotUnicode,
    /// A skill URI that does not end in `/SKILL.md` or has no skill path before it.
    NotSkillMd,
    /// A reference that would leave the skill root (`../x`, `//host/x`, `/x`, another URI).
    EscapesRoot,
    /// A value that is not allowed (for example `cacheScope: "shared"`).
    Value {
        /// What is allowed.
        allowed: &'static str,
    },
    /// A response answered a different skill than the one asked for.
    WrongSkill {
        /// The URI that was requested.
        requested: String,
        /// The URI that came back.
        returned: String,
    },
    /// A listing repeated a skill URI; every copy is refused.
    RepeatedSkill {
        /// The repeated URI.
        uri: String,
    },
    /// A listing repeated a `nextCursor`; paging stops.
    RepeatedCursor {
        /// The cursor.
        cursor: String,
    },
    /// `resources/read` returned no item for the requested URI.
    NoContent {
        /// The requested URI.
        uri: String,
    },
    /// `resources/read` returned two different items for the requested URI.
    ConflictingContent {
        /// The requested URI.
        uri: String,
    },
    /// A content item has neither `text` nor `blob`, or both.
    ContentShape,
    /// A `blob` is not valid base64.
    Base64,
    /// A result's `resultType` is not `complete` (for example `input_required`): skillcache
    /// only accepts complete results.
    ResultType {
        /// The `resultType` the server sent.
        actual: String,
    },
    /// The server declared a capability set without this extension or without `resources`.
    Capability {
        /// What is missing.
        missing: &'static str,
    },
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.fixed() {
            Some(text) => f.write_str(text),
            None => self.with_values(f),
        }
    }
}

impl Rule {
    /// The message of a rule that names no value.
    fn fixed(&self) -> Option<&'static str> {
        Some(match self {
            Rule::Missing => "required field is missing",
            Rule::DigestPrefix => "must start with \"sha256:\"",
            Rule::DigestCharacter => "hex digits must be 0-9 or lowercase a-f",
            Rule::SizeRange => "must be an integer from 0 to 2^53-1",
            Rule::ResourcesShape => {
                "must be a non-empty array of {uri, digest, size} or \"dynamic\""
            }
            Rule::MissingSkillMd => "must list the skill's own SKILL.md",
            Rule::NotHierarchical => "must be an absolute URI of the form scheme://authority/path",
            Rule::Scheme => "has an invalid scheme",
            Rule::Query => "must not have a query",
            Rule::Fragment => "must not have a fragment",
            Rule::PercentEncoding => "has a '%' not followed by two hex digits",
            Rule::ControlCharacter => "contains a control character",
            Rule::TooLong => "is longer than 8 KiB",
            Rule::NotUnicode => "is not well-formed Unicode (it holds a lone surrogate)",
            Rule::NotSkillMd => {
                "must end in /SKILL.md with at least one skill path segment before it"
            }
            Rule::EscapesRoot => "leaves the skill root",
            Rule::ContentShape => "a content item must have exactly one of text or blob",
            Rule::Base64 => "blob is not valid base64",
            // Named explicitly, no wildcard: a new rule must say which kind it is.
            Rule::WrongType { .. }
            | Rule::DigestLength { .. }
            | Rule::DuplicateUri { .. }
            | Rule::OutsideRoot { .. }
            | Rule::Name { .. }
            | Rule::NameMismatch { .. }
            | Rule::DescriptionLength { .. }
            | Rule::Strict { .. }
            | Rule::Authority { .. }
            | Rule::Segment { .. }
            | Rule::Value { .. }
            | Rule::WrongSkill { .. }
            | Rule::RepeatedSkill { .. }
            | Rule::RepeatedCursor { .. }
            | Rule::NoContent { .. }
            | Rule::ConflictingContent { .. }
            | Rule::ResultType { .. }
            | Rule::Capability { .. } => return None,
        })
    }

    /// The message of a rule that names a value (display-safe, R-E5) or a count.
    fn with_values(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rule::WrongType { expected } => write!(f, "must be {expected}"),
            Rule::DigestLength { actual } => {
                write!(f, "must have 64 hex digits after \"sha256:\", not {actual}")
            }
            Rule::DuplicateUri { uri } => write!(f, "lists {} more than once", safe(uri)),
            Rule::OutsideRoot { root } => {
                write!(f, "must be inside the skill root {}/", safe(root))
            }
            Rule::Name { why } => write!(f, "invalid skill name: {why}"),
            Rule::NameMismatch { segment, name } => write!(
                f,
                "the skill path ends in {} but frontmatter.name is {}",
                quoted(segment),
                quoted(name)
            ),
            Rule::DescriptionLength { chars } => {
                write!(f, "must be 1 to 1024 characters, not {chars}")
            }
            Rule::Strict { why } => write!(f, "strict Agent Skills rule: {why}"),
            Rule::Authority { why } => write!(f, "invalid authority: {why}"),
            Rule::Segment { segment, why } => write!(f, "path segment {} {why}", quoted(segment)),
            Rule::Value { allowed } => write!(f, "must be {allowed}"),
            Rule::WrongSkill {
                requested,
                returned,
            } => {
                write!(
                    f,
                    "asked for {} but got {}",
                    safe(requested),
                    safe(returned)
                )
            }
            Rule::RepeatedSkill { uri } => {
                write!(
                    f,
                    "{} is listed more than once; every copy is refused",
                    safe(uri)
                )
            }
            Rule::RepeatedCursor { cursor } => {
                write!(
                    f,
                    "nextCursor {} was already seen; paging stopped",
                    quoted(cursor)
                )
            }
            Rule::NoContent { uri } => write!(f, "no content item for {}", safe(uri)),
            Rule::ConflictingContent { uri } => {
                write!(f, "two different content items for {}", safe(uri))
            }
            Rule::ResultType { actual } => {
                write!(
                    f,
                    "resultType is {}; only \"complete\" is accepted",
                    quoted(actual)
                )
            }
            Rule::Capability { missing } => write!(f, "the server did not declare {missing}"),
            // Every other rule names no value: `fixed` has its message.
            _ => f.write_str(self.fixed().unwrap_or("breaks a rule of the specification")),
        }
    }
}
