//! Entries and their files (R-O1, R-C6).

use rusqlite::{OptionalExtension, params};

use super::{Index, db_err, find_origin_id, origin_id};
use crate::digest::Digest;
use crate::entry::{CacheHints, EntryDiff, Scope, SkillEntry, Validation};
use crate::error::Error;
use crate::origin::Origin;
use crate::uri::SkillUri;

/// An entry as the index holds it.
#[derive(Debug, Clone)]
pub struct StoredEntry {
    /// The validated entry.
    pub entry: SkillEntry,
    /// The hints it came with.
    pub hints: CacheHints,
    /// When it was fetched (ms since the epoch).
    pub fetched_at_ms: u64,
    /// Whether it is still fresh at the time of the lookup.
    pub fresh: bool,
}

/// What storing an entry did.
#[derive(Debug, Clone, Default)]
pub struct PutOutcome {
    /// Whether an approval was revoked because the file set changed (R-A2).
    pub revoked: bool,
    /// What changed since the approved entry (when an approval was revoked), or since the
    /// entry it replaced.
    pub diff: Option<EntryDiff>,
}

/// One row of `entries` for listings.
#[derive(Debug, Clone)]
pub struct EntrySummary {
    /// The origin.
    pub origin: Origin,
    /// The skill URI (canonical).
    pub skill_uri: String,
    /// Its scope.
    pub scope: Scope,
    /// The principal of a private entry ('' for public).
    pub principal: String,
    /// Number of files (0 for dynamic).
    pub files: u64,
    /// Declared bytes.
    pub bytes: u64,
    /// Whether it is dynamic.
    pub dynamic: bool,
    /// When it was fetched.
    pub fetched_at_ms: u64,
    /// Its TTL.
    pub ttl_ms: u64,
}

