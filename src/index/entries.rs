//! Entries and their files (R-O1, R-C6).

use rusqlite::params;

use super::seal::{EntryRow, FileRow, SealKey};
use super::stored::{parse_entry, read_entry};
use super::{Index, db_err, find_origin_id, origin_id};
use crate::digest::Digest;
use crate::entry::{CacheHints, EntryDiff, Scope, SkillEntry};
use super::error::IndexError;
use crate::origin::Origin;
use crate::uri::SkillUri;

/// An entry as the index holds it.
#[derive(Debug, Clone)]
pub struct StoredEntry {
    /// The validated entry.
    pub entry: SkillEntry,
    /// The hints it came with: its scope decides whether the shared tier (feature `l2`) may
    /// serve it.
    #[cfg_attr(not(feature = "l2"), allow(dead_code))]
    pub hints: CacheHints,
    /// When it was fetched (ms since the epoch).
    pub fetched_at_ms: u64,
    /// Whether it is still fresh at the time of the lookup.
    pub fresh: bool,
}

/// What storing an entry did.
#[derive(Debug, Clone, Default)]
pub struct PutOutcome {
    /// Whether an approval was revoked because it no longer holds: the file set changed (R-A2),
    /// or the frontmatter did under the same file set (E7).
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

/// The longest [`relist_slack_ms`]: a caller that knows of no change announced since this long
/// ago may put entries as relisted ([`Index::put_answered`]).
pub const RELIST_SLACK_MS: i64 = 1_000;

/// How long after its row was written an unchanged entry listed again leaves the row as it is:
/// a second, or half the entry's time to live when that is shorter (so that an entry that is
/// fresh for a while is not cut short by more than half of it). An entry with no time to live
/// (`ttlMs` 0) is never fresh, so only the age `offline` reports moves, by at most the second.
fn relist_slack_ms(ttl_ms: i64) -> i64 {
    if ttl_ms == 0 {
        RELIST_SLACK_MS
    } else {
        RELIST_SLACK_MS.min(ttl_ms / 2)
    }
}

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// What one listing's entries are stored as: for whom, in which scope, with which hints.
struct Put<'a> {
    origin: &'a Origin,
    principal: &'a str,
    /// The row's scope and principal columns ([`scope_key`]).
    scope: &'static str,
    who: &'a str,
    public: bool,
    ttl_ms: i64,
    fetched_at_ms: i64,
    /// Whether a recent unchanged row may be left as it is ([`Index::put_answered`]).
    relisted: bool,
    /// Whether the entries answer a request asked at `fetched_at_ms` ([`Index::put_answered`]):
    /// a row kept from a request asked later is newer, and stays.
    answered: bool,
}

/// An entry ready to be written: its JSON, its binding and its row's seal.
struct SealedEntry<'e> {
    entry: &'e SkillEntry,
    json: String,
    binding: Option<Vec<u8>>,
    /// Made by [`Index::seal_of`] when the row is written.
    seal: std::sync::OnceLock<Vec<u8>>,
}

/// An `entries` row as read back, with its seal.
struct Row {
    entry_json: String,
    scope: String,
    principal: String,
    binding: Option<Vec<u8>>,
    ttl_ms: i64,
    fetched_at_ms: i64,
    seal: Option<Vec<u8>>,
}

/// The columns [`Row::read`] expects, in order, of `entries` aliased `e` (a macro so that the
/// SQL stays one literal: no formatting on the hit path).
macro_rules! entry_columns {
    () => {
        "e.entry_json, e.scope, e.principal, e.binding, e.ttl_ms, e.fetched_at_ms, e.seal"
    };
}

impl Row {
    fn read(r: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<Row> {
        Ok(Row {
            entry_json: r.get(at)?,
            scope: r.get(at + 1)?,
            principal: r.get(at + 2)?,
            binding: r.get(at + 3)?,
            ttl_ms: r.get(at + 4)?,
            fetched_at_ms: r.get(at + 5)?,
            seal: r.get(at + 6)?,
        })
    }

    /// The rows of (`oid`, `skill_uri`) that `principal` may see, its own private copy first,
    /// then the public one (R-C6, R-O1); `what` names the operation in a database error. Their
    /// seals are not checked here: each caller decides what a failed seal means (R-H3).
    fn visible(
        conn: &rusqlite::Connection,
        oid: i64,
        skill_uri: &str,
        principal: &str,
        what: &'static str,
    ) -> Result<Vec<Row>, IndexError> {
        let mut stmt = conn
            .prepare_cached(concat!(
                "SELECT ",
                entry_columns!(),
                " FROM entries e WHERE e.origin_id = ?1 AND e.skill_uri = ?2
                 AND ((e.scope = 'private' AND e.principal = ?3) OR e.scope = 'public')
                 ORDER BY e.scope = 'private' DESC"
            ))
            .map_err(db_err(what))?;
        stmt.query_map(params![oid, skill_uri, principal], |r| Row::read(r, 0))
            .and_then(Iterator::collect)
            .map_err(db_err(what))
    }

    /// Every row of (`oid`, `skill_uri`), whoever may see it: what storing an entry may
    /// replace (its own scope's row, and the other scope's copies: R-C6).
    fn all(
        conn: &rusqlite::Connection,
        oid: i64,
        skill_uri: &str,
        what: &'static str,
    ) -> Result<Vec<Row>, IndexError> {
        let mut stmt = conn
            .prepare_cached(concat!(
                "SELECT ",
                entry_columns!(),
                " FROM entries e WHERE e.origin_id = ?1 AND e.skill_uri = ?2"
            ))
            .map_err(db_err(what))?;
        stmt.query_map(params![oid, skill_uri], |r| Row::read(r, 0))
            .and_then(Iterator::collect)
            .map_err(db_err(what))
    }

    /// Whether `principal` may see this row (R-C6, R-O1).
    fn visible_to(&self, principal: &str) -> bool {
        self.scope == "public" || (self.scope == "private" && self.principal == principal)
    }

    /// Whether this host wrote this row for `origin` and `skill_uri` (R-H3).
    fn is_sealed(&self, key: &SealKey, origin: &Origin, skill_uri: &str) -> bool {
        EntryRow {
            origin: origin.as_str(),
            skill_uri,
            scope: &self.scope,
            principal: &self.principal,
            entry_json: &self.entry_json,
            binding: self.binding.as_deref(),
            ttl_ms: self.ttl_ms,
            fetched_at_ms: self.fetched_at_ms,
        }
        .sealer(key)
        .verify(self.seal.as_deref())
    }
}

impl Index {
    /// Stores a validated entry for `origin` as seen by `principal`, replacing the copy of the
    /// other scope (a scope flip), and revokes `principal`'s approval if its binding no longer
    /// matches (R-A2, R-H11): another principal's approval stays, bound to what they approved.
    /// Every row written is sealed (R-H3).
    ///
    /// # Errors
    /// [`IndexError::Database`](IndexError::Database) on a database failure; [`IndexError::ReadOnly`](IndexError::ReadOnly) on a read-only index.
    // The host path keeps entries a listing (or one `skills/get`) at a time (`put_entries`).
    #[cfg(any(test, feature = "internals"))]
    pub fn put_entry(
        &self,
        origin: &Origin,
        principal: &str,
        entry: &SkillEntry,
        hints: CacheHints,
        now_ms: u64,
    ) -> Result<PutOutcome, IndexError> {
        let mut out = self.put_entries(origin, principal, std::slice::from_ref(entry), hints, now_ms)?;
        Ok(out.pop().unwrap_or_default())
    }

