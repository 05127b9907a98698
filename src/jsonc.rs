//! JSONC as VS Code writes it (`.vscode/mcp.json`): JSON with `//` and `/* */` comments and
//! trailing commas (K6). Each is *blanked* — replaced by spaces byte for byte, line breaks kept —
//! so the text left is strict JSON for the config file's one JSON reader, and every byte offset in
//! it is the same offset in the file as the user wrote it.
//!
//! Why blanking and not a JSONC parser: the config reader's guarantees (R-E4) live in its one
//! path — a key given twice is refused naming it, every refusal names a line and a column in the
//! file and quotes none of it, the parser's own messages are shown only when they are fixed
//! words — and a second parser would need each of them again (a JSONC parser's tree keeps the
//! last of two equal keys silently). Blanking keeps that path whole: offsets, and so positions,
//! are unchanged, and anything JSONC does not allow beyond comments and trailing commas (single
//! quotes, bare keys, hexadecimal numbers) is still refused by the strict reader.

/// A text with its comments and trailing commas blanked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Blanked {
    /// The text, the same length as the original, every comment and trailing comma spaces
    /// (a comment's line breaks kept, so lines are the same too).
    pub(crate) text: String,
    /// The byte offset of the first comment or trailing comma, if the text had one.
    pub(crate) first: Option<usize>,
}

/// A `/*` comment that is never closed: its byte offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unclosed(pub(crate) usize);

/// The fixed words for an unclosed comment (shown as a syntax problem; quotes nothing).
pub(crate) const UNCLOSED: &str = "a /* comment is not closed with */";

/// `text` with every comment and trailing comma outside strings blanked (see the module docs).
/// Strings are skipped whole, escapes included, so `"http://x"` and `"a,]"` are left alone; an
/// unterminated string ends the scan (the strict reader then names it).
pub(crate) fn blank(text: &str) -> Result<Blanked, Unclosed> {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let mut first: Option<usize> = None;
    // The last comma seen with only blanks and comments after it: trailing if `}` or `]` comes.
    let mut comma: Option<usize> = None;
    let mut i = 0;
    while i < b.len() {
        match (b[i], b.get(i + 1)) {
            (b'"', _) => {
                i = string_end(b, i);
                comma = None;
            }
            (b'/', Some(b'/')) => {
                let end = b[i..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(b.len(), |n| i + n);
                spaces(&mut out[i..end]);
                first.get_or_insert(i);
                i = end;
            }
            (b'/', Some(b'*')) => {
                let end = b[i + 2..]
                    .windows(2)
                    .position(|w| w == b"*/")
                    .map(|n| i + 2 + n + 2)
                    .ok_or(Unclosed(i))?;
                spaces(&mut out[i..end]);
                first.get_or_insert(i);
                i = end;
            }
            (b',', _) => {
                comma = Some(i);
                i += 1;
            }
            (b'}' | b']', _) => {
                if let Some(at) = comma.take() {
                    out[at] = b' ';
                    first = Some(first.map_or(at, |f| f.min(at)));
                }
                i += 1;
            }
            (b' ' | b'\t' | b'\n' | b'\r', _) => i += 1,
            _ => {
                comma = None;
                i += 1;
            }
        }
    }
    // Only whole comments (from an ASCII `/` to a line break, `*/` or the end) and single commas
    // became spaces, so every character left is whole: the bytes are UTF-8.
    let text = String::from_utf8(out)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    Ok(Blanked { text, first })
}

/// The offset just past the string that starts with the quote at `start` (the end of the text
/// for one never closed).
fn string_end(b: &[u8], start: usize) -> usize {
    let mut j = start + 1;
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            b'"' => return j + 1,
            _ => j += 1,
        }
    }
    b.len()
}