fn scope_key(scope: Scope, principal: &str) -> (&'static str, &str) {
    match scope {
        Scope::Public => ("public", ""),
        Scope::Private => ("private", principal),
    }
}

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl Index {
    /// Stores a validated entry for `origin` as seen by `principal`, replacing the copy of the
    /// other scope (a scope flip), and revokes an approval whose binding no longer matches.
    ///
    /// # Errors
    /// [`Error::Index`] on a database failure.
    pub fn put_entry(
        &self,
        origin: &Origin,
        principal: &str,
        entry: &SkillEntry,
        hints: CacheHints,
        now_ms: u64,
    ) -> Result<PutOutcome, Error> {
        let uri = entry.uri().canonical();
        let (scope, who) = scope_key(hints.scope(), principal);
        let json = entry.to_json().to_string();
        let binding = entry.binding().map(|b| b.as_bytes().to_vec());
        self.write("store entry", |tx| {
            let oid = origin_id(tx, origin)?;
            let previous: Option<String> = tx
                .query_row(
                    "SELECT entry_json FROM entries WHERE origin_id = ?1 AND skill_uri = ?2
                     AND ((scope = 'private' AND principal = ?3) OR scope = 'public')
                     ORDER BY scope = 'private' DESC LIMIT 1",
                    params![oid, uri, principal],
                    |r| r.get(0),
                )
                .optional()
                .map_err(db_err("store entry"))?;
            // A scope flip replaces the other copy (R-C6): public replaces every private copy of
            // the URI; private replaces the public one.
            match hints.scope() {
                Scope::Public => tx.execute("DELETE FROM entries WHERE origin_id = ?1 AND skill_uri = ?2 AND scope = 'private'", params![oid, uri]),
                Scope::Private => tx.execute("DELETE FROM entries WHERE origin_id = ?1 AND skill_uri = ?2 AND scope = 'public'", params![oid, uri]),
            }
            .map_err(db_err("store entry"))?;
            tx.execute(
                "INSERT OR REPLACE INTO entries(origin_id, skill_uri, scope, principal, entry_json, binding, ttl_ms, fetched_at_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![oid, uri, scope, who, json, binding, to_i64(hints.ttl_ms()), to_i64(now_ms)],
            )
            .map_err(db_err("store entry"))?;
            // INSERT OR REPLACE deleted the old row and its files (cascade); write the new files.
            if let Some(m) = entry.manifest() {
                let mut stmt = tx
                    .prepare_cached("INSERT INTO files(origin_id, skill_uri, scope, principal, file_uri, digest, size) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")
                    .map_err(db_err("store entry"))?;
                for f in m.files() {
                    stmt.execute(params![oid, uri, scope, who, f.uri().canonical(), f.digest().as_bytes().as_slice(), to_i64(f.size())])
                        .map_err(db_err("store entry"))?;
                }
            }
            let mut outcome = PutOutcome::default();
            let approval: Option<(Vec<u8>, String)> = tx
                .query_row("SELECT binding, entry_json FROM approvals WHERE origin_id = ?1 AND skill_uri = ?2", params![oid, uri], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
                .map_err(db_err("store entry"))?;
            let parse_old = |json: &str| -> Option<SkillEntry> {
                let v: serde_json::Value = serde_json::from_str(json).ok()?;
                SkillEntry::from_json(&v, &Validation::default().limits(crate::entry::Limits::new(u64::MAX, u64::MAX).ok()?)).ok()
            };
            if let Some((approved, approved_json)) = approval
                && binding.as_deref() != Some(approved.as_slice())
            {
                tx.execute("DELETE FROM approvals WHERE origin_id = ?1 AND skill_uri = ?2", params![oid, uri]).map_err(db_err("revoke approval"))?;
                outcome.revoked = true;
                outcome.diff = parse_old(&approved_json).map(|old| old.diff(entry));
            } else if let Some(old) = previous.as_deref().and_then(parse_old) {
                let diff = old.diff(entry);
                outcome.diff = (!diff.is_empty()).then_some(diff);
            }
            Ok(outcome)
        })
    }

    /// The entry for (`origin`, `uri`) visible to `principal`: its own private copy, else the
    /// public one (R-C6). Never looked up by URI alone (R-O1).
    ///
    /// # Errors
    /// [`Error::Index`] on a database failure.
    pub fn entry(
        &self,
        origin: &Origin,
        uri: &SkillUri,
        principal: &str,
        now_ms: u64,
    ) -> Result<Option<StoredEntry>, Error> {
        let conn = self.conn();
        let Some(oid) = find_origin_id(&conn, origin)? else {
            return Ok(None);
        };
        let row: Option<(String, String, i64, i64)> = conn
            .prepare_cached(
                "SELECT entry_json, scope, ttl_ms, fetched_at_ms FROM entries
                 WHERE origin_id = ?1 AND skill_uri = ?2
                 AND ((scope = 'private' AND principal = ?3) OR scope = 'public')
                 ORDER BY scope = 'private' DESC LIMIT 1",
            )
            .and_then(|mut s| {
                s.query_row(params![oid, uri.canonical(), principal], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                })
                .optional()
            })
            .map_err(db_err("read entry"))?;
        drop(conn);
        let Some((json, scope, ttl, fetched)) = row else {
            return Ok(None);
        };
        let value: serde_json::Value = serde_json::from_str(&json).map_err(|e| Error::Index {
            what: "read entry",
            source: Box::new(e),
        })?;
        // Stored entries were validated when stored; re-validating (with no limits: those were
        // applied then) keeps "what exists is valid" true even for a damaged database.
        let unlimited =
            Validation::default().limits(crate::entry::Limits::new(u64::MAX, u64::MAX)?);
        let entry = SkillEntry::from_json(&value, &unlimited)?;
        let scope = if scope == "public" {
            Scope::Public
        } else {
            Scope::Private
        };
        let ttl = u64::try_from(ttl).unwrap_or(0);
        let fetched_at_ms = u64::try_from(fetched).unwrap_or(0);
        Ok(Some(StoredEntry {
            entry,
            hints: CacheHints::new(ttl, scope),
            fetched_at_ms,
            fresh: now_ms < fetched_at_ms.saturating_add(ttl),
        }))
    }

    /// Every entry (of one origin, or all), for listings.
    ///
    /// # Errors
    /// [`Error::Index`] on a database failure.
    pub fn entries(&self, only: Option<&Origin>) -> Result<Vec<EntrySummary>, Error> {
        let conn = self.conn();
        let mut stmt = conn
            .prepare_cached(
                "SELECT o.label, e.skill_uri, e.scope, e.principal, e.binding IS NULL, e.fetched_at_ms, e.ttl_ms,
                        (SELECT COUNT(*) FROM files f WHERE f.origin_id = e.origin_id AND f.skill_uri = e.skill_uri AND f.scope = e.scope AND f.principal = e.principal),
                        (SELECT COALESCE(SUM(size), 0) FROM files f WHERE f.origin_id = e.origin_id AND f.skill_uri = e.skill_uri AND f.scope = e.scope AND f.principal = e.principal)
                 FROM entries e JOIN origins o ON o.id = e.origin_id
                 WHERE ?1 IS NULL OR o.label = ?1
                 ORDER BY o.label, e.skill_uri, e.scope, e.principal",
            )
            .map_err(db_err("list entries"))?;
        let rows = stmt
            .query_map([only.map(Origin::as_str)], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get(1)?,
                    r.get::<_, String>(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get::<_, i64>(5)?,
                    r.get::<_, i64>(6)?,
                    r.get::<_, i64>(7)?,
                    r.get::<_, i64>(8)?,
                ))
            })
            .map_err(db_err("list entries"))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(db_err("list entries"))?;
        Ok(rows
            .into_iter()
            .filter_map(
                |(label, skill_uri, scope, principal, dynamic, fetched, ttl, files, bytes)| {
                    Some(EntrySummary {
                        origin: Origin::new(label).ok()?,
                        skill_uri,
                        scope: if scope == "public" {
                            Scope::Public
                        } else {
                            Scope::Private
                        },
                        principal,
                        files: u64::try_from(files).unwrap_or(0),
                        bytes: u64::try_from(bytes).unwrap_or(0),
                        dynamic,
                        fetched_at_ms: u64::try_from(fetched).unwrap_or(0),
                        ttl_ms: u64::try_from(ttl).unwrap_or(0),
                    })
                },
            )
            .collect())
    }

    /// Whether any entry of `origin` lists a file with this digest (gc must keep it).
    ///
    /// # Errors
    /// [`Error::Index`] on a database failure.
    pub fn is_referenced(&self, origin: &Origin, digest: &Digest) -> Result<bool, Error> {
        let conn = self.conn();
        let Some(oid) = find_origin_id(&conn, origin)? else {
            return Ok(false);
        };
        conn.prepare_cached(
            "SELECT EXISTS(SELECT 1 FROM files WHERE origin_id = ?1 AND digest = ?2)",
        )
        .and_then(|mut s| s.query_row(params![oid, digest.as_bytes().as_slice()], |r| r.get(0)))
        .map_err(db_err("check reference"))
    }
}