    /// [`Index::put_entry`] for every entry of one listing, in one transaction: one commit (and
    /// one sync of the log) for the listing, not one per entry — a listing of 100 entries took
    /// a second of syncs one by one (G1). The outcomes are in `entries`' order.
    ///
    /// # Errors
    /// As [`Index::put_entry`]; nothing is stored if any write fails.
    // The host path keeps what a server answered with `put_answered`.
    #[cfg(any(test, feature = "internals"))]
    pub fn put_entries(
        &self,
        origin: &Origin,
        principal: &str,
        entries: &[SkillEntry],
        hints: CacheHints,
        now_ms: u64,
    ) -> Result<Vec<PutOutcome>, IndexError> {
        let kept = self.put_with(origin, principal, entries, hints, now_ms, false, None)?;
        Ok(kept.expect("kept whatever the purge count"))
    }

    /// [`Index::put_entries`] for entries a server answered, after a load of the index's purge
    /// count ([`Index::purges`]) taken before the request went out: `None`, and nothing
    /// written, if the count moved since (an origin purged meanwhile, by any cache or process,
    /// is not brought back by an answer to a request sent before the purge: round 22 of
    /// review). The count is read inside the write transaction, which a purge's own excludes.
    ///
    /// `relisted`: an entry unchanged (the same text, scope and time to live) whose row was
    /// written less than [`relist_slack_ms`] before `now_ms` is left as it is — a host that
    /// lists at every turn writes nothing. Its recorded fetch time then lags the truth by less
    /// than the slack, which only makes it look older: its freshness ends early, never late. A
    /// caller that knows of a change announced within the slack (R-B5: a row fetched before the
    /// announcement is stale) renews instead (`relisted` false), or the entry would stay stale.
    ///
    /// # Errors
    /// As [`Index::put_entries`].
    #[allow(clippy::too_many_arguments)] // one listing's answer and how to keep it
    pub fn put_answered(
        &self,
        origin: &Origin,
        principal: &str,
        entries: &[SkillEntry],
        hints: CacheHints,
        now_ms: u64,
        relisted: bool,
        purges: u64,
    ) -> Result<Option<Vec<PutOutcome>>, IndexError> {
        self.put_with(origin, principal, entries, hints, now_ms, relisted, Some(purges))
    }

    #[allow(clippy::too_many_arguments)] // the two public forms' common part
    fn put_with(
        &self,
        origin: &Origin,
        principal: &str,
        entries: &[SkillEntry],
        hints: CacheHints,
        now_ms: u64,
        relisted: bool,
        purges: Option<u64>,
    ) -> Result<Option<Vec<PutOutcome>>, IndexError> {
        let (scope, who) = scope_key(hints.scope(), principal);
        let put = Put {
            origin,
            principal,
            scope,
            who,
            public: matches!(hints.scope(), Scope::Public),
            ttl_ms: to_i64(hints.ttl_ms()),
            fetched_at_ms: to_i64(now_ms),
            relisted,
            answered: purges.is_some(),
        };
        // Serialised before the transaction (the write lock is held for writes only); a row is
        // sealed when it is written (`seal_of`).
        let rows: Vec<SealedEntry<'_>> = entries.iter().map(Self::unsealed).collect();
        self.write("store entry", |tx| {
            if let Some(seen) = purges {
                let now: i64 = tx
                    .prepare_cached("SELECT generation FROM purges WHERE id = 0")
                    .and_then(|mut st| st.query_row([], |r| r.get(0)))
                    .map_err(db_err("store entry"))?;
                if now.cast_unsigned() != seen {
                    return Ok(None);
                }
            }
            let oid = origin_id(tx, origin)?;
            rows.iter()
                .map(|row| self.put_row(tx, oid, &put, row))
                .collect::<Result<_, _>>()
                .map(Some)
        })
    }

    /// `entry` serialised, with its binding, for [`Index::put_entries`] (sealed by
    /// [`Index::seal_of`] when written).
    fn unsealed(entry: &SkillEntry) -> SealedEntry<'_> {
        let json = entry.to_json_text();
        let binding = entry.binding().map(|b| b.as_bytes().to_vec());
        SealedEntry {
            entry,
            json,
            binding,
            seal: std::sync::OnceLock::new(),
        }
    }

