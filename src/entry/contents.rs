//! Picking one file's bytes out of a `resources/read` result (R-W9).

use base64::Engine as _;
use serde_json::Value;

use super::error::EntryError;
use crate::rule::Rule;
use crate::uri::FileUri;

const METHOD: &str = "resources/read";

/// The bytes of `requested` in a `resources/read` result.
///
/// Items are matched by URI after percent-normalisation, never by position. `text` is the
/// file's UTF-8 bytes; `blob` its base64-decoded bytes. No item for the URI, two different items
/// for it, an item with neither or both of `text` and `blob`, or bad base64 are failures — never
/// an empty file. The bytes are *not* verified here; that is the caller's next step.
///
/// ```
/// use skillcache::{FileUri, entry::select_content};
/// let uri = FileUri::parse("skill://demo/Q&A.md").unwrap();
/// let result = serde_json::json!({"contents": [
///     {"uri": "skill://demo/other.md", "text": "not this"},
///     {"uri": "skill://demo/Q%26A.md", "blob": "aGk="},
/// ]});
/// assert_eq!(select_content(&result, &uri).unwrap(), b"hi");
/// ```
///
/// # Errors
/// [`EntryError::Response`] naming the rule.
pub fn select_content(result: &Value, requested: &FileUri) -> Result<Vec<u8>, EntryError> {
    let fail = |rule| EntryError::Response {
        origin: None,
        method: METHOD,
        rule,
    };
    let contents = result
        .get("contents")
        .and_then(Value::as_array)
        .ok_or_else(|| {
            fail(Rule::WrongType {
                expected: "contents: an array",
            })
        })?;
    let mut found: Option<Vec<u8>> = None;
    for item in contents {
        let Some(uri) = item.get("uri").and_then(Value::as_str) else {
            continue;
        };
        // An item whose URI does not parse cannot be the requested one (which did parse).
        if FileUri::parse(uri).map_or(true, |u| &u != requested) {
            continue;
        }
        let bytes = decode(item).map_err(fail)?;
        match &found {
            Some(prev) if *prev != bytes => {
                return Err(fail(Rule::ConflictingContent {
                    uri: requested.as_str().to_owned(),
                }));
            }
            Some(_) => {}
            None => found = Some(bytes),
        }
    }
    found.ok_or_else(|| {
        fail(Rule::NoContent {
            uri: requested.as_str().to_owned(),
        })
    })
}

fn decode(item: &Value) -> Result<Vec<u8>, Rule> {
    match (item.get("text"), item.get("blob")) {
        (Some(Value::String(text)), None) => Ok(text.as_bytes().to_vec()),
        (None, Some(Value::String(blob))) => base64::engine::general_purpose::STANDARD
            .decode(blob)
            .map_err(|_| Rule::Base64),
        _ => Err(Rule::ContentShape),
    }
}
