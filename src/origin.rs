//! `Origin`: the host's label for one server connection (R-O1).
//!
//! A skill's identity is (origin, skill URI). The label is chosen by the *host* — never the
//! server's self-reported `serverInfo.name` — and every record the cache keeps carries it.

use std::fmt::{self, Write as _};

use crate::config_error::ConfigError;

/// The longest label accepted, in bytes. Encoded for the filesystem, each byte takes at most three
/// characters, so an encoded label always fits one 255-byte path component.
pub const MAX_LABEL_BYTES: usize = 80;

/// A host-assigned origin label: 1 to 80 bytes of UTF-8, every character of it visible.
///
/// A person tells origins apart by their labels (in `list --all`, in a `skills.lock` under
/// review), so a label with a control, format, bidi or other invisible character (R-E6: `team`
/// and `team` + U+200B would look the same) is refused, naming the character.
///
/// ```
/// use skillcache::Origin;
/// let o = Origin::new("docs-server").unwrap();
/// assert_eq!(o.as_str(), "docs-server");
/// assert!(Origin::new("").is_err());
/// assert!(Origin::new("x".repeat(300)).is_err());
/// let e = Origin::new("team\u{200B}").unwrap_err();
/// assert!(e.to_string().contains("U+200B"), "{e}");
/// // Hostile labels are fine as labels: they are encoded before they touch a path.
/// assert_eq!(Origin::new("..").unwrap().path_component(), "%2E.");
/// // Labels that differ only in case never share a folder, even where the filesystem folds case.
/// assert_eq!(Origin::new("Docs").unwrap().path_component(), "%44ocs");
/// ```
#[derive(Clone)]
pub struct Origin {
    label: String,
    /// The path component, computed once: the hit path builds blob paths without encoding.
    component: String,
}

impl Origin {
    /// Validates a label.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`](crate::error::ConfigError::Invalid) for an empty or over-long
    /// label, or one with a character that is not visible (R-E6), naming its code point. The
    /// message names the label (display-safe, and cut after its first 40 characters: R-E5) and
    /// says what a label must be. The readers of host files do not use this message: they
    /// quote nothing of a file (R-E4), so they say only what is wrong.
    pub fn new(label: impl Into<String>) -> Result<Origin, ConfigError> {
        let label = label.into();
        if let Some(problem) = label_problem(&label) {
            return Err(ConfigError::Invalid {
                what: format!("origin label {} refused: {problem}", Shown(&label)),
            });
        }
        let component = encode(&label);
        Ok(Origin { label, component })
    }

    /// The label.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.label
    }

    internal_pub! {
        /// The label as one safe, reversible path component (R-O2): every byte outside
        /// `[a-z0-9._-]` becomes `%XX`, and a leading `.` is encoded too, so `.`, `..`, empty and
        /// hidden names are impossible and two labels never share a component. Upper-case letters are
        /// escaped as well (R-H13): the only upper-case letters in a component are the hex digits of
        /// escapes, in fixed positions, so two different labels stay two different folders even on a
        /// case-insensitive filesystem (`Docs` is `%44ocs`, `docs` is `docs`).
        #[must_use]
        fn path_component(&self) -> &str {
            &self.component
        }
    }

    internal_pub! {
        /// Recovers the origin from a path component made by [`Origin::path_component`] (R-O2).
        #[must_use]
        fn from_path_component(component: &str) -> Option<Origin> {
            let bytes = component.as_bytes();
            let mut out = Vec::with_capacity(bytes.len());
            let mut i = 0;
            while i < bytes.len() {
                if bytes[i] == b'%' {
                    let hex = component.get(i + 1..i + 3)?;
                    out.push(u8::from_str_radix(hex, 16).ok()?);
                    i += 3;
                } else {
                    out.push(bytes[i]);
                    i += 1;
                }
            }
            let origin = Origin::new(String::from_utf8(out).ok()?).ok()?;
            // Only the one canonical spelling maps back; anything else is not ours.
            (origin.path_component() == component).then_some(origin)
        }
    }
}

/// What is wrong with `label` as an origin label, or `None` for a valid one: what a label must
/// be and how this one fails, in fixed words, counts and code points only, so a reader of a host
/// file can show it without quoting the file (R-E4).
pub(crate) fn label_problem(label: &str) -> Option<String> {
    let this = if label.is_empty() {
        "this one is empty".to_owned()
    } else if label.len() > MAX_LABEL_BYTES {
        format!("this one is {} bytes long", label.len())
    } else {
        format!("this one {}", crate::display::invisible_in_label(label)?)
    };
    Some(format!(
        "an origin label (the host's name for a server) must be 1 to {MAX_LABEL_BYTES} bytes, \
         every character visible; {this}"
    ))
}

/// A refused label as its message shows it: quoted, display-safe (its invisible characters
/// escaped, R-E5) and cut after 40 characters, so an over-long one cannot flood the message.
struct Shown<'a>(&'a str);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const SHOWN: usize = 40;
        match self.0.char_indices().nth(SHOWN) {
            Some((cut, _)) => write!(f, "\"{}…\"", crate::display::display_safe(&self.0[..cut])),
            None => write!(f, "\"{}\"", crate::display::display_safe(self.0)),
        }
    }
}

fn encode(label: &str) -> String {
    let mut out = String::with_capacity(label.len() * 3);
    for (i, &b) in label.as_bytes().iter().enumerate() {
        let literal = b.is_ascii_lowercase()
            || b.is_ascii_digit()
            || b == b'_'
            || b == b'-'
            || (b == b'.' && i > 0);
        if literal {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

// Equality, hashing and order are the label's own (the component is a function of it), as
// `Borrow<str>` requires: maps keyed by `Origin` can be searched with a `&str`.
impl PartialEq for Origin {
    fn eq(&self, other: &Self) -> bool {
        self.label == other.label
    }
}
impl Eq for Origin {}
impl std::hash::Hash for Origin {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.label.hash(state);
    }
}
impl PartialOrd for Origin {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Origin {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.label.cmp(&other.label)
    }
}

impl std::borrow::Borrow<str> for Origin {
    fn borrow(&self) -> &str {
        &self.label
    }
}

// The label as it is: every character of it is visible (R-E6), so it is inert shown (R-E5).
impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label)
    }
}

/// The label as given: what a report (`CachedEntry`, `VerifyReport`) serializes.
impl serde::Serialize for Origin {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.label)
    }
}

impl fmt::Debug for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Origin({:?})", self.label)
    }
}
