//! `--local-names-file`: the host's own skill names, read by the host-file rules (R-E4).

use std::path::Path;

use skillcache::display_safe;

use crate::failure::Failure;

/// The largest `--local-names-file` read: a list of names, far below this.
const MAX_LOCAL_NAMES_BYTES: u64 = 1 << 20;

/// `--local-names-file`: one name a line; blank lines and `#` comments skipped. Read by the host
/// file rules (R-E4) the library's reader keeps for config and lock files: opened without
/// blocking and without taking a terminal, the opened descriptor must be a regular file (a FIFO
/// is refused at once), bounded, UTF-8, and the refusal names the path display-safe and quotes
/// nothing of the file.
pub(crate) fn read(path: &Path) -> Result<Vec<String>, Failure> {
    use std::io::Read as _;
    let refused = |why: &dyn std::fmt::Display| {
        Failure::Usage(format!(
            "local names file {}: {why}",
            display_safe(&path.to_string_lossy())
        ))
    };
    let file = crate::platform::nonblocking(std::fs::OpenOptions::new().read(true))
        .open(path)
        .map_err(|e| refused(&e))?;
    if !file.metadata().map_err(|e| refused(&e))?.is_file() {
        return Err(refused(&"not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(MAX_LOCAL_NAMES_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| refused(&e))?;
    if bytes.len() as u64 > MAX_LOCAL_NAMES_BYTES {
        return Err(refused(&format!("over {MAX_LOCAL_NAMES_BYTES} bytes")));
    }
    let text = String::from_utf8(bytes).map_err(|_| refused(&"not UTF-8"))?;
    let mut names = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let name = line.trim();
        if name.is_empty() || name.starts_with('#') {
            continue;
        }
        // Checked here by the library's rule, so that a refusal names the line and quotes
        // nothing of the file (R-E4: the path may be a link to a secrets file).
        // `:` and `/` as names are compared too (after NFKC): a full-width `：` is a `:`.
        if name.contains([':', '/'])
            || unicode_normalization::UnicodeNormalization::nfkc(name)
                .any(|c| matches!(c, ':' | '/'))
        {
            return Err(refused(&format!(
                "line {}: a local skill name must contain no ':' or '/', nor a character Unicode NFKC reads as one such as a full-width colon",
                n + 1
            )));
        }
        names.push(name.to_owned());
    }
    Ok(names)
}