    /// The seal of `row` as `put` writes it, made once, when the row is written (a row left as
    /// it is needs none).
    fn seal_of<'r>(&self, put: &Put<'_>, row: &'r SealedEntry<'_>) -> &'r [u8] {
        row.seal.get_or_init(|| {
            EntryRow {
                origin: put.origin.as_str(),
                skill_uri: row.entry.uri().canonical(),
                scope: put.scope,
                principal: put.who,
                entry_json: &row.json,
                binding: row.binding.as_deref(),
                ttl_ms: put.ttl_ms,
                fetched_at_ms: put.fetched_at_ms,
            }
            .sealer(&self.key)
            .seal()
        })
    }

    /// Writes one sealed entry inside the listing's transaction, and says what that did to
    /// the principal's approval.
    fn put_row(
        &self,
        tx: &rusqlite::Transaction<'_>,
        oid: i64,
        put: &Put<'_>,
        row: &SealedEntry<'_>,
    ) -> Result<PutOutcome, IndexError> {
        let (entry, uri) = (row.entry, row.entry.uri().canonical());
        // A scope flip replaces the other copy (R-C6): public replaces every private copy of the
        // URI; private replaces the public one.
        let other = if put.public { "private" } else { "public" };
        let rows = Row::all(tx, oid, uri, "store entry")?;
        // An answer to a request asked before the one whose answer a row it would replace holds
        // (two caches or tasks asking at once, the earlier answer kept last) is older than that
        // row: the rows stay, or the older content would be served as fresh (round 24 of review;
        // round 25: the row of the other scope too, which a scope flip would delete). Only a
        // sealed row's time is believed.
        if put.answered
            && rows.iter().any(|r| {
                r.fetched_at_ms > put.fetched_at_ms
                    && ((r.scope == put.scope && r.principal == put.who) || r.scope == other)
                    && r.is_sealed(&self.key, put.origin, uri)
            })
        {
            return Ok(PutOutcome::default());
        }
        // Only a sealed previous copy is believed, even just for reporting what changed: this
        // principal's private copy first, then the public one.
        let mut visible: Vec<Row> = rows.into_iter().filter(|r| r.visible_to(put.principal)).collect();
        visible.sort_by_key(|r| r.scope != "private");
        let previous = visible
            .into_iter()
            .find(|r| r.is_sealed(&self.key, put.origin, uri));
        // The same entry in the same row, listed again: only its time and seal change. Its file
        // rows stay (their seals do not cover the time), so a listing of unchanged skills writes
        // one row each, not every file again (G1: a catalog of 10 k files rewrote 10 k file rows).
        let unchanged = previous.as_ref().is_some_and(|r| {
            r.scope == put.scope && r.principal == put.who && r.entry_json == row.json
        });
        // Answered again unchanged, with the same hints, shortly after its row was written:
        // the row is left as it is ([`Index::put_answered`]).
        let recent = put.relisted
            && previous.as_ref().is_some_and(|r| {
            r.ttl_ms == put.ttl_ms
                && (0..relist_slack_ms(put.ttl_ms)).contains(&(put.fetched_at_ms - r.fetched_at_ms))
        });
        if unchanged && recent {
            return self.revoke_unless_held(tx, oid, put, entry, None);
        }
        // An unchanged entry has nothing to say against itself: its previous copy is not
        // parsed (a whole entry's validation, for each skill of every listing) to find no diff.
        let previous = previous.filter(|_| !unchanged).map(|r| r.entry_json);
        tx.execute(
            "DELETE FROM entries WHERE origin_id = ?1 AND skill_uri = ?2 AND scope = ?3",
            params![oid, uri, other],
        )
        .map_err(db_err("store entry"))?;
        let (scope, who, ttl_ms, at, seal) =
            (put.scope, put.who, put.ttl_ms, put.fetched_at_ms, self.seal_of(put, row));
        if unchanged {
            tx.prepare_cached(
                "UPDATE entries SET ttl_ms = ?5, fetched_at_ms = ?6, seal = ?7
                 WHERE origin_id = ?1 AND skill_uri = ?2 AND scope = ?3 AND principal = ?4",
            )
            .and_then(|mut st| st.execute(params![oid, uri, scope, who, ttl_ms, at, seal]))
            .map_err(db_err("store entry"))?;
        } else {
            tx.execute(
                "INSERT OR REPLACE INTO entries(origin_id, skill_uri, scope, principal, entry_json, binding, ttl_ms, fetched_at_ms, seal)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![oid, uri, scope, who, row.json, row.binding, ttl_ms, at, seal],
            )
            .map_err(db_err("store entry"))?;
            // INSERT OR REPLACE deleted the old row and its files (cascade); write the new files.
            self.put_files(tx, oid, put.origin, entry, scope, who)?;
        }
        self.revoke_unless_held(tx, oid, put, entry, previous.as_deref())
    }

    /// What storing `entry` does to `put.principal`'s approval: only this principal's is at
    /// stake (R-H11); one that fails its seal is void already and revokes nothing (R-H3). An
    /// approval that no longer holds (another file set, or another frontmatter under the same
    /// file set: E7) is revoked and what changed is said, allowed-tools included. A row this
    /// version cannot believe (a binding of the wrong width) holds for nothing. Without a
    /// revocation, the outcome says what changed since `previous`, the entry it replaced.
    fn revoke_unless_held(
        &self,
        tx: &rusqlite::Transaction<'_>,
        oid: i64,
        put: &Put<'_>,
        entry: &SkillEntry,
        previous: Option<&str>,
    ) -> Result<PutOutcome, IndexError> {
        let uri = entry.uri().canonical();
        let mut outcome = PutOutcome::default();
        if let Some(approved) = self
            .sealed_approval(tx, oid, put.origin, uri, put.principal)?
            .map(super::approvals::SealedApproval::believe)
            && !approved.as_ref().is_some_and(|a| a.holds_for(entry))
        {
            tx.execute(
                "DELETE FROM approvals WHERE origin_id = ?1 AND skill_uri = ?2 AND principal = ?3",
                params![oid, uri, put.principal],
            )
            .map_err(db_err("revoke approval"))?;
            outcome.revoked = true;
            outcome.diff = approved.and_then(|a| a.entry).map(|old| old.diff(entry));
        } else if let Some(old) = previous.and_then(parse_entry) {
            let diff = old.diff(entry);
            outcome.diff = (!diff.is_empty()).then_some(diff);
        }
        Ok(outcome)
    }

    /// The file rows of `entry` (sealed, R-H3), after its entry row.
    fn put_files(
        &self,
        tx: &rusqlite::Transaction<'_>,
        oid: i64,
        origin: &Origin,
        entry: &SkillEntry,
        scope: &str,
        who: &str,
    ) -> Result<(), IndexError> {
        let Some(m) = entry.manifest() else {
            return Ok(());
        };
        let uri = entry.uri().canonical();
        let mut stmt = tx
            .prepare_cached("INSERT INTO files(origin_id, skill_uri, scope, principal, file_uri, digest, size, seal) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")
            .map_err(db_err("store entry"))?;
        for f in m.files() {
            let file_uri = f.uri().canonical();
            let digest = f.digest();
            let size = to_i64(f.size());
            let seal = FileRow {
                origin: origin.as_str(),
                skill_uri: uri,
                scope,
                principal: who,
                file_uri,
                digest: digest.as_bytes().as_slice(),
                size,
            }
            .sealer(&self.key)
            .seal();
            stmt.execute(params![oid, uri, scope, who, file_uri, digest.as_bytes().as_slice(), size, seal])
                .map_err(db_err("store entry"))?;
        }
        Ok(())
    }

    /// The entry for (`origin`, `uri`) visible to `principal`: its own private copy, else the
    /// public one (R-C6). Never looked up by URI alone (R-O1). A row whose seal fails is absent
    /// (R-H3): the caller fetches the entry again and the new row replaces it.
    ///
    /// # Errors
    /// [`IndexError::Database`](IndexError::Database) on a database failure.
    pub fn entry(
        &self,
        origin: &Origin,
        uri: &SkillUri,
        principal: &str,
        now_ms: u64,
    ) -> Result<Option<StoredEntry>, IndexError> {
        let canonical = uri.canonical();
        let (version, rows): (Option<super::memo::Version>, Vec<Row>) = {
            let conn = self.conn()?;
            // Read before the query, under the same hold: see `memo`.
            let version = super::memo::version(&conn);
            let Some(oid) = find_origin_id(&conn, origin)? else {
                return Ok(None);
            };
            (
                version,
                Row::visible(&conn, oid, canonical, principal, "read entry")?,
            )
        };
        let mut found = None;
        for row in rows {
            if row.is_sealed(&self.key, origin, canonical) {
                found = Some(row);
                break;
            }
            self.seal_failed("entries", origin, canonical);
        }
        let Some(row) = found else {
            return Ok(None);
        };
        let entry = read_entry(&row.entry_json)?;
        let scope = if row.scope == "public" {
            Scope::Public
        } else {
            Scope::Private
        };
        let ttl = u64::try_from(row.ttl_ms).unwrap_or(0);
        let fetched_at_ms = u64::try_from(row.fetched_at_ms).unwrap_or(0);
        let stored = StoredEntry {
            entry,
            hints: CacheHints::new(ttl, scope),
            fetched_at_ms,
            fresh: now_ms < fetched_at_ms.saturating_add(ttl),
        };
        if let Some(v) = version {
            self.entry_memo
                .keep(v, super::memo::key(origin.as_str(), canonical, principal), &stored);
        }
        Ok(Some(stored))
    }

    /// [`Index::entry`] answered from the memo, with no query and no wait (R-T1): `None` when
    /// the database changed since the entry was last read, the reader is busy, or the entry was
    /// not read yet — then ask [`Index::entry`].
    #[must_use]
    pub fn entry_quick(
        &self,
        origin: &Origin,
        uri: &SkillUri,
        principal: &str,
        now_ms: u64,
    ) -> Option<StoredEntry> {
        let version = super::memo::version_now(&self.reader)?;
        let key = super::memo::key(origin.as_str(), uri.canonical(), principal);
        let mut stored = self.entry_memo.get(version, &key)?;
        stored.fresh = now_ms < stored.fetched_at_ms.saturating_add(stored.hints.ttl_ms());
        Some(stored)
    }

    /// Every entry (of one origin, or all), for listings. Rows whose seal fails are left out
    /// (and counted, R-H3); counts and sizes come from the sealed entry itself.
    ///
    /// # Errors
    /// [`IndexError::Database`](IndexError::Database) on a database failure.
    pub fn entries(&self, only: Option<&Origin>) -> Result<Vec<EntrySummary>, IndexError> {
        let rows: Vec<(String, String, Row)> = {
            let conn = self.conn()?;
            let mut stmt = conn
                .prepare_cached(concat!(
                    "SELECT o.label, e.skill_uri, ",
                    entry_columns!(),
                    " FROM entries e JOIN origins o ON o.id = e.origin_id
                     WHERE ?1 IS NULL OR o.label = ?1
                     ORDER BY o.label, e.skill_uri, e.scope, e.principal"
                ))
                .map_err(db_err("list entries"))?;
            stmt.query_map([only.map(Origin::as_str)], |r| {
                Ok((r.get(0)?, r.get(1)?, Row::read(r, 2)?))
            })
            .and_then(Iterator::collect)
            .map_err(db_err("list entries"))?
        };
        let mut out = Vec::with_capacity(rows.len());
        for (label, skill_uri, row) in rows {
            let Ok(origin) = Origin::new(label) else {
                continue;
            };
            if !row.is_sealed(&self.key, &origin, &skill_uri) {
                self.seal_failed("entries", &origin, &skill_uri);
                continue;
            }
            let Some(entry) = parse_entry(&row.entry_json) else {
                continue;
            };
            let (files, bytes) = entry
                .manifest()
                .map_or((0, 0), |m| (m.files().len() as u64, m.total_bytes()));
            out.push(EntrySummary {
                origin,
                skill_uri,
                scope: if row.scope == "public" {
                    Scope::Public
                } else {
                    Scope::Private
                },
                principal: row.principal,
                files,
                bytes,
                fetched_at_ms: u64::try_from(row.fetched_at_ms).unwrap_or(0),
                ttl_ms: u64::try_from(row.ttl_ms).unwrap_or(0),
            });
        }
        Ok(out)
    }

    /// Whether any entry of `origin` lists a file with this digest (gc must keep it). Only sealed
    /// file rows count (R-H3).
    ///
    /// # Errors
    /// [`IndexError::Database`](IndexError::Database) on a database failure.
    pub fn is_referenced(&self, origin: &Origin, digest: &Digest) -> Result<bool, IndexError> {
        type FileCols = (String, String, String, String, i64, Option<Vec<u8>>);
        let rows: Vec<FileCols> = {
            let conn = self.conn()?;
            let Some(oid) = find_origin_id(&conn, origin)? else {
                return Ok(false);
            };
            let mut stmt = conn
                .prepare_cached(
                    REFERENCES_OF_DIGEST,
                )
                .map_err(db_err("check reference"))?;
            stmt.query_map(params![oid, digest.as_bytes().as_slice()], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            })
            .and_then(Iterator::collect)
            .map_err(db_err("check reference"))?
        };
        let mut referenced = false;
        for (skill_uri, scope, principal, file_uri, size, seal) in rows {
            let sealed = FileRow {
                origin: origin.as_str(),
                skill_uri: &skill_uri,
                scope: &scope,
                principal: &principal,
                file_uri: &file_uri,
                digest: digest.as_bytes().as_slice(),
                size,
            }
            .sealer(&self.key)
            .verify(seal.as_deref());
            if sealed {
                referenced = true;
                break;
            }
            self.seal_failed("files", origin, &file_uri);
        }
        Ok(referenced)
    }
}

