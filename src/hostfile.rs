//! Files a user names — an MCP host configuration (JSON) and a lock file (TOML) — read with the
//! discipline of the cache core (R-E4).
//!
//! - **Regular files only.** The path is opened once, non-blocking, and the *opened descriptor*
//!   is examined (`fstat`), never the path before it: a link is followed only to a regular file,
//!   and a FIFO, socket, device or folder is refused at once — a FIFO can neither block the open
//!   nor the read.
//! - **Bounded in bytes and in structure before parsing.** At most [`MAX_BYTES`] are read, and
//!   every chunk is counted as it arrives ([`Format::max_weight`]): a file dense in tiny values
//!   (`x=[0,0,0,…]`), which a parser would turn into gigabytes, is refused while it is read, long
//!   before it is whole.
//! - **Errors quote nothing.** Problems are named by line, column and key path in fixed words;
//!   no line of the file and no parser message that embeds its text is ever shown, so a lock that
//!   is a link to a secrets file (or to `/proc/self/environ`) cannot leak it into a CI log.

use std::io::Read as _;
use std::path::Path;

use crate::config_error::FileProblem;
use crate::error::{Error, StoreError};
use crate::json_weight::JsonWeight;

/// The largest host file read (a host configuration or a lock of hundreds of skills is far
/// smaller: a pinned file takes about 150 bytes).
pub(crate) const MAX_BYTES: u64 = 16 << 20;

/// The syntax of a host file, which decides how its structure is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// An MCP host configuration.
    Json,
    /// A lock file.
    Toml,
}

impl Format {
    /// The most structure a file of this format may hold, in the units its pre-scan counts.
    ///
    /// JSON: sixteen times the weight of R-B2's message bound ([`JsonWeight`]), about one unit a
    /// byte of the largest file read. A configuration reader builds values only for the parts it
    /// uses (the server blocks and the keys around them) and skips the rest unbuilt, counting
    /// what it keeps against the message bound itself (`config::Unique`); so this pre-scan
    /// bounds the time a parse takes, and a `~/.claude.json` of hundreds of projects with their
    /// history (6.6 MB weighs about 2 million) is read. TOML: lexer tokens ([`TomlTokens`]); the TOML parser keeps every token and an event
    /// for it before it builds its tree, about 80 bytes a token in all, so 2^19 tokens parse in
    /// about 45 MB. A pinned file costs about 30 tokens: room for some 17,000 pinned files.
    pub(crate) fn max_weight(self) -> u64 {
        match self {
            Format::Json => 16 * crate::json_weight::MAX_JSON_WEIGHT,
            Format::Toml => 1 << 19,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Format::Json => "JSON",
            Format::Toml => "TOML",
        }
    }
}

/// A host file refused before parsing: where (line and column, 1-based; `None` for the whole
/// file) and what.
#[derive(Debug)]
pub(crate) struct Refused {
    pub(crate) position: Option<(usize, usize)>,
    pub(crate) problem: FileProblem,
}

impl Refused {
    fn whole(why: String) -> Refused {
        Refused {
            position: None,
            problem: FileProblem::Invalid { why },
        }
    }
}

/// The text of the host file at `path`, checked as the module docs say. `Ok(Err(refused))` for a
/// file refused for what it is (the caller names it as a config or lock file); `Err` for one
/// that cannot be opened or read at all (`op` says what was being done).
pub(crate) fn read(
    path: &Path,
    format: Format,
    op: &'static str,
) -> Result<Result<String, Refused>, Error> {
    let io = |source| {
        Error::Store(StoreError::Io {
            op,
            path: path.to_owned(),
            source,
        })
    };
    // Non-blocking: opening a FIFO for reading returns at once instead of waiting for a writer.
    // No controlling terminal is ever acquired from a tty named as a file.
    let file = match crate::platform::nonblocking(std::fs::OpenOptions::new().read(true)).open(path)
    {
        Ok(file) => file,
        // A socket cannot be opened at all (ENXIO), nor a terminal device without a terminal:
        // say what it is rather than "no such device". The path is examined only to explain a
        // failure, never to decide what to open.
        Err(e) => {
            return match std::fs::metadata(path) {
                Ok(m) if !m.file_type().is_file() => Ok(Err(not_regular(kind(m.file_type())))),
                _ => Err(io(e)),
            };
        }
    };
    let meta = file.metadata().map_err(io)?;
    if !meta.file_type().is_file() {
        return Ok(Err(not_regular(kind(meta.file_type()))));
    }
    if meta.len() > MAX_BYTES {
        return Ok(Err(too_large()));
    }
    // The size a regular file claims is a hint only (`/proc` files claim 0): the read itself is
    // bounded.
    let hint = usize::try_from(meta.len()).unwrap_or(0);
    let mut bytes = Vec::with_capacity(hint.saturating_add(1));
    let mut scan = Scan::new(format);
    let mut chunk = vec![0u8; 64 * 1024];
    let mut file = file;
    loop {
        let n = match file.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io(e)),
        };
        if bytes.len() as u64 + n as u64 > MAX_BYTES {
            return Ok(Err(too_large()));
        }
        if scan.feed(&chunk[..n]) {
            return Ok(Err(Refused {
                position: None,
                problem: too_dense(format),
            }));
        }
        bytes.extend_from_slice(&chunk[..n]);
    }
    Ok(String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let bytes = e.into_bytes();
        // The prefix before the first bad byte is valid UTF-8 by definition.
        let prefix = std::str::from_utf8(&bytes[..valid]).unwrap_or_default();
        Refused {
            position: Some(position(prefix, prefix.len())),
            problem: FileProblem::Syntax {
                message: "is not UTF-8",
            },
        }
    }))
}

