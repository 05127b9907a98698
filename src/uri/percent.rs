//! Percent-decoding exactly once, and the canonical re-encoding.
//!
//! The canonical form of a decoded segment writes the RFC 3986 unreserved characters, the
//! sub-delimiters, `:` and `@` as themselves and every other byte as `%XX` (upper-case hex). It is
//! injective on decoded bytes, so canonical equality is exactly decoded equality (R-W4).

use crate::rule::Rule;

fn hex_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Decodes every `%XX` once; a `%` without two hex digits is an error.
pub(super) fn decode_once(text: &str) -> Result<Vec<u8>, Rule> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hi = bytes.get(i + 1).copied().and_then(hex_value);
            let lo = bytes.get(i + 2).copied().and_then(hex_value);
            match (hi, lo) {
                (Some(hi), Some(lo)) => out.push((hi << 4) | lo),
                _ => return Err(Rule::PercentEncoding),
            }
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Ok(out)
}

fn is_literal(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@".contains(&b)
}

/// Appends the canonical encoding of decoded bytes.
pub(super) fn encode_canonical(bytes: &[u8], out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in bytes {
        if is_literal(b) {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0x0f)]));
        }
    }
}
