//! Text that reaches a person is inert (R-E5), and labels are visible (R-E6).
//!
//! A server or a file chooses every name, description, URI and error message the cache shows.
//! Printed raw, such a string can drive the terminal (`ESC ]0;…` sets the window title, `ESC [2J`
//! clears the screen, a colour code paints a fake "approved"), reorder what is shown after it
//! (bidi overrides and isolates), or hide a difference (`team` and `team` + U+200B look the same).
//! [`display_safe`] shows every such character as an escape instead, so the output is inert and
//! two different strings never print the same: the backslash of the escapes is itself escaped
//! (`\\`), so the form is injective.
//!
//! What is escaped — "hidden" characters:
//! - control characters: C0, DEL and C1 (general category Cc);
//! - format characters (Cf): bidi embeddings, overrides, isolates and marks (U+202A–U+202E,
//!   U+2066–U+2069, U+200E/F, U+061C), zero-width characters (U+200B–U+200D, U+2060–U+2064,
//!   U+FEFF), the soft hyphen U+00AD, U+180E, tags (U+E0001, U+E0020–U+E007F), …;
//! - every space but U+0020 (Zs), and the line and paragraph separators (Zl, Zp);
//! - private-use, surrogate and unassigned code points (Co, Cs, Cn): nobody knows how they render;
//! - Unicode's default-ignorable code points, which render as nothing: the Hangul fillers
//!   (U+115F, U+1160, U+3164, U+FFA0), variation selectors (U+FE00–U+FE0F, U+E0100–U+E01EF),
//!   U+034F, U+17B4/5, the Mongolian selectors; and the blank braille pattern U+2800;
//! - a combining mark at the very start, which would join whatever was printed before it.
//!
//! Letters of other scripts that merely look alike (Cyrillic `а`, Latin `a`) are visible
//! characters and are shown as they are: telling them apart is a matter of fonts, not escapes.

use std::fmt::{self, Write as _};

use unicode_general_category::{GeneralCategory, get_general_category};

/// `text` in a form that is safe to show a person: a `Display` (and `Debug`) value.
///
/// Every control character, escape sequence, bidi override or isolate, zero-width or other
/// invisible format character, space other than U+0020, private-use or unassigned code point,
/// and invisible filler is shown as an escape: `\x1b` for ASCII controls (`\t`, `\n`, `\r` for
/// those three), `\u{202E}` for the rest, and a backslash as `\\`. The result is inert in a
/// terminal, and two different strings never display the same. Everything else, non-ASCII
/// letters included, is shown as it is.
///
/// - `{}` escapes line breaks too: one line, for a table cell or a log line.
/// - `{:#}` keeps `\n` and tab as they are: a whole text file, shown line by line.
/// - `{:?}` is the one-line form in double quotes, with `"` escaped.
///
/// Width and alignment (`{:<20}`) apply to the escaped text.
///
/// Errors need no wrapping: every error of this crate shows the server's and the files' text in
/// this form in its own `Display` (R-E5), so printing `err` is safe. Use this for what the
/// crate hands out as data: names, descriptions, URIs, labels, file contents.
///
/// ```
/// use skillcache::display_safe;
/// assert_eq!(display_safe("notes").to_string(), "notes");
/// // A terminal title, a bidi override and a zero-width space, shown inert.
/// assert_eq!(
///     display_safe("\x1b]0;pwned\x07safe\u{202E}txt.exe\u{200B}").to_string(),
///     r"\x1b]0;pwned\x07safe\u{202E}txt.exe\u{200B}"
/// );
/// // The escapes cannot be forged: a literal backslash is shown doubled.
/// assert_eq!(display_safe(r"\u{202E}").to_string(), r"\\u{202E}");
/// // Lines kept for a text file, and the quoted form.
/// assert_eq!(format!("{:#}", display_safe("a\n\tb\r")), "a\n\tb\\r");
/// assert_eq!(format!("{:?}", display_safe("say \"hi\"\n")), r#""say \"hi\"\n""#);
/// assert_eq!(format!("[{:<6}]", display_safe("é\u{A0}")), "[é\\u{00A0}]");
/// ```
#[must_use]
pub fn display_safe(text: &str) -> impl fmt::Display + fmt::Debug + '_ {
    Safe(text)
}

