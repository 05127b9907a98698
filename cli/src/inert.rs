//! What the command prints is inert (R-E5): every string a server or a file chose reaches the
//! terminal through `skillcache::display_safe`, in the human output, in error lines and in the
//! `--json` output.

use serde_json::Value;
use serde_json::ser::{Formatter, PrettyFormatter};
use skillcache::display_safe;

/// Whether `c` is shown as an escape by [`display_safe`] (after a letter, so a combining mark,
/// which is harmless inside a JSON string, is not).
fn hidden(c: char) -> bool {
    let mut buf = [0u8; 8];
    buf[0] = b'a';
    let len = 1 + c.encode_utf8(&mut buf[1..]).len();
    let text = std::str::from_utf8(&buf[..len]).unwrap_or_default();
    display_safe(text).to_string() != text
}

/// `serde_json`'s pretty output, with every character [`display_safe`] hides written as a `\u`
/// escape. `serde_json` itself escapes only `"`, `\` and C0 controls: DEL, the C1 controls (CSI
/// included), bidi overrides and zero-width characters would reach the terminal raw. Escaped,
/// the text is inert and the JSON value is unchanged — a parser reads back the very string the
/// server sent, which is what `--json` is for.
struct InertJson(PrettyFormatter<'static>);

impl Formatter for InertJson {
    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        let mut plain = 0;
        for (i, c) in fragment.char_indices() {
            if (c.is_ascii() && c != '\u{7f}') || !hidden(c) {
                continue;
            }
            writer.write_all(&fragment.as_bytes()[plain..i])?;
            plain = i + c.len_utf8();
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                write!(writer, "\\u{unit:04x}")?;
            }
        }
        writer.write_all(&fragment.as_bytes()[plain..])
    }

    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object_value(w)
    }
}

/// `v` as pretty JSON whose text is inert (see [`InertJson`]).
pub(crate) fn json(v: &Value) -> String {
    let mut out = Vec::new();
    let mut ser =
        serde_json::Serializer::with_formatter(&mut out, InertJson(PrettyFormatter::new()));
    // A `Value` always serialises, and the formatter writes valid UTF-8 (escapes are ASCII).
    let _ = serde::Serialize::serialize(v, &mut ser);
    String::from_utf8(out).unwrap_or_default()
}

/// The text of one error of a cause chain, inert: skillcache's own errors show outside text
/// display-safe in their `Display` already (escaping them again would double their escapes);
/// any other — the MCP SDK's, an HTTP client's, which may carry what a server sent — is shown
/// through [`display_safe`].
pub(crate) fn error_text(e: &(dyn std::error::Error + 'static)) -> String {
    use skillcache::error::{
        ConfigError, EntryError, IndexError, SourceError, StoreError, UriError, VerifyError,
    };
    let ours = e.is::<skillcache::Error>()
        || e.is::<UriError>()
        || e.is::<EntryError>()
        || e.is::<VerifyError>()
        || e.is::<SourceError>()
        || e.is::<StoreError>()
        || e.is::<IndexError>()
        || e.is::<ConfigError>();
    if ours {
        e.to_string()
    } else {
        display_safe(&e.to_string()).to_string()
    }
}

/// A file's bytes for a person at a terminal: text shown line by line with everything hidden
/// escaped (`{:#}`); bytes that are not UTF-8 are shown as U+FFFD, which is visible.
pub(crate) fn file_text(bytes: &[u8]) -> String {
    format!("{:#}", display_safe(&String::from_utf8_lossy(bytes)))
}

#[cfg(test)]
mod tests {
    use super::{error_text, json};

    #[test]
    fn e5_json_text_is_inert_and_its_value_unchanged() {
        let hostile = "a\u{1b}[2J\u{7f}\u{9b}\u{202e}\u{200b}\u{e0041}é\u{301}";
        let text = json(&serde_json::json!({ "name": hostile, hostile: 1 }));
        assert!(
            !text.contains([
                '\u{1b}',
                '\u{7f}',
                '\u{9b}',
                '\u{202e}',
                '\u{200b}',
                '\u{e0041}'
            ]),
            "{text}"
        );
        assert!(
            text.contains("\\u202e") && text.contains("\\udb40\\udc41"),
            "{text}"
        );
        assert!(
            text.contains("é\u{301}"),
            "letters and marks are kept: {text}"
        );
        let back: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(back["name"], hostile);
        assert_eq!(back[hostile], 1);
    }

    #[test]
    fn e5_a_foreign_error_is_escaped_and_ours_is_not_escaped_twice() {
        let foreign = std::io::Error::other("server said \u{1b}]0;pwned\u{7}");
        assert_eq!(error_text(&foreign), r"server said \x1b]0;pwned\x07");
        let ours = skillcache::Error::from(skillcache::error::UriError {
            uri: "skill://a\u{202e}b".into(),
            rule: skillcache::error::Rule::NotSkillMd,
        });
        assert!(
            error_text(&ours).contains(r"a\u{202E}b"),
            "{}",
            error_text(&ours)
        );
    }
}
