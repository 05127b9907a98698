//! The URI layer's error.

use crate::display::display_cut;
use crate::rule::Rule;

/// A URI is not acceptable as a skill or file URI (R-W4, R-W5, R-V5).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid uri {}: {rule}", display_cut(uri))]
pub struct UriError {
    /// The URI or reference as given.
    pub uri: String,
    /// The rule it broke.
    pub rule: Rule,
}