/// A path as [`display_safe`] shows text (lossy for bytes that are not UTF-8): for errors that
/// name a file, whose name may come from a repository or a hostile root.
pub(crate) struct SafePath<'a>(pub(crate) &'a std::path::Path);

impl fmt::Display for SafePath<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&Safe(&self.0.to_string_lossy()), f)
    }
}

/// How many characters of a refused URI or reference an error shows: enough to recognise it,
/// while a 10 MB reference a model chose makes a message of a few hundred bytes, not 10 MB.
pub(crate) const SHOWN_URI: usize = 256;

/// `text` quoted and display-safe, as `{:?}` of [`display_safe`] shows it, cut after
/// [`SHOWN_URI`] characters with how many more there were: for input an error names that may be
/// of any length (a refused reference, a URI a server sent).
pub(crate) fn display_cut(text: &str) -> impl fmt::Display + '_ {
    Cut(text, true)
}

/// [`display_cut`] without the quotes, for a URI a message names as it is (a file's).
pub(crate) fn display_cut_bare(text: &str) -> impl fmt::Display + '_ {
    Cut(text, false)
}

struct Cut<'a>(&'a str, bool);

impl fmt::Display for Cut<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.width().is_some() {
            // Padding (a table's column) counts the characters shown: built first.
            let shown = Cut(self.0, self.1).to_string();
            return f.pad(&shown);
        }
        let (shown, more) = match self.0.char_indices().nth(SHOWN_URI) {
            Some((cut, _)) => (&self.0[..cut], self.0[cut..].chars().count()),
            None => (self.0, 0),
        };
        if self.1 {
            write!(f, "{:?}", Safe(shown))?;
        } else {
            write!(f, "{}", Safe(shown))?;
        }
        if more > 0 {
            write!(f, "… ({more} more characters)")?;
        }
        Ok(())
    }
}

/// The value [`display_safe`] returns.
struct Safe<'a>(&'a str);

impl fmt::Display for Safe<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lines = f.alternate();
        if f.width().is_none() && f.precision().is_none() {
            return write_escaped(f, self.0, lines, false);
        }
        // Padding counts the characters shown, so the escaped form is built first.
        let mut shown = String::with_capacity(self.0.len());
        write_escaped(&mut shown, self.0, lines, false)?;
        f.pad(&shown)
    }
}

impl fmt::Debug for Safe<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_char('"')?;
        write_escaped(f, self.0, false, true)?;
        f.write_char('"')
    }
}

/// Writes `text` escaped: hidden characters (and `\`, and `"` when `quoted`) as escapes; with
/// `lines`, `\n` and `\t` as they are.
fn write_escaped(out: &mut impl fmt::Write, text: &str, lines: bool, quoted: bool) -> fmt::Result {
    // The common case — printable ASCII without a backslash — is written in one piece.
    if text
        .bytes()
        .all(|b| (0x20..0x7f).contains(&b) && b != b'\\' && !(quoted && b == b'"'))
    {
        return out.write_str(text);
    }
    let mut plain = 0;
    for (i, c) in text.char_indices() {
        let kept = match c {
            '\\' => false,
            '"' => !quoted,
            '\n' | '\t' => lines,
            c => hidden(c).is_none() && !(i == 0 && is_mark(c)),
        };
        if kept {
            continue;
        }
        out.write_str(&text[plain..i])?;
        plain = i + c.len_utf8();
        match c {
            '\\' => out.write_str(r"\\")?,
            '"' => out.write_str("\\\"")?,
            '\n' => out.write_str(r"\n")?,
            '\t' => out.write_str(r"\t")?,
            '\r' => out.write_str(r"\r")?,
            c if c.is_ascii() => write!(out, "\\x{:02x}", u32::from(c))?,
            c => write!(out, "\\u{{{:04X}}}", u32::from(c))?,
        }
    }
    out.write_str(&text[plain..])
}