/// Every byte a space, but line breaks (a comment's lines stay lines).
fn spaces(bytes: &mut [u8]) {
    for c in bytes {
        if *c != b'\n' && *c != b'\r' {
            *c = b' ';
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::{Unclosed, blank};

    fn blanked(text: &str) -> String {
        blank(text).expect("closed").text
    }

    #[test]
    fn k6_comments_and_trailing_commas_become_spaces_and_nothing_else_moves() {
        let text = "{\n  // the docs server\n  \"servers\": {\"a\": {\"url\": \"http://x/*y*/\",}, /* é\n */},\n}\n";
        let b = blank(text).expect("closed");
        assert_eq!(b.text.len(), text.len());
        assert_eq!(b.first, Some(4));
        for (x, y) in text
            .char_indices()
            .filter(|(_, c)| *c == '\n')
            .zip(b.text.char_indices().filter(|(_, c)| *c == '\n'))
        {
            assert_eq!(x.0, y.0, "line breaks stay where they were");
        }
        let v: Value = serde_json::from_str(&b.text).expect("strict JSON now");
        assert_eq!(v, json!({"servers": {"a": {"url": "http://x/*y*/"}}}));
    }

    #[test]
    fn k6_strings_are_left_alone_whatever_they_hold() {
        for text in [
            r#"{"a": "//not a comment"}"#,
            r#"{"a": "x,]"}"#,
            r#"{"a": "\"/*"}"#,
            r#"["\\", "//"]"#,
        ] {
            let b = blank(text).expect("closed");
            assert_eq!(b.text, text);
            assert_eq!(b.first, None);
        }
    }

    #[test]
    fn k6_a_comment_never_closed_is_named_by_its_offset() {
        assert_eq!(blank("{\"a\": 1 /* open"), Err(Unclosed(8)));
        // A comma inside a value list is not trailing.
        assert_eq!(blanked("[1, 2]"), "[1, 2]");
        assert_eq!(blanked("[1, // c\n ]"), "[1      \n ]");
        // Two commas in a row: only the last is trailing; the strict reader refuses the other.
        assert_eq!(blanked("[1,,]"), "[1, ]");
    }

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i32>().prop_map(Value::from),
            "[ -~é/*,\\]\\[]{0,8}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::btree_map("[a-z/*]{0,4}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// A comment, or nothing, as the next of `gaps` says.
    fn gap(gaps: &mut impl Iterator<Item = u8>, out: &mut String) {
        match gaps.next().unwrap_or(0) % 4 {
            1 => out.push_str(" // c, ] } \"\n"),
            2 => out.push_str("/* é, */"),
            _ => {}
        }
    }

    /// `value` written out with a comment or a trailing comma at each `gaps` choice.
    fn jsonc(v: &Value, gaps: &mut impl Iterator<Item = u8>, out: &mut String) {
        match v {
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    gap(gaps, out);
                    jsonc(item, gaps, out);
                    if i + 1 < items.len() || gaps.next().unwrap_or(0) % 2 == 1 {
                        out.push(',');
                    }
                }
                gap(gaps, out);
                out.push(']');
            }
            Value::Object(map) => {
                out.push('{');
                for (i, (k, item)) in map.iter().enumerate() {
                    gap(gaps, out);
                    out.push_str(&Value::from(k.as_str()).to_string());
                    gap(gaps, out);
                    out.push(':');
                    jsonc(item, gaps, out);
                    if i + 1 < map.len() || gaps.next().unwrap_or(0) % 2 == 1 {
                        out.push(',');
                    }
                }
                gap(gaps, out);
                out.push('}');
            }
            other => out.push_str(&other.to_string()),
        }
    }

    proptest! {
        #[test]
        fn k6_any_json_with_comments_and_trailing_commas_reads_as_the_json(
            v in value(),
            gaps in prop::collection::vec(any::<u8>(), 0..64),
        ) {
            // Strict JSON is left exactly as it is.
            let strict = v.to_string();
            prop_assert_eq!(blank(&strict).expect("closed"), super::Blanked { text: strict.clone(), first: None });
            let mut text = String::new();
            jsonc(&v, &mut gaps.into_iter(), &mut text);
            let b = blank(&text).expect("closed");
            prop_assert_eq!(b.text.len(), text.len());
            let read: Value = serde_json::from_str(&b.text).expect("strict JSON");
            prop_assert_eq!(read, v);
        }
    }
}
