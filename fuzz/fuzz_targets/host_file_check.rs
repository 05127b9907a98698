//! Shared by the `config_file` and `lock_file` targets: the check that an error quotes no input
//! (R-E4), and a scratch file to read through the real reader.
//!
//! The check: normalise both texts (every run of digits becomes `0`, every `U+XXXX` becomes
//! `U+X`, so positions, counts and code points do not count as quoted), then every 8-byte window
//! of the problem's own words ([`words`]) that also occurs in the input must occur in
//! [`vocabulary`] — the fixed words the readers use. A window of the input that is not a fixed
//! word is input quoted. Messages composed of two (`the name is not a usable origin: …`) are
//! checked piece by piece, split at `": "`, the one joint the readers compose at.

use std::path::PathBuf;

/// Every fixed phrase a host-file refusal may show, but the parsers' syntax messages: those are
/// the readers' own lists ([`vocabulary`]), taken from the crate so that they cannot drift from
/// it or be copied wrong. (Copied by hand, `control character (\u0000-\u001F) …` once had its
/// backslash doubled here, and a 22-byte input quoting `cter (\u` failed the check by chance.)
pub const VOCABULARY: &[&str] = &[
    // The reader.
    "is not UTF-8",
    "is a folder, not a regular file (a link is followed only to a regular file)",
    "is a FIFO (named pipe), not a regular file",
    "is a socket, not a regular file", "is a device, not a regular file",
    "is a special file, not a regular file",
    "is larger than 16777216 bytes",
    "holds more JSON structure than a host file needs (a pre-scan counted over 1000000 units before parsing); refused unparsed",
    "holds more TOML structure than a host file needs (a pre-scan counted over 524288 units before parsing); refused unparsed",
    // FileProblem.
    "cannot be parsed: ",
    "is missing",
    "must be ",
    // The config reader.
    "a string", "an array of strings", "an object of strings", "an object", "a JSON object",
    "an object of servers by name",
    "has both \"command\" and \"url\"; keep one",
    "has neither \"command\" (a stdio server) nor \"url\" (an HTTP server)",
    "is not a supported type; use \"stdio\" or \"http\" (Streamable HTTP)",
    "contains a NUL character",
    "is not a usable variable name (empty, or contains '=')",
    "is not an http:// or https:// URL",
    "an http:// or https:// URL with a host is needed",
    "is not a valid HTTP header name", "is not a valid HTTP header value",
    "is given twice; the host and a reader of the file could take different values",
    "the name is not a usable origin: ",
    "this name is configured in both \"mcpServers\" and \"servers\"",
    "is not valid JSON here",
    // JSONC and Claude Code's per-project servers (K6).
    "a /* comment is not closed with */",
    "a comment or a trailing comma; only VS Code's \"servers\" files may have them (JSONC), a file with \"mcpServers\" or \"projects\" is strict JSON as its hosts read it",
    "is the older HTTP+SSE transport, which skillcache does not speak; use \"http\" (Streamable HTTP) if the server offers it",
    "this project server's origin is configured elsewhere in the file too",
    "an object of projects by folder",
    // The lock reader.
    "is not valid TOML here",
    "an integer from 0 to 2^64-1", "an array of tables",
    "has a key a lock file does not have here (it has version, skill)",
    "has a key a lock file does not have here (it has origin, uri, binding, file)",
    "has a key a lock file does not have here (it has uri, digest, size)",
    "is not a version this skillcache reads (1)",
    "is not 64 lowercase hex digits", "is not a digest", "is not inside the skill of this pin", "is listed twice",
    "does not list the skill's own SKILL.md", "locks a skill of an origin already locked above",
    "must start with \"sha256:\"", "must have 64 hex digits after \"sha256:\", not 0",
    "hex digits must be 0-9 or lowercase a-f",
    "must be an absolute URI of the form scheme://authority/path", "has an invalid scheme",
    "must not have a query", "must not have a fragment",
    "invalid authority: a skill:// URI needs its first path segment here",
    "invalid authority: userinfo is not allowed in a skill:// URI",
    "invalid authority: a port is not allowed in a skill:// URI",
    "has a '%' not followed by two hex digits", "contains a control character",
    "must end in /SKILL.md with at least one skill path segment before it",
    "has a path segment that is empty", "has a path segment that is a dot segment",
    "has a path segment that contains '/' after decoding",
    "has a path segment that contains '\\'", "has a path segment that contains NUL",
    "leaves the skill root",
    // Origin labels (R-E6).
    "an origin label (the host's name for a server) must be 0 to 0 bytes, every character visible; this one is empty",
    "every character visible; this one is 0 bytes long",
    "every character visible; this one contains U+X, ",
    "every character visible; this one starts with U+X, a combining mark that would join the text before it",
    "every character visible; this one starts or ends with a space (U+X), which cannot be seen",
    "contains U+X, a control character", "contains U+X, a bidirectional-text control",
    "contains U+X, an invisible format character", "contains U+X, a space other than U+X",
    "contains U+X, a line or paragraph separator",
    "contains U+X, a private-use or unassigned code point", "contains U+X, an invisible character",
];

/// The complete fixed vocabulary, normalised: [`VOCABULARY`] and the syntax messages the JSON and
/// TOML readers show (`McpConfig::syntax_messages`, `LockFile::syntax_messages`), with the words
/// they fall back to.
fn vocabulary() -> &'static [Vec<u8>] {
    static ALL: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| {
        VOCABULARY
            .iter()
            .chain(skillcache::McpConfig::syntax_messages())
            .chain(skillcache::LockFile::syntax_messages())
            .map(|v| normalise(v))
            .collect()
    })
}

/// `text` with every run of ASCII digits as one `0` and every `U+` code point as `U+X`.
fn normalise(text: &str) -> Vec<u8> {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"U+") && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit) {
            out.extend_from_slice(b"U+X");
            i += 2;
            while b.get(i).is_some_and(u8::is_ascii_hexdigit) {
                i += 1;
            }
        } else if b[i].is_ascii_digit() {
            out.push(b'0');
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// The words of `problem` that are its own: the message, the expected type, the reason — not
/// `FileProblem`'s fixed frame (`cannot be parsed: `, `must be `).
pub fn words(problem: &skillcache::error::FileProblem) -> String {
    use skillcache::error::FileProblem;
    match problem {
        FileProblem::Syntax { message } => (*message).to_owned(),
        FileProblem::Missing => String::new(),
        FileProblem::WrongType { expected } => (*expected).to_owned(),
        FileProblem::Invalid { why } => why.clone(),
        other => other.to_string(),
    }
}

/// Panics if `shown` (a problem's [`words`]) quotes `input`: see the module docs.
pub fn assert_quotes_nothing(input: &[u8], shown: &str) {
    const WINDOW: usize = 8;
    let input = normalise(&String::from_utf8_lossy(input));
    let vocabulary = vocabulary();
    for piece in shown.split(": ") {
        let piece = normalise(piece);
        for w in piece.windows(WINDOW) {
            if contains(&input, w) && !vocabulary.iter().any(|v| contains(v, w)) {
                panic!(
                    "the error quotes the input: {:?} in {shown:?}",
                    String::from_utf8_lossy(w),
                );
            }
        }
    }
}

/// A file this process owns, rewritten for every input: the readers are run on a real file,
/// through their one opener.
pub fn scratch_file(name: &str) -> PathBuf {
    let base = if std::path::Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let dir = base.join(format!("skillcache-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    dir.join(name)
}