/// What kind of hidden character `c` is, in words for an error message; `None` for a character
/// that shows as itself. U+0020 is visible; `\n` and `\t` are controls.
pub(crate) fn hidden(c: char) -> Option<&'static str> {
    // Rendered as nothing where unsupported (Unicode's Default_Ignorable_Code_Point), whatever
    // their general category; and the blank braille pattern, a letter-like character that is
    // blank by design.
    const INVISIBLE: &[(u32, u32)] = &[
        (0x034F, 0x034F),
        (0x115F, 0x1160),
        (0x17B4, 0x17B5),
        (0x180B, 0x180F),
        (0x2800, 0x2800),
        (0x3164, 0x3164),
        (0xFE00, 0xFE0F),
        (0xFFA0, 0xFFA0),
        (0xFFF0, 0xFFF8),
        (0xE0000, 0xE0FFF),
    ];
    if (' '..='~').contains(&c) {
        return None;
    }
    let u = u32::from(c);
    if INVISIBLE.iter().any(|&(lo, hi)| (lo..=hi).contains(&u)) {
        return Some("an invisible character");
    }
    match get_general_category(c) {
        GeneralCategory::Control => Some("a control character"),
        GeneralCategory::Format if is_bidi(u) => Some("a bidirectional-text control"),
        GeneralCategory::Format => Some("an invisible format character"),
        GeneralCategory::SpaceSeparator => Some("a space other than U+0020"),
        GeneralCategory::LineSeparator | GeneralCategory::ParagraphSeparator => {
            Some("a line or paragraph separator")
        }
        GeneralCategory::PrivateUse | GeneralCategory::Surrogate | GeneralCategory::Unassigned => {
            Some("a private-use or unassigned code point")
        }
        _ => None,
    }
}

/// The bidi embeddings, overrides, isolates and marks.
fn is_bidi(u: u32) -> bool {
    matches!(u, 0x061C | 0x200E | 0x200F | 0x202A..=0x202E | 0x2066..=0x2069)
}

/// A combining mark: shown at the start of a string it would join what was printed before.
fn is_mark(c: char) -> bool {
    matches!(
        get_general_category(c),
        GeneralCategory::NonspacingMark
            | GeneralCategory::SpacingMark
            | GeneralCategory::EnclosingMark
    )
}