impl Index {
    /// For gc under a byte budget: if no *fresh* entry of `origin` references `digest`, drops the
    /// stale entries that do (they would be refreshed with `skills/get` before their next load
    /// anyway) and the blob's record, and returns true; the caller then deletes the blob. A blob
    /// a fresh entry references is never given up.
    ///
    /// # Errors
    /// [`Error::Index`] on a database failure.
    pub fn release_blob(
        &self,
        origin: &Origin,
        digest: &Digest,
        now_ms: u64,
    ) -> Result<bool, Error> {
        self.write("release blob", |tx| {
            let Some(oid) = find_origin_id(tx, origin)? else { return Ok(true) };
            let d = digest.as_bytes().as_slice();
            let fresh: bool = tx
                .query_row(
                    "SELECT EXISTS(SELECT 1 FROM files f JOIN entries e USING (origin_id, skill_uri, scope, principal)
                     WHERE f.origin_id = ?1 AND f.digest = ?2 AND e.fetched_at_ms + e.ttl_ms > ?3)",
                    params![oid, d, to_i64(now_ms)],
                    |r| r.get(0),
                )
                .map_err(db_err("release blob"))?;
            if fresh {
                return Ok(false);
            }
            tx.execute(
                "DELETE FROM entries WHERE (origin_id, skill_uri, scope, principal) IN
                 (SELECT origin_id, skill_uri, scope, principal FROM files WHERE origin_id = ?1 AND digest = ?2)",
                params![oid, d],
            )
            .map_err(db_err("release blob"))?;
            tx.execute("DELETE FROM blobs WHERE origin_id = ?1 AND digest = ?2", params![oid, d]).map_err(db_err("release blob"))?;
            Ok(true)
        })
    }
}

impl Index {
    /// Every entry of `origin` visible to `principal` whose skill name is `name` (R-O3): names are
    /// labels, so two skills called `refunds` at different paths are both returned, distinguished
    /// by their URIs, and nothing from another origin ever is. Sorted by URI.
    ///
    /// # Errors
    /// [`Error::Index`] on a database failure.
    pub fn entries_named(
        &self,
        origin: &Origin,
        name: &str,
        principal: &str,
        now_ms: u64,
    ) -> Result<Vec<StoredEntry>, Error> {
        if crate::entry::check_name(name).is_err() {
            return Ok(Vec::new()); // no valid entry carries an invalid name
        }
        let uris: Vec<String> = {
            let conn = self.conn();
            let Some(oid) = find_origin_id(&conn, origin)? else {
                return Ok(Vec::new());
            };
            // The name is the last skill-path segment; valid names are [a-z0-9-], so the pattern has
            // no LIKE wildcards in it and needs no escaping.
            let pattern = format!("%/{name}/SKILL.md");
            let mut stmt = conn
                .prepare_cached(
                    "SELECT DISTINCT skill_uri FROM entries WHERE origin_id = ?1 AND skill_uri LIKE ?2
                     AND ((scope = 'private' AND principal = ?3) OR scope = 'public') ORDER BY skill_uri",
                )
                .map_err(db_err("find by name"))?;
            stmt.query_map(params![oid, pattern, principal], |r| r.get(0))
                .map_err(db_err("find by name"))?
                .collect::<Result<_, _>>()
                .map_err(db_err("find by name"))?
        };
        let mut out = Vec::with_capacity(uris.len());
        for uri in uris {
            let Ok(uri) = SkillUri::parse(&uri) else {
                continue;
            };
            if let Some(e) = self.entry(origin, &uri, principal, now_ms)?
                && e.entry.name() == name
            {
                out.push(e);
            }
        }
        Ok(out)
    }
}
