//! Resolving a reference found in a skill against the skill's root (R-V5).

use super::parse::{check_segment, scheme_len};
use super::percent::{decode_once, encode_canonical};
use super::{FileUri, SkillUri};
use crate::rule::Rule;

pub(super) fn resolve(skill: &SkillUri, reference: &str) -> Result<FileUri, Rule> {
    // The fragment names a place in the file, not a different file: dropped.
    let reference = reference
        .split_once('#')
        .map_or(reference, |(before, _)| before);
    if reference.contains('?') {
        return Err(Rule::Query);
    }
    if scheme_len(reference).is_some() {
        // An absolute URI is allowed only when it names a file of this very skill (R-O6: a
        // reference can never make the cache talk to another origin's server).
        let file = FileUri::parse(reference).map_err(|_| Rule::EscapesRoot)?;
        return if skill.contains(&file) {
            Ok(file)
        } else {
            Err(Rule::EscapesRoot)
        };
    }
    if reference.starts_with('/') {
        // `//host/x` names another authority; `/x` the scheme's root. Both leave the skill.
        return Err(Rule::EscapesRoot);
    }
    if reference.len() > super::MAX_URI_BYTES {
        return Err(Rule::TooLong);
    }
    if reference.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err(Rule::ControlCharacter);
    }
    let mut stack: Vec<Vec<u8>> = Vec::new();
    let mut texts = reference.split('/').peekable();
    while let Some(text) = texts.next() {
        match text {
            "." => {}
            ".." => {
                // Climbing above the skill root leaves the skill, even if a later segment would
                // come back down: refused.
                stack.pop().ok_or(Rule::EscapesRoot)?;
            }
            _ => {
                let decoded = decode_once(text)?;
                // An encoded dot segment (`%2e%2e`) is not a dot segment to RFC 3986 but would
                // be one to a filesystem: refused, like any other bad segment.
                check_segment(text, &decoded)?;
                stack.push(decoded);
            }
        }
        if texts.peek().is_none() && matches!(text, "." | "..") {
            // A reference ending in a dot segment names a directory, not a file.
            return Err(Rule::Segment {
                segment: text.to_owned(),
                why: "names a directory",
            });
        }
    }
    if stack.is_empty() {
        return Err(Rule::Segment {
            segment: reference.to_owned(),
            why: "names no file",
        });
    }
    let mut canonical = String::with_capacity(skill.root().len() + reference.len() + 8);
    canonical.push_str(skill.root());
    for seg in &stack {
        canonical.push('/');
        encode_canonical(seg, &mut canonical);
    }
    Ok(FileUri::from_canonical(canonical))
}