/// A file of `format` with more structure than its pre-scan allows.
pub(crate) fn too_dense(format: Format) -> FileProblem {
    FileProblem::Invalid {
        why: format!(
            "holds more {} structure than a host file needs (a pre-scan counted over {} units \
             before parsing); refused unparsed",
            format.name(),
            format.max_weight()
        ),
    }
}

/// What a file that is not a regular file is, in words.
fn kind(kind: std::fs::FileType) -> &'static str {
    if kind.is_dir() {
        "a folder"
    } else {
        crate::platform::special_kind(kind)
    }
}

fn not_regular(what: &'static str) -> Refused {
    Refused::whole(format!(
        "is {what}, not a regular file (a link is followed only to a regular file)"
    ))
}

fn too_large() -> Refused {
    Refused::whole(format!("is larger than {MAX_BYTES} bytes"))
}

/// The line and column (1-based, the column in characters) of byte `offset` of `text`; an
/// offset inside a character counts as that character.
pub(crate) fn position(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (
        before.bytes().filter(|&b| b == b'\n').count() + 1,
        before[line_start..].chars().count() + 1,
    )
}

/// The structure counter of one format, fed chunk by chunk.
enum Scan {
    Json(JsonWeight),
    Toml(TomlTokens),
}

impl Scan {
    fn new(format: Format) -> Scan {
        match format {
            Format::Json => Scan::Json(JsonWeight::default()),
            Format::Toml => Scan::Toml(TomlTokens::default()),
        }
    }

    /// Counts `chunk`; true as soon as the file holds more than its format allows.
    fn feed(&mut self, chunk: &[u8]) -> bool {
        match self {
            Scan::Json(w) => w.feed(chunk, Format::Json.max_weight()),
            Scan::Toml(t) => t.feed(chunk, Format::Toml.max_weight()),
        }
    }
}

/// An upper bound on the tokens the TOML lexer (`toml_parser`) makes of a text, counted byte by
/// byte without allocating.
///
/// The lexer's tokens are: each of `. = , [ ] { }` and each newline (`\n`, or `\r` with or
/// without it); a run of spaces and tabs; a comment (`#` to the end of the line); a string (from
/// its quote); and an atom — a run of any other bytes up to the next of `. = , [ ] { }`, space,
/// tab, `#`, `\r`, `\n`. Every token therefore starts at a punctuation or newline byte, a `#`, a
/// quote, the first of a run of spaces and tabs, or a byte that follows one of those or a quote.
/// Counting every such byte, inside strings and comments too (where the lexer sees fewer
/// tokens), can only count too many, never too few: the bound is sound whatever the text.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TomlTokens {
    count: u64,
    previous: u8,
}

impl Default for TomlTokens {
    fn default() -> TomlTokens {
        // As if after a newline: the first byte of the text starts a token.
        TomlTokens {
            count: 0,
            previous: b'\n',
        }
    }
}

impl TomlTokens {
    /// The tokens counted so far.
    #[cfg(test)]
    pub(crate) fn count(&self) -> u64 {
        self.count
    }

    /// Counts `chunk`; true as soon as the count is over `max`.
    pub(crate) fn feed(&mut self, chunk: &[u8], max: u64) -> bool {
        let delimiter = |b: u8| b".=,[]{}#\r\n \t\"'".contains(&b);
        for &b in chunk {
            let starts = match b {
                b'.' | b'=' | b',' | b'[' | b']' | b'{' | b'}' | b'#' | b'\r' | b'\n' | b'"'
                | b'\'' => true,
                b' ' | b'\t' => !matches!(self.previous, b' ' | b'\t'),
                _ => delimiter(self.previous),
            };
            self.previous = b;
            if starts {
                self.count += 1;
                if self.count > max {
                    return true;
                }
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::{TomlTokens, position};

    fn tokens(text: &str) -> u64 {
        let mut t = TomlTokens::default();
        assert!(!t.feed(text.as_bytes(), u64::MAX));
        t.count
    }

    #[test]
    fn e4_toml_tokens_bound_what_the_lexer_makes_of_a_line() {
        // `a`, ws, `=`, ws, `"b c"` (counted as `"`, `b`, ws, `c`, `"`), newline: the lexer
        // makes 6 tokens, the count is 10.
        assert_eq!(tokens("a = \"b c\"\n"), 10);
        assert_eq!(tokens("x=[0,0,0]"), 9);
        // A long atom or run of blanks is one token, counted once.
        assert_eq!(tokens(&"z".repeat(1000)), 1);
        assert_eq!(tokens(&" \t".repeat(1000)), 1);
        // Split anywhere, a text counts the same.
        let text = "[[skill.file]]\nuri = \"skill://a/b.md\"  # c\nsize = 1\n";
        for cut in 0..text.len() {
            let mut t = TomlTokens::default();
            t.feed(&text.as_bytes()[..cut], u64::MAX);
            t.feed(&text.as_bytes()[cut..], u64::MAX);
            assert_eq!(t.count, tokens(text), "cut at {cut}");
        }
    }

    #[test]
    fn e4_a_position_is_a_line_and_a_column_in_characters() {
        assert_eq!(position("", 0), (1, 1));
        assert_eq!(position("ab\ncdé\nf", 3), (2, 1));
        assert_eq!(position("ab\ncdé\nf", 7), (2, 4));
        // Inside a character: that character.
        assert_eq!(position("é", 1), (1, 1));
        assert_eq!(position("ab", 99), (1, 3));
    }
}