/// Why `label` cannot be a label a person must tell apart from others (an origin, a principal):
/// the first hidden character, named by its code point (R-E6). Labels are shown as they are, so
/// every character of one must be visible.
pub(crate) fn invisible_in_label(label: &str) -> Option<String> {
    // `team` and `team ` look the same in a column.
    if label.starts_with(' ') || label.ends_with(' ') {
        return Some("starts or ends with a space (U+0020), which cannot be seen".into());
    }
    let mut chars = label.chars();
    if let Some(first) = chars.clone().next().filter(|&c| is_mark(c)) {
        return Some(format!(
            "starts with U+{:04X}, a combining mark that would join the text before it",
            u32::from(first)
        ));
    }
    if let Some(why) =
        chars.find_map(|c| hidden(c).map(|what| format!("contains U+{:04X}, {what}", u32::from(c))))
    {
        return Some(why);
    }
    // Two labels that normalize alike are the same to a reader and to every font: only the
    // normalized spelling is a label (U+212A KELVIN SIGN is `K`; `e` + U+0301 is `é`).
    if !unicode_normalization::is_nfc(label) {
        let first = label
            .chars()
            .find(|&c| !unicode_normalization::is_nfc(c.encode_utf8(&mut [0; 4])))
            .or_else(|| label.chars().find(|&c| is_mark(c)))
            .map_or_else(String::new, |c| format!(" (U+{:04X})", u32::from(c)));
        return Some(format!(
            "is not in Unicode normalization form C{first}: it looks exactly like its normalized \
             spelling, which is the one to use"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::{display_safe, hidden, invisible_in_label};

    fn shown(text: &str) -> String {
        display_safe(text).to_string()
    }

    #[test]
    fn e5_a_long_refused_text_is_shown_cut_with_the_count_of_what_was_left_out() {
        let long = "a".repeat(super::SHOWN_URI + 10);
        let shown = super::display_cut(&long).to_string();
        assert_eq!(
            shown,
            format!("\"{}\"… (10 more characters)", "a".repeat(super::SHOWN_URI))
        );
        assert_eq!(super::display_cut("x\ny").to_string(), "\"x\\ny\"");
    }

    #[test]
    fn e5_every_hidden_class_is_escaped_and_the_output_has_none_left() {
        let hostile = [
            '\u{0}',
            '\u{7}',
            '\u{8}',
            '\u{1b}',
            '\u{7f}',
            '\u{85}',
            '\u{9b}',
            '\u{a0}',
            '\u{ad}',
            '\u{34f}',
            '\u{61c}',
            '\u{115f}',
            '\u{1160}',
            '\u{17b4}',
            '\u{180e}',
            '\u{2000}',
            '\u{200b}',
            '\u{200c}',
            '\u{200d}',
            '\u{200e}',
            '\u{200f}',
            '\u{2028}',
            '\u{2029}',
            '\u{202a}',
            '\u{202e}',
            '\u{202f}',
            '\u{205f}',
            '\u{2060}',
            '\u{2064}',
            '\u{2066}',
            '\u{2069}',
            '\u{2800}',
            '\u{3000}',
            '\u{3164}',
            '\u{fe00}',
            '\u{fe0f}',
            '\u{feff}',
            '\u{ffa0}',
            '\u{fff9}',
            '\u{e000}',
            '\u{e0001}',
            '\u{e0041}',
            '\u{e0100}',
            '\u{1d173}',
            '\u{10ffff}',
            '\u{378}',
        ];
        for c in hostile {
            assert!(hidden(c).is_some(), "U+{:04X} is hidden", u32::from(c));
            let out = shown(&format!("a{c}b"));
            assert!(
                out.chars().all(|o| o == ' ' || hidden(o).is_none()),
                "U+{:04X} shown as {out:?}",
                u32::from(c)
            );
            assert!(out.starts_with("a\\") && out.ends_with('b'), "{out}");
        }
        for visible in ['a', 'é', 'ж', '中', '😀', '€', ' ', '~', '\u{301}'] {
            assert!(hidden(visible).is_none(), "{visible:?} is visible");
        }
        assert_eq!(shown("\u{1b}[2J"), r"\x1b[2J");
        assert_eq!(shown("\u{9b}31m"), r"\u{009B}31m");
        assert_eq!(shown("a\u{202E}b"), r"a\u{202E}b");
    }

    #[test]
    fn e5_two_different_strings_never_display_the_same() {
        let inputs = [
            "team",
            "team\u{200b}",
            "team\\u{200B}",
            "team\\\\u{200B}",
            "te\u{ad}am",
            "team\n",
            "team\\n",
            "team\t",
            "team\\t",
            "team\r",
            "\u{301}team",
            "\\u{0301}team",
            "team\u{a0}",
            "team ",
            "\u{1b}",
            "\\x1b",
        ];
        for form in [
            shown as fn(&str) -> String,
            |t| format!("{:#}", display_safe(t)),
            |t| format!("{:?}", display_safe(t)),
        ] {
            let mut seen = std::collections::HashMap::new();
            for text in inputs {
                if let Some(other) = seen.insert(form(text), text) {
                    panic!("{other:?} and {text:?} both show as {:?}", form(text));
                }
            }
        }
    }

    #[test]
    fn e5_a_leading_combining_mark_is_escaped_but_one_after_a_letter_is_not() {
        assert_eq!(shown("\u{301}x"), r"\u{0301}x");
        assert_eq!(shown("e\u{301}"), "e\u{301}");
    }

    #[test]
    fn e6_a_label_names_its_first_hidden_character() {
        assert_eq!(invisible_in_label("team"), None);
        assert_eq!(invisible_in_label("équipe 2"), None);
        let why = invisible_in_label("team\u{200b}").expect("refused");
        assert!(why.contains("U+200B"), "{why}");
        let why = invisible_in_label("a\u{202e}b").expect("refused");
        assert!(why.contains("U+202E") && why.contains("bidi"), "{why}");
        let why = invisible_in_label("\u{300}a").expect("refused");
        assert!(why.contains("U+0300"), "{why}");
        assert!(invisible_in_label("ᅟ").is_some(), "a Hangul filler");
        assert!(invisible_in_label("team ").is_some(), "a trailing space");
        assert_eq!(invisible_in_label("my team"), None);
    }
}
