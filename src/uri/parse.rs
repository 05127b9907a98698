//! An absolute hierarchical URI (`scheme://authority/seg/seg`) into checked components.

use super::percent::{decode_once, encode_canonical};
use crate::rule::Rule;

/// The checked pieces of a URI.
pub(super) struct Parts {
    /// The decoded authority (empty when the URI has none, as in `file:///x`).
    pub authority: Vec<u8>,
    /// The decoded path segments.
    pub segments: Vec<Vec<u8>>,
    /// `scheme://authority/seg/…` with the scheme lower-cased and every component canonical.
    pub canonical: String,
}

/// Whether `text` starts with `scheme:`; returns the scheme's length.
pub(super) fn scheme_len(text: &str) -> Option<usize> {
    let colon = text.find(':')?;
    let scheme = &text.as_bytes()[..colon];
    let ok = scheme.first().is_some_and(u8::is_ascii_alphabetic)
        && scheme
            .iter()
            .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.'));
    ok.then_some(colon)
}

/// Parses and checks an absolute hierarchical URI (R-W4).
pub(super) fn absolute(uri: &str) -> Result<Parts, Rule> {
    if uri.len() > super::MAX_URI_BYTES {
        return Err(Rule::TooLong);
    }
    if uri.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err(Rule::ControlCharacter);
    }
    if uri.contains('#') {
        return Err(Rule::Fragment);
    }
    if uri.contains('?') {
        return Err(Rule::Query);
    }
    let colon = uri.find(':').ok_or(Rule::NotHierarchical)?;
    if scheme_len(uri) != Some(colon) {
        return Err(Rule::Scheme);
    }
    let scheme = uri[..colon].to_ascii_lowercase();
    let rest = uri[colon + 1..]
        .strip_prefix("//")
        .ok_or(Rule::NotHierarchical)?;
    let (authority_text, path) = rest.find('/').map_or((rest, ""), |i| rest.split_at(i));

    let authority = decode_once(authority_text)?;
    if scheme == "skill" {
        if authority.is_empty() {
            return Err(Rule::Authority {
                why: "a skill:// URI needs its first path segment here",
            });
        }
        if authority_text.contains('@') {
            return Err(Rule::Authority {
                why: "userinfo is not allowed in a skill:// URI",
            });
        }
        if authority_text.contains(':') {
            return Err(Rule::Authority {
                why: "a port is not allowed in a skill:// URI",
            });
        }
    }
    if !authority.is_empty() {
        check_segment(authority_text, &authority)?;
    }

    let mut canonical = String::with_capacity(uri.len() + 8);
    canonical.push_str(&scheme);
    canonical.push_str("://");
    encode_canonical(&authority, &mut canonical);

    let mut segments = Vec::new();
    if !path.is_empty() {
        for text in path[1..].split('/') {
            let decoded = decode_once(text)?;
            check_segment(text, &decoded)?;
            canonical.push('/');
            encode_canonical(&decoded, &mut canonical);
            segments.push(decoded);
        }
    }
    Ok(Parts {
        authority,
        segments,
        canonical,
    })
}

/// The segment rules of R-W4, applied to a segment after decoding it once.
pub(super) fn check_segment(text: &str, decoded: &[u8]) -> Result<(), Rule> {
    let why = if decoded.is_empty() {
        "is empty"
    } else if decoded == b"." || decoded == b".." {
        "is a dot segment"
    } else if decoded.contains(&b'/') {
        "contains '/' after decoding"
    } else if decoded.contains(&b'\\') {
        "contains '\\'"
    } else if decoded.contains(&0) {
        "contains NUL"
    } else {
        return Ok(());
    };
    Err(Rule::Segment {
        segment: text.to_owned(),
        why,
    })
}
