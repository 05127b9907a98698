//! Entries read back from rows: validated again, so "what exists is valid" holds even for a
//! damaged database. They were validated with the host's limits when stored, and the seal says
//! they are what was stored; here the limits are lifted (a host that lowered nothing may still
//! have raised them since).

use super::error::IndexError;
use crate::entry::{Limits, SkillEntry, Validation};

fn unlimited() -> Validation {
    Limits::new(u64::MAX, u64::MAX).map_or_else(
        |_| Validation::default(),
        |l| Validation::default().limits(l),
    )
}

/// The entry a row holds; one that fails validation is a database problem, not the server's.
pub(super) fn read_entry(json: &str) -> Result<SkillEntry, IndexError> {
    let bad = |source: Box<dyn std::error::Error + Send + Sync>| IndexError::Database {
        what: "read entry",
        source,
    };
    let value: serde_json::Value = serde_json::from_str(json).map_err(|e| bad(Box::new(e)))?;
    SkillEntry::from_json(&value, &unlimited()).map_err(|e| bad(Box::new(e)))
}

/// The entry a row holds, or `None` when it cannot be read (only reported, never believed).
pub(super) fn parse_entry(json: &str) -> Option<SkillEntry> {
    read_entry(json).ok()
}
