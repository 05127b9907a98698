//! `Origin`: the host's label for one server connection (R-O1).
//!
//! A skill's identity is (origin, skill URI). The label is chosen by the *host* — never the
//! server's self-reported `serverInfo.name` — and every record the cache keeps carries it.

use std::fmt::{self, Write as _};

use crate::error::Error;

/// The longest label accepted, in bytes. Encoded for the filesystem, each byte takes at most three
/// characters, so an encoded label always fits one 255-byte path component.
pub const MAX_LABEL_BYTES: usize = 80;

/// A host-assigned origin label: 1 to [`MAX_LABEL_BYTES`] bytes of UTF-8 without control
/// characters.
///
/// ```
/// use skillcache::Origin;
/// let o = Origin::new("docs-server").unwrap();
/// assert_eq!(o.as_str(), "docs-server");
/// assert!(Origin::new("").is_err());
/// assert!(Origin::new("x".repeat(300)).is_err());
/// // Hostile labels are fine as labels: they are encoded before they touch a path.
/// assert_eq!(Origin::new("..").unwrap().path_component(), "%2E.");
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Origin(String);

impl Origin {
    /// Validates a label.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for an empty or over-long label or one with control characters.
    pub fn new(label: impl Into<String>) -> Result<Origin, Error> {
        let label = label.into();
        let what = if label.is_empty() {
            "an origin label must not be empty"
        } else if label.len() > MAX_LABEL_BYTES {
            "an origin label must be at most 80 bytes"
        } else if label.chars().any(char::is_control) {
            "an origin label must not contain control characters"
        } else {
            return Ok(Origin(label));
        };
        Err(Error::InvalidConfig {
            what: format!("{what} (got {label:?})"),
        })
    }

    /// The label.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The label as one safe, reversible path component (R-O2): every byte outside
    /// `[A-Za-z0-9._-]` becomes `%XX`, and a leading `.` is encoded too, so `.`, `..`, empty and
    /// hidden names are impossible and two labels never share a component.
    #[must_use]
    pub fn path_component(&self) -> String {
        let mut out = String::with_capacity(self.0.len() * 3);
        for (i, &b) in self.0.as_bytes().iter().enumerate() {
            let literal =
                b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || (b == b'.' && i > 0);
            if literal {
                out.push(char::from(b));
            } else {
                let _ = write!(out, "%{b:02X}");
            }
        }
        out
    }

    /// Recovers the origin from a path component made by [`Origin::path_component`] (R-O2).
    #[must_use]
    pub fn from_path_component(component: &str) -> Option<Origin> {
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

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Origin({:?})", self.0)
    }
}