// The file rows of one blob, found through `files_by_digest`. `INDEXED BY` because, without
// statistics, SQLite takes the primary key's `origin_id` prefix for these: a scan of every file
// of the origin per blob, which made gc quadratic (50 k files in one origin: 163 s). The tests
// below read each statement's plan.

/// Every file row of `(origin_id, digest)`, with what its seal covers ([`Index::is_referenced`]).
const REFERENCES_OF_DIGEST: &str = "SELECT skill_uri, scope, principal, file_uri, size, seal
     FROM files INDEXED BY files_by_digest WHERE origin_id = ?1 AND digest = ?2";

/// Whether a fresh entry lists `(origin_id, digest)` at time `?3` ([`Index::release_blob`]).
const FRESH_REFERENCE_OF_DIGEST: &str = "SELECT EXISTS(SELECT 1 FROM files f INDEXED BY files_by_digest
     JOIN entries e USING (origin_id, skill_uri, scope, principal)
     WHERE f.origin_id = ?1 AND f.digest = ?2 AND e.fetched_at_ms + e.ttl_ms > ?3)";

/// The entries listing `(origin_id, digest)` ([`Index::release_blob`]).
const ENTRIES_OF_DIGEST: &str = "SELECT DISTINCT skill_uri, scope, principal
     FROM files INDEXED BY files_by_digest WHERE origin_id = ?1 AND digest = ?2";

