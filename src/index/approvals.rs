//! Content-bound approvals (R-A2…R-A5).

use rusqlite::{OptionalExtension, params};
use serde_json::Value;

use super::{Index, db_err, find_origin_id, origin_id};
use crate::entry::{Binding, SkillEntry};
use crate::error::{Error, Rule};
use crate::origin::Origin;
use crate::uri::SkillUri;

/// A recorded approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    /// The binding of the file set that was approved.
    pub binding: Binding,
    /// An explicit grant of requested permissions (R-A5), bound to the same binding.
    pub granted_tools: Option<Value>,
    /// When it was granted.
    pub granted_at_ms: u64,
}

impl Index {
    /// Records the user's approval of `entry` as it is now, bound to its binding (R-A1), with an
    /// optional explicit grant of the permissions its frontmatter requests (R-A5).
    ///
    /// # Errors
    /// [`Error::InvalidEntry`] for a dynamic skill, which cannot hold an approval (R-A3);
    /// [`Error::Index`] on a database failure.
    pub fn grant(
        &self,
        origin: &Origin,
        entry: &SkillEntry,
        granted_tools: Option<&Value>,
        now_ms: u64,
    ) -> Result<(), Error> {
        let Some(binding) = entry.binding() else {
            return Err(Error::InvalidEntry {
                skill: Some(entry.uri().as_str().to_owned()),
                field: "resources".into(),
                rule: Rule::Value {
                    allowed: "a manifest: a dynamic skill cannot be approved",
                },
            });
        };
        let json = entry.to_json().to_string();
        let tools = granted_tools.map(Value::to_string);
        self.write("grant approval", |tx| {
            let oid = origin_id(tx, origin)?;
            tx.execute(
                "INSERT OR REPLACE INTO approvals(origin_id, skill_uri, binding, entry_json, granted_tools, granted_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![oid, entry.uri().canonical(), binding.as_bytes().as_slice(), json, tools, i64::try_from(now_ms).unwrap_or(i64::MAX)],
            )
            .map_err(db_err("grant approval"))?;
            Ok(())
        })
    }

    /// The approval recorded for (`origin`, `uri`), if any (R-A4).
    ///
    /// # Errors
    /// [`Error::Index`] on a database failure.
    pub fn approval(&self, origin: &Origin, uri: &SkillUri) -> Result<Option<Approval>, Error> {
        let conn = self.conn();
        let Some(oid) = find_origin_id(&conn, origin)? else {
            return Ok(None);
        };
        let row: Option<(Vec<u8>, Option<String>, i64)> = conn
            .prepare_cached("SELECT binding, granted_tools, granted_at_ms FROM approvals WHERE origin_id = ?1 AND skill_uri = ?2")
            .and_then(|mut s| s.query_row(params![oid, uri.canonical()], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).optional())
            .map_err(db_err("read approval"))?;
        Ok(row.and_then(|(binding, tools, at)| {
            Some(Approval {
                binding: Binding::from_bytes(binding.try_into().ok()?),
                granted_tools: tools.and_then(|t| serde_json::from_str(&t).ok()),
                granted_at_ms: u64::try_from(at).unwrap_or(0),
            })
        }))
    }

    /// Whether `entry` (as it is now) is approved: an approval exists and its binding is this
    /// entry's binding. Always false for a dynamic skill (R-A3).
    ///
    /// # Errors
    /// [`Error::Index`] on a database failure.
    pub fn is_approved(&self, origin: &Origin, entry: &SkillEntry) -> Result<bool, Error> {
        let Some(binding) = entry.binding() else {
            return Ok(false);
        };
        Ok(self
            .approval(origin, entry.uri())?
            .is_some_and(|a| a.binding == binding))
    }

    /// Withdraws an approval.
    ///
    /// # Errors
    /// [`Error::Index`] on a database failure.
    pub fn revoke(&self, origin: &Origin, uri: &SkillUri) -> Result<bool, Error> {
        self.write("revoke approval", |tx| {
            let Some(oid) = find_origin_id(tx, origin)? else {
                return Ok(false);
            };
            let n = tx
                .execute(
                    "DELETE FROM approvals WHERE origin_id = ?1 AND skill_uri = ?2",
                    params![oid, uri.canonical()],
                )
                .map_err(db_err("revoke approval"))?;
            Ok(n > 0)
        })
    }
}
