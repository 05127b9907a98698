//! Finding the frontmatter block of a `SKILL.md`.

use super::MAX_BYTES;
use super::FrontmatterProblem;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Returns the YAML text between the opening and closing `---` lines.
///
/// A leading UTF-8 BOM is skipped (the digest still covers it: this function only reads). Lines
/// may end in LF or CRLF; a delimiter line may carry trailing spaces or tabs.
///
/// ```
/// use skillcache::frontmatter::extract;
/// assert_eq!(extract(b"\xEF\xBB\xBF---\r\nname: x\r\n--- \r\nbody").unwrap(), "name: x\r\n");
/// assert!(extract(b"# no frontmatter").is_err());
/// ```
///
/// # Errors
/// No opening or closing line, more than [`MAX_BYTES`], or not UTF-8.
pub fn extract(skill_md: &[u8]) -> Result<&str, FrontmatterProblem> {
    let bytes = skill_md.strip_prefix(BOM).unwrap_or(skill_md);
    let mut lines = bytes.split_inclusive(|&b| b == b'\n');
    let first = lines.next().ok_or(FrontmatterProblem::NoOpening)?;
    if !is_delimiter(first) {
        return Err(FrontmatterProblem::NoOpening);
    }
    let start = first.len();
    let mut end = start;
    for line in lines {
        if is_delimiter(line) {
            let yaml = &bytes[start..end];
            return std::str::from_utf8(yaml).map_err(|_| FrontmatterProblem::NotUtf8);
        }
        end += line.len();
        if end - start > MAX_BYTES {
            return Err(FrontmatterProblem::TooLarge { max: MAX_BYTES });
        }
    }
    Err(FrontmatterProblem::NoClosing)
}

/// `---` followed only by spaces, tabs and a line ending (or the end of the file).
fn is_delimiter(line: &[u8]) -> bool {
    let Some(rest) = line.strip_prefix(b"---") else {
        return false;
    };
    let rest = rest.strip_suffix(b"\n").unwrap_or(rest);
    let rest = rest.strip_suffix(b"\r").unwrap_or(rest);
    rest.iter().all(|&b| b == b' ' || b == b'\t')
}
