//! Content-bound approvals (R-A2…R-A5).

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

use super::seal::ApprovalRow;
use super::{Index, db_err, find_origin_id, origin_id};
use crate::entry::{Binding, SkillEntry};
use crate::frontmatter::compare;
use super::error::IndexError;
use crate::origin::Origin;
use crate::uri::SkillUri;

/// A recorded approval, as believed: its seal verified (R-H3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    /// The binding of the file set that was approved.
    pub binding: Binding,
    /// An explicit grant of requested permissions (R-A5), bound to the same binding.
    pub granted_tools: Option<Value>,
    /// When it was granted.
    pub granted_at_ms: u64,
    /// The entry as it was approved: what a later entry is compared with to say what changed
    /// (R-A2). `None` only if the sealed row holds an entry this version cannot read.
    pub entry: Option<SkillEntry>,
}

impl Approval {
    /// Whether this approval holds for `entry` as it is now (R-A1, R-A5, E7): the same file set
    /// (binding) *and* the same frontmatter as the entry that was approved. The approval is of
    /// the entry as it was shown — its files, its description and the tools its
    /// `allowed-tools` asks for — and a grant is of those requested tools. A server can claim
    /// one frontmatter in the one `skills/get` answered while a person approves and another
    /// later under the same file set; one of the two claims is then not the verified
    /// `SKILL.md`'s (the frontmatter check, R-V6, fails any load whose entry differs from its
    /// bytes), so either way the approval no longer describes what would load. An approved
    /// entry this version cannot read holds for nothing (fail closed).
    #[must_use]
    pub fn holds_for(&self, entry: &SkillEntry) -> bool {
        entry.binding() == Some(self.binding)
            && self
                .entry
                .as_ref()
                .is_some_and(|approved| compare(approved.frontmatter(), entry.frontmatter()).is_empty())
    }
}

/// An `approvals` row as read back, after its seal verified.
pub(super) struct SealedApproval {
    pub(super) binding: Vec<u8>,
    pub(super) entry_json: String,
    granted_tools: Option<String>,
    granted_at_ms: i64,
}

impl SealedApproval {
    /// The row as an [`Approval`]; `None` for a binding of the wrong width, which no entry has.
    pub(super) fn believe(self) -> Option<Approval> {
        Some(Approval {
            binding: Binding::from_bytes(self.binding.try_into().ok()?),
            granted_tools: self.granted_tools.and_then(|t| serde_json::from_str(&t).ok()),
            granted_at_ms: u64::try_from(self.granted_at_ms).unwrap_or(0),
            entry: super::stored::parse_entry(&self.entry_json),
        })
    }
}

impl Index {
    /// Records `principal`'s approval of `entry` as it is now, bound to `binding` — the entry's
    /// own, which only a manifest-backed entry has (the core refuses a dynamic skill before it
    /// gets here, R-A3) — with an optional explicit grant of the permissions its frontmatter
    /// requests (R-A5). Approvals are per principal (R-H11) and sealed (R-H3).
    ///
    /// # Errors
    /// [`IndexError::Database`] on a database failure.
    pub fn grant(
        &self,
        origin: &Origin,
        principal: &str,
        entry: &SkillEntry,
        binding: Binding,
        granted_tools: Option<&Value>,
        now_ms: u64,
    ) -> Result<(), IndexError> {
        let uri = entry.uri().canonical();
        let json = entry.to_json_text();
        let tools = granted_tools.map(Value::to_string);
        let at = i64::try_from(now_ms).unwrap_or(i64::MAX);
        let seal = ApprovalRow {
            origin: origin.as_str(),
            skill_uri: uri,
            principal,
            binding: binding.as_bytes().as_slice(),
            entry_json: &json,
            granted_tools: tools.as_deref(),
            granted_at_ms: at,
        }
        .sealer(&self.key)
        .seal();
        self.write("grant approval", |tx| {
            let oid = origin_id(tx, origin)?;
            tx.execute(
                "INSERT OR REPLACE INTO approvals(origin_id, skill_uri, principal, binding, entry_json, granted_tools, granted_at_ms, seal) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![oid, uri, principal, binding.as_bytes().as_slice(), json, tools, at, seal],
            )
            .map_err(db_err("grant approval"))?;
            Ok(())
        })
    }