impl Index {
    /// For gc under a byte budget: if no *fresh* entry of `origin` references `digest`, drops the
    /// stale entries that do (they would be refreshed with `skills/get` before their next load
    /// anyway) and the blob's record, and returns true; the caller then deletes the blob. A blob
    /// a fresh entry references is never given up.
    ///
    /// # Errors
    /// [`IndexError::Database`](IndexError::Database) on a database failure.
    pub fn release_blob(
        &self,
        origin: &Origin,
        digest: &Digest,
        now_ms: u64,
    ) -> Result<bool, IndexError> {
        self.write("release blob", |tx| {
            let Some(oid) = find_origin_id(tx, origin)? else { return Ok(true) };
            let d = digest.as_bytes().as_slice();
            let fresh: bool = tx
                .query_row(
                    FRESH_REFERENCE_OF_DIGEST,
                    params![oid, d, to_i64(now_ms)],
                    |r| r.get(0),
                )
                .map_err(db_err("release blob"))?;
            if fresh {
                return Ok(false);
            }
            // The entries are found by the digest index, then deleted one by one by their key:
            // `DELETE … WHERE (key) IN (subquery)` scans every entry of the origin (G1).
            let keys: Vec<(String, String, String)> = tx
                .prepare_cached(ENTRIES_OF_DIGEST)
                .and_then(|mut stmt| {
                    stmt.query_map(params![oid, d], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                        .collect()
                })
                .map_err(db_err("release blob"))?;
            for (skill_uri, scope, principal) in keys {
                tx.execute(
                    "DELETE FROM entries WHERE origin_id = ?1 AND skill_uri = ?2 AND scope = ?3 AND principal = ?4",
                    params![oid, skill_uri, scope, principal],
                )
                .map_err(db_err("release blob"))?;
            }
            tx.execute("DELETE FROM blobs WHERE origin_id = ?1 AND digest = ?2", params![oid, d]).map_err(db_err("release blob"))?;
            Ok(true)
        })
    }
}

impl Index {
    internal_pub! {
        /// Every entry of `origin` visible to `principal` whose skill name is `name` (R-O3): names are
        /// labels, so two skills called `refunds` at different paths are both returned, distinguished
        /// by their URIs, and nothing from another origin ever is. Sorted by URI.
        ///
        /// # Errors
        /// [`IndexError::Database`](IndexError::Database) on a database failure.
        fn entries_named(
            &self,
            origin: &Origin,
            name: &str,
            principal: &str,
            now_ms: u64,
        ) -> Result<Vec<StoredEntry>, IndexError> {
            if crate::entry::check_name(name).is_err() {
                return Ok(Vec::new()); // no valid entry carries an invalid name
            }
            let uris: Vec<String> = {
                let conn = self.conn()?;
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
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan SQLite makes for `sql` on the current schema, one line per step.
    fn plan(sql: &str, args: usize) -> String {
        let mut conn = rusqlite::Connection::open_in_memory().expect("memory database");
        super::super::schema::migrate(&mut conn).expect("schema");
        let params: Vec<i64> = (0..args).map(|i| i64::try_from(i).expect("small")).collect();
        let mut stmt = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .expect("prepare");
        stmt.query_map(rusqlite::params_from_iter(params), |r| r.get::<_, String>(3))
            .expect("query")
            .collect::<Result<Vec<_>, _>>()
            .expect("rows")
            .join("\n")
    }

    /// A skill `name` with `files` files besides its `SKILL.md`, the description `description`.
    fn skill(name: &str, files: usize, description: &str) -> SkillEntry {
        let uri = format!("skill://{name}/SKILL.md");
        let mut resources = vec![serde_json::json!({"uri": uri, "digest": Digest::of(b"md").to_string(), "size": 2})];
        resources.extend((0..files).map(|i| {
            let body = format!("{name} file {i}");
            serde_json::json!({"uri": format!("skill://{name}/f{i}.md"),
                               "digest": Digest::of(body.as_bytes()).to_string(), "size": body.len()})
        }));
        let wire = serde_json::json!({
            "uri": uri,
            "frontmatter": {"name": name, "description": description},
            "resources": resources,
        });
        SkillEntry::from_json(&wire, &crate::entry::Validation::default()).expect("valid fixture")
    }

    /// The rows the writer connection has changed since it was opened.
    fn writes(index: &Index) -> u64 {
        index.writer.as_ref().map_or(0, |w| w.lock().map_or(0, |c| c.total_changes()))
    }

    /// Round 28 of review (F1): a fork closes every index connection, so the child inherits
    /// none. The index goes on as if nothing happened: the next read and the next write open
    /// their connection again, and an answer remembered from the closed reader is not believed
    /// from the new one (whose `data_version` counts afresh), even after another writer changed
    /// the entry meanwhile.
    #[test]
    fn connections_closed_for_a_fork_open_again_and_forget_what_they_remembered() {
        let dir = crate::scratch::scratch();
        let path = dir.path().join("index.sqlite3");
        let index = Index::open(&path, SealKey::from_bytes([7; 32])).expect("open");
        let other = Index::open(&path, SealKey::from_bytes([7; 32])).expect("open");
        let origin = Origin::new("docs").expect("label");
        let uri = SkillUri::parse("skill://a/SKILL.md").expect("uri");
        let hints = CacheHints::new(60_000, Scope::Public);
        index.put_entries(&origin, "", &[skill("a", 1, "first")], hints, 1).expect("kept");
        index.entry(&origin, &uri, "", 2).expect("read").expect("kept");
        assert!(index.entry_quick(&origin, &uri, "", 2).is_some(), "remembered");

        assert!(index.reader.close_for_test(), "the reader was free");
        assert!(index.writer.as_ref().expect("writable").close_for_test(), "the writer was free");
        // Opened again by a quick path (round 29 of review, F1-T: an access time after a fork
        // was never recorded), whose memo is of the closed connection: a miss.
        assert!(index.entry_quick(&origin, &uri, "", 2).is_none(), "nothing from before");
        assert!(index.reader.is_open(), "the quick path opened the reader again");
        let _ = index.touch_blob(&origin, &Digest::of(b"md"), 2);
        assert!(index.writer.as_ref().expect("writable").is_open(), "the touch opened the writer");
        assert!(index.reader.close_for_test(), "the reader was free");
        assert!(index.writer.as_ref().expect("writable").close_for_test(), "the writer was free");
        // Another process changes the entry while this one's connections are closed.
        other.put_entries(&origin, "", &[skill("a", 1, "second")], hints, 3).expect("kept");

        let read = index.entry(&origin, &uri, "", 4).expect("opened again").expect("kept");
        assert_eq!(read.entry.description(), "second");
        let quick = index.entry_quick(&origin, &uri, "", 4).expect("remembered again");
        assert_eq!(quick.entry.description(), "second", "nothing from before");
        index.put_entries(&origin, "", &[skill("a", 1, "third")], hints, 5).expect("writes again");
        let read = index.entry(&origin, &uri, "", 6).expect("read").expect("kept");
        assert_eq!(read.entry.description(), "third");

        // Round 29 of review (F1-R): the file damaged, or removed, while the connections were
        // closed: opened again, it heals (a fresh index), as an open does.
        for damage in [&b"not a database, not at all"[..], b""] {
            assert!(index.reader.close_for_test() && index.writer.as_ref().expect("w").close_for_test());
            let _ = other.reader.close_for_test();
            let _ = other.writer.as_ref().expect("w").close_for_test();
            for suffix in ["", "-wal", "-shm"] {
                let file = dir.path().join(format!("index.sqlite3{suffix}"));
                let _ = std::fs::remove_file(&file);
                if suffix.is_empty() && !damage.is_empty() {
                    std::fs::write(&file, damage).expect("damage");
                }
            }
            assert!(index.entry(&origin, &uri, "", 7).expect("healed").is_none(), "a fresh index");
            index.put_entries(&origin, "", &[skill("a", 1, "fourth")], hints, 8).expect("writes");
        }

        // Round 30 of review (C): the index replaced by a link to a database outside: not
        // followed on the way back in.
        let outside = Index::open(&dir.path().join("outside.sqlite3"), SealKey::from_bytes([7; 32])).expect("open");
        assert!(index.reader.close_for_test() && index.writer.as_ref().expect("w").close_for_test());
        let _ = other.reader.close_for_test();
        let _ = other.writer.as_ref().expect("w").close_for_test();
        std::fs::remove_file(&path).expect("rm");
        crate::platform::symlink(&dir.path().join("outside.sqlite3"), &path).expect("link");
        let refused = index.entry(&origin, &uri, "", 9).expect_err("a link is not opened again");
        assert!(std::error::Error::source(&refused).is_some_and(|c| c.to_string().contains("no longer a regular file")), "{refused}");
        assert!(index.entry_quick(&origin, &uri, "", 9).is_none());
        drop(outside);
    }

    /// An index in a scratch folder (its path beside it) holding one entry, `skill://a/SKILL.md`
    /// of origin `docs`, written at time 1.
    fn index_of_one_entry() -> (crate::scratch::Scratch, std::path::PathBuf, Index, Origin, SkillUri) {
        let dir = crate::scratch::scratch();
        let path = dir.path().join("index.sqlite3");
        let index = Index::open(&path, SealKey::from_bytes([7; 32])).expect("open");
        let origin = Origin::new("docs").expect("label");
        let uri = SkillUri::parse("skill://a/SKILL.md").expect("uri");
        let hints = CacheHints::new(60_000, Scope::Public);
        index.put_entries(&origin, "", &[skill("a", 1, "first")], hints, 1).expect("kept");
        (dir, path, index, origin, uri)
    }

    /// Round 30 of review (C): the open's scrub checks the index's log and shared memory too, but
    /// a connection a fork closed was opened again checking the database file only, so a `-wal`
    /// or `-shm` planted meanwhile as a link, or as a second name of a file elsewhere, was
    /// written through. Now neither is opened again, the file elsewhere stays as it was, and the
    /// index opens once the planted name is gone.
    #[test]
    fn an_index_whose_log_became_a_link_or_another_name_is_not_opened_again() {
        let (dir, _, index, origin, uri) = index_of_one_entry();
        let victim = dir.path().join("victim.txt");
        let precious = vec![b'x'; 40_000];
        for suffix in ["-wal", "-shm", "-journal"] {
            for hard in [false, true] {
                std::fs::write(&victim, &precious).expect("victim");
                assert!(index.reader.close_for_test() && index.writer.as_ref().expect("w").close_for_test());
                let planted = dir.path().join(format!("index.sqlite3{suffix}"));
                let _ = std::fs::remove_file(&planted);
                if hard {
                    std::fs::hard_link(&victim, &planted).expect("hard link");
                } else {
                    crate::platform::symlink(&victim, &planted).expect("link");
                }
                let refused = index.entry(&origin, &uri, "", 2).expect_err("not opened again");
                let cause = std::error::Error::source(&refused).map(ToString::to_string).unwrap_or_default();
                assert!(cause.contains(&format!("index.sqlite3{suffix}")), "{suffix} {hard}: {cause}");
                assert!(index.entry_quick(&origin, &uri, "", 2).is_none(), "{suffix} {hard}: quick");
                assert!(std::fs::read(&victim).expect("victim") == precious, "{suffix} {hard}: written");
                std::fs::remove_file(&planted).expect("the planted name removed");
                assert!(index.entry(&origin, &uri, "", 3).expect("opened again").is_some(), "{suffix} {hard}");
            }
        }
    }

    /// Round 30 of review (F): after a fork, a quick path opened its connection again through
    /// the healing open, whose busy timeout held a runtime worker while another process held
    /// the database's lock. It opens without waiting now: while the lock is held it answers
    /// "ask the index" at once, and once it is free the quick path opens the connection.
    #[test]
    fn a_quick_path_after_a_fork_waits_for_no_other_process_lock() {
        let (_dir, path, index, origin, uri) = index_of_one_entry();
        assert!(index.reader.close_for_test() && index.writer.as_ref().expect("w").close_for_test());
        let locker = rusqlite::Connection::open(&path).expect("another connection");
        locker
            .execute_batch("PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE; UPDATE purges SET generation = generation WHERE id = 0;")
            .expect("the lock held");
        assert!(index.entry_quick(&origin, &uri, "", 2).is_none(), "ask the index");
        assert!(!index.reader.is_open(), "the quick path gave up rather than wait");
        drop(locker);
        assert!(index.entry_quick(&origin, &uri, "", 2).is_none(), "nothing remembered yet");
        assert!(index.reader.is_open(), "opened once the lock was free");
        assert!(index.entry(&origin, &uri, "", 2).expect("read").is_some());
    }

    /// A host that lists at every turn: an unchanged entry listed again within the slack (a
    /// second, or half its time to live) writes nothing; its recorded fetch time stays the
    /// older one, which only ends its freshness early. Past the slack, or changed, it is
    /// written as before.
    #[test]
    fn an_unchanged_entry_listed_again_within_the_slack_writes_nothing() {
        let dir = crate::scratch::scratch();
        let index = Index::open(&dir.path().join("index.sqlite3"), SealKey::from_bytes([7; 32]))
            .expect("open");
        let origin = Origin::new("docs").expect("label");
        let uri = SkillUri::parse("skill://a/SKILL.md").expect("uri");
        let listing = [skill("a", 5, "first"), skill("b", 5, "second")];
        for (ttl, slack) in [(0, 1_000), (60_000, 1_000), (400, 200)] {
            let hints = CacheHints::new(ttl, Scope::Public);
            index.put_answered(&origin, "", &listing, hints, 100_000, true, index.purges().expect("count")).expect("kept").expect("no purge");
            let before = writes(&index);
            let outcomes = index
                .put_answered(&origin, "", &listing, hints, 100_000 + slack - 1, true, index.purges().expect("count")).expect("kept").expect("no purge");
            assert!(outcomes.iter().all(|o| !o.revoked && o.diff.is_none()));
            assert_eq!(writes(&index) - before, 0, "ttl {ttl}: nothing written within the slack");
            let stored = index.entry(&origin, &uri, "", 100_000 + slack).expect("read").expect("kept");
            assert_eq!(stored.fetched_at_ms, 100_000, "ttl {ttl}: the older time, never a later one");
            assert_eq!(stored.fresh, 100_000 + slack < 100_000 + ttl, "ttl {ttl}");

            index
                .put_answered(&origin, "", &listing, hints, 100_000 + slack, true, index.purges().expect("count")).expect("kept").expect("no purge");
            let stored = index.entry(&origin, &uri, "", 100_000 + slack).expect("read").expect("kept");
            assert_eq!(stored.fetched_at_ms, 100_000 + slack, "ttl {ttl}: past the slack, renewed");
            // Reset for the next round: an older time, so its first put writes (a renewal, not
            // an answer: an answer older than the row would leave it).
            index.put_entries(&origin, "", &listing, hints, 1).expect("kept");
        }
        // A caller that knows of a change announced meanwhile renews within the slack.
        let hints = CacheHints::new(0, Scope::Public);
        index.put_answered(&origin, "", &listing, hints, 150_000, true, index.purges().expect("count")).expect("kept").expect("no purge");
        index.put_entries(&origin, "", &listing, hints, 150_001).expect("kept");
        let stored = index.entry(&origin, &uri, "", 150_002).expect("read").expect("kept");
        assert_eq!(stored.fetched_at_ms, 150_001, "renewed");
        // Changed within the slack: written at once, and the change said.
        let hints = CacheHints::new(0, Scope::Public);
        index.put_answered(&origin, "", &listing, hints, 200_000, true, index.purges().expect("count")).expect("kept").expect("no purge");
        let changed = [skill("a", 5, "first, changed")];
        let outcomes = index.put_answered(&origin, "", &changed, hints, 200_001, true, index.purges().expect("count")).expect("kept").expect("no purge");
        assert!(outcomes[0].diff.is_some());
        let stored = index.entry(&origin, &uri, "", 200_002).expect("read").expect("kept");
        assert_eq!(stored.entry, changed[0]);
        // Other hints within the slack (another time to live): written too.
        let longer = CacheHints::new(30_000, Scope::Public);
        index.put_answered(&origin, "", &changed, longer, 200_003, true, index.purges().expect("count")).expect("kept").expect("no purge");
        let stored = index.entry(&origin, &uri, "", 200_004).expect("read").expect("kept");
        assert_eq!((stored.fetched_at_ms, stored.hints.ttl_ms()), (200_003, 30_000));
    }

    /// Round 24 of review: two caches ask at once, and the answer asked first is kept last. The
    /// row keeps the later answer; the earlier one is served to its caller, never as the row.
    #[test]
    fn an_answer_asked_before_the_rows_own_does_not_replace_it() {
        let dir = crate::scratch::scratch();
        let index = Index::open(&dir.path().join("index.sqlite3"), SealKey::from_bytes([7; 32]))
            .expect("open");
        let origin = Origin::new("docs").expect("label");
        let uri = SkillUri::parse("skill://a/SKILL.md").expect("uri");
        let hints = CacheHints::new(60_000, Scope::Public);
        let purges = index.purges_for(&origin).expect("count");
        let newer = [skill("a", 3, "asked second")];
        let older = [skill("a", 3, "asked first")];
        index
            .put_answered(&origin, "", &newer, hints, 2_000, false, purges)
            .expect("kept")
            .expect("no purge");
        index
            .put_answered(&origin, "", &older, hints, 1_000, false, purges)
            .expect("kept")
            .expect("no purge");
        let stored = index.entry(&origin, &uri, "", 2_500).expect("read").expect("kept");
        assert_eq!((stored.entry, stored.fetched_at_ms), (newer[0].clone(), 2_000));
    }

    /// Round 25 of review: the same with a scope flip between the two answers. The older answer
    /// would have deleted the newer row of the other scope (R-C6) and been served as fresh; the
    /// newer row stays, whichever scope each answer has, and another principal's private row
    /// newer than an older public answer stays too.
    #[test]
    fn an_older_answer_of_the_other_scope_does_not_replace_the_newer_row() {
        let origin = Origin::new("docs").expect("label");
        let uri = SkillUri::parse("skill://a/SKILL.md").expect("uri");
        let newer = [skill("a", 3, "asked second")];
        let older = [skill("a", 3, "asked first")];
        for (new_scope, old_scope, reader) in [
            (Scope::Public, Scope::Private, "alice"),
            (Scope::Private, Scope::Public, "alice"),
            (Scope::Private, Scope::Public, "bob-reads-public"),
        ] {
            let dir = crate::scratch::scratch();
            let index = Index::open(&dir.path().join("index.sqlite3"), SealKey::from_bytes([7; 32]))
                .expect("open");
            let purges = index.purges_for(&origin).expect("count");
            index
                .put_answered(&origin, "alice", &newer, CacheHints::new(60_000, new_scope), 2_000, false, purges)
                .expect("kept")
                .expect("no purge");
            let who = if reader == "alice" { "alice" } else { "bob" };
            index
                .put_answered(&origin, who, &older, CacheHints::new(60_000, old_scope), 1_000, false, purges)
                .expect("kept")
                .expect("no purge");
            let stored = index.entry(&origin, &uri, "alice", 2_500).expect("read").expect("kept");
            assert_eq!(
                (stored.entry, stored.fetched_at_ms),
                (newer[0].clone(), 2_000),
                "{new_scope:?} then an older {old_scope:?} answer for {who}"
            );
        }
    }

    #[test]
    fn g1_a_listing_is_kept_in_one_go_and_an_unchanged_entry_rewrites_its_row_only() {
        let dir = crate::scratch::scratch();
        let index = Index::open(&dir.path().join("index.sqlite3"), SealKey::from_bytes([7; 32]))
            .expect("open");
        let origin = Origin::new("docs").expect("label");
        let hints = CacheHints::new(60_000, Scope::Public);
        let listing = [skill("a", 50, "first"), skill("b", 50, "second")];
        let before = writes(&index);
        let outcomes = index
            .put_entries(&origin, "", &listing, hints, 1_000)
            .expect("kept");
        assert_eq!(outcomes.len(), 2);
        let first = writes(&index) - before;
        assert!(first > 100, "both entries and their 102 file rows written: {first}");

        // Listed again, unchanged, later: one row each, their files as they were.
        let before = writes(&index);
        let outcomes = index
            .put_entries(&origin, "", &listing, hints, 5_000)
            .expect("kept");
        assert!(outcomes.iter().all(|o| !o.revoked && o.diff.is_none()));
        assert_eq!(writes(&index) - before, 2, "one row each, no file row rewritten");
        let uri = SkillUri::parse("skill://a/SKILL.md").expect("uri");
        let stored = index.entry(&origin, &uri, "", 5_500).expect("read").expect("kept");
        assert_eq!(stored.fetched_at_ms, 5_000, "its time renewed");
        assert_eq!(stored.entry, listing[0], "the same entry, read back whole and sealed");
        let referenced = |e: &SkillEntry| {
            e.manifest().expect("files").files().iter().all(|f| {
                index.is_referenced(&origin, &f.digest()).expect("query")
            })
        };
        assert!(referenced(&listing[0]), "every file row still there and sealed");

        // Changed: rewritten whole, and the change reported.
        let changed = [skill("a", 10, "first, changed")];
        let outcomes = index
            .put_entries(&origin, "", &changed, hints, 9_000)
            .expect("kept");
        assert!(outcomes[0].diff.is_some(), "what changed is said");
        assert!(referenced(&changed[0]));
        let f40 = listing[0]
            .manifest()
            .expect("files")
            .files()
            .iter()
            .find(|f| f.uri().as_str().ends_with("/f40.md"))
            .expect("f40")
            .digest();
        assert!(!index.is_referenced(&origin, &f40).expect("query"), "the old file rows are gone");
    }

    #[test]
    fn g1_a_blobs_file_rows_are_found_by_the_digest_index_never_by_a_scan_of_the_origin() {
        for (sql, args) in [
            (REFERENCES_OF_DIGEST, 2),
            (FRESH_REFERENCE_OF_DIGEST, 3),
            (ENTRIES_OF_DIGEST, 2),
        ] {
            let plan = plan(sql, args);
            assert!(
                plan.contains("INDEX files_by_digest (origin_id=? AND digest=?)"),
                "{sql}\n{plan}"
            );
            assert!(
                plan.lines()
                    .all(|l| !l.starts_with("SCAN ") || l == "SCAN CONSTANT ROW"),
                "a table is scanned: {sql}\n{plan}"
            );
        }
    }
}