    /// `principal`'s approval row for (`oid`, `uri`) if it exists and its seal verifies; a row
    /// that fails is void (fail closed, R-H3), counted and logged.
    pub(super) fn sealed_approval(
        &self,
        conn: &Connection,
        oid: i64,
        origin: &Origin,
        uri: &str,
        principal: &str,
    ) -> Result<Option<SealedApproval>, IndexError> {
        let row: Option<(SealedApproval, Option<Vec<u8>>)> = conn
            .prepare_cached("SELECT binding, entry_json, granted_tools, granted_at_ms, seal FROM approvals WHERE origin_id = ?1 AND skill_uri = ?2 AND principal = ?3")
            .and_then(|mut s| {
                s.query_row(params![oid, uri, principal], |r| {
                    Ok((
                        SealedApproval {
                            binding: r.get(0)?,
                            entry_json: r.get(1)?,
                            granted_tools: r.get(2)?,
                            granted_at_ms: r.get(3)?,
                        },
                        r.get(4)?,
                    ))
                })
                .optional()
            })
            .map_err(db_err("read approval"))?;
        let Some((a, seal)) = row else {
            return Ok(None);
        };
        let sealed = ApprovalRow {
            origin: origin.as_str(),
            skill_uri: uri,
            principal,
            binding: &a.binding,
            entry_json: &a.entry_json,
            granted_tools: a.granted_tools.as_deref(),
            granted_at_ms: a.granted_at_ms,
        }
        .sealer(&self.key)
        .verify(seal.as_deref());
        if !sealed {
            self.seal_failed("approvals", origin, uri);
            return Ok(None);
        }
        Ok(Some(a))
    }

    /// `principal`'s approval of (`origin`, `uri`), if any (R-A4, R-H11). An approval whose seal
    /// fails is void: `None` (R-H3).
    ///
    /// # Errors
    /// [`IndexError::Database`](IndexError::Database) on a database failure.
    pub fn approval(
        &self,
        origin: &Origin,
        uri: &SkillUri,
        principal: &str,
    ) -> Result<Option<Approval>, IndexError> {
        let conn = self.conn()?;
        // Read before the query, under the same hold: see `memo`.
        let version = super::memo::version(&conn);
        let Some(oid) = find_origin_id(&conn, origin)? else {
            return Ok(None);
        };
        let row = self.sealed_approval(&conn, oid, origin, uri.canonical(), principal)?;
        drop(conn);
        let approval = row.and_then(SealedApproval::believe);
        if let (Some(v), Some(a)) = (version, &approval) {
            let key = super::memo::key(origin.as_str(), uri.canonical(), principal);
            self.approval_memo.keep(v, key, a);
        }
        Ok(approval)
    }

    /// [`Index::approval`] answered from the memo, with no query and no wait (R-T1): `None`
    /// when the database changed since the approval was last read, the reader is busy, or no
    /// approval was read yet — then ask [`Index::approval`].
    #[must_use]
    pub fn approval_quick(
        &self,
        origin: &Origin,
        uri: &SkillUri,
        principal: &str,
    ) -> Option<Approval> {
        let version = super::memo::version_now(&self.reader)?;
        let key = super::memo::key(origin.as_str(), uri.canonical(), principal);
        self.approval_memo.get(version, &key)
    }

    /// Whether `entry` (as it is now) is approved by `principal`: a sealed approval exists and
    /// holds for it ([`Approval::holds_for`]: the same binding and frontmatter). Always false for
    /// a dynamic skill (R-A3).
    ///
    /// # Errors
    /// [`IndexError::Database`](IndexError::Database) on a database failure.
    pub fn is_approved(
        &self,
        origin: &Origin,
        principal: &str,
        entry: &SkillEntry,
    ) -> Result<bool, IndexError> {
        if entry.binding().is_none() {
            return Ok(false);
        }
        Ok(self
            .approval(origin, entry.uri(), principal)?
            .is_some_and(|a| a.holds_for(entry)))
    }
}
