//! Admission: every check a load makes before any request, in one place and at most one blocking
//! hop — the limits and the origin's quota from the entry alone (R-W7, R-Q4), the dynamic policy (R-V7), the lock in force
//! (R-L1), the approval gate (R-P1, R-A2, E7) and whether the shared tier may serve the skill
//! (F1). A declined load sends nothing.

use serde_json::Value;

use super::policy::{ApprovalPolicy, DynamicPolicy};
use super::state::State;
use crate::entry::SkillEntry;
use crate::error::{Declined, Error, Limit};
use crate::index::{Approval, StoredEntry};
use crate::origin::Origin;
use crate::tier::TierHandle;

/// What an admitted load may use.
#[derive(Debug, Default)]
pub(super) struct Admitted {
    /// What the approval that admitted the load granted (R-A5); `None` without one.
    pub(super) granted: Option<Value>,
    /// The shared tier, for a public entry only.
    pub(super) tier: Option<TierHandle>,
}

impl State {
    /// The checks `load` makes before any request.
    pub(super) async fn admit(
        &self,
        origin: &Origin,
        entry: &SkillEntry,
        principal: &str,
    ) -> Result<Admitted, Error> {
        self.check_size(entry).map_err(|e| e.sent_by(origin))?;
        self.check_quota(origin, entry)?;
        let settings = self.settings();
        if entry.manifest().is_none() && settings.dynamic == DynamicPolicy::Decline {
            return Err(declined(origin, entry, Declined::Dynamic));
        }
        if let Some(lock) = &settings.lock {
            lock.check(origin, entry)?;
        }
        let approval = settings.approval == ApprovalPolicy::Required;
        // Offline (R-L2) only this host's cache is used: the tier is a network service like the
        // server, so an offline load sends it nothing (no get, no claim, no put).
        let tier = self.tier().filter(|_| !settings.offline.on).cloned();
        if approval && entry.binding().is_none() {
            // R-A3: a dynamic skill has no binding, so no approval can hold for it.
            return Err(declined(origin, entry, Declined::NotApproved));
        }
        if !approval && tier.is_none() {
            return Ok(Admitted::default());
        }
        // A warm approval with the tier off is answered from the index's memo (R-T1); otherwise
        // one hop for both questions the index answers.
        let want_tier = tier.is_some();
        let quick = (approval && !want_tier)
            .then(|| self.core().approval_quick(origin, entry.uri(), principal))
            .flatten();
        let (approved, stored) = if let Some(a) = quick {
            (Some(a), None)
        } else {
            self.ask_index(origin, entry, principal, approval, want_tier)
                .await?
        };
        let granted = if approval {
            self.judge(origin, entry, principal, approved)?
        } else {
            None
        };
        let tier = tier.and_then(|t| TierHandle::for_entry(&t, stored.as_ref(), entry));
        Ok(Admitted { granted, tier })
    }

    /// The approval (when `approval`) and the stored entry (when `want_tier`), in one hop.
    async fn ask_index(
        &self,
        origin: &Origin,
        entry: &SkillEntry,
        principal: &str,
        approval: bool,
        want_tier: bool,
    ) -> Result<(Option<Approval>, Option<StoredEntry>), Error> {
        let (o, u, p) = (origin.clone(), entry.uri().clone(), principal.to_owned());
        self.blocking(move |c| {
                let approved = if approval { c.approval(&o, &u, &p)? } else { None };
                // Fail closed: an entry whose scope cannot be read is treated as private.
                let stored = want_tier.then(|| c.entry(&o, &u, &p)).and_then(|r| {
                    r.inspect_err(|e| tracing::debug!(origin = o.as_str(), uri = u.as_str(), error = %e, "scope unknown: the shared tier is not used"))
                        .ok()
                        .flatten()
                });
                Ok((approved, stored))
            })
            .await
    }

    /// R-W7: a skill over the limits is declined from its entry alone.
    fn check_size(&self, entry: &SkillEntry) -> Result<(), Error> {
        let Some(m) = entry.manifest() else {
            return Ok(());
        };
        let limits = self.settings().validation.current_limits();
        let over = |limit, declared, max| {
            Err(Error::Entry(crate::error::EntryError::LimitExceeded {
                origin: None,
                skill: entry.uri().clone(),
                limit,
                declared,
                max,
            }))
        };
        let files = m.files().len() as u64;
        if files > limits.max_files() {
            return over(Limit::Files, files, limits.max_files());
        }
        if m.total_bytes() > limits.max_total_bytes() {
            return over(Limit::TotalBytes, m.total_bytes(), limits.max_total_bytes());
        }
        Ok(())
    }

    /// R-Q4: a skill the origin's quota would charge more than the quota for, stored alone
    /// (its files in whole blocks, their names, rows and folders: K2), is declined from its
    /// entry: it could never be stored whole without going over.
    fn check_quota(&self, origin: &Origin, entry: &SkillEntry) -> Result<(), Error> {
        let (Some(quota), Some(m)) = (self.core().origin_quota(), entry.manifest()) else {
            return Ok(());
        };
        let size = self
            .core()
            .quota_charge(m.files().iter().map(|f| (f.digest(), f.size())));
        if size > quota {
            return Err(declined(origin, entry, Declined::OverQuota { quota, size }));
        }
        Ok(())
    }

    /// The approval gate (R-P1): `Ok` with the approval's grant (R-A5) only if `principal`
    /// approved `entry` exactly as it is now. The approval binds to this skill's own URI, file
    /// set and frontmatter: a nested skill's URI has no row unless it was approved itself, so
    /// its parent's approval and grant never reach it.
    fn judge(
        &self,
        origin: &Origin,
        entry: &SkillEntry,
        principal: &str,
        approved: Option<Approval>,
    ) -> Result<Option<Value>, Error> {
        let no = |reason| Err(declined(origin, entry, reason));
        match approved {
            // The same file set and the same frontmatter as approved (E7): the grant is of the
            // tools this entry's `allowed-tools` asks for, which the frontmatter check (R-V6)
            // then ties to the verified `SKILL.md` before the window opens.
            Some(a) if a.holds_for(entry) => Ok(a.granted_tools),
            // Approved once, as another file set or another frontmatter (a row another
            // principal's refresh did not touch, or an entry the index could not keep): say what
            // changed. A row whose entry this version cannot read has nothing true to say, so it
            // is "not approved".
            Some(a) => no(a
                .entry
                .map_or(Declined::NotApproved, |old| Declined::Revoked {
                    changes: Box::new(old.diff(entry)),
                })),
            None => {
                let revoked = entry
                    .binding()
                    .and_then(|b| self.marks().revocation(origin, entry, principal, b));
                match revoked {
                    Some(diff) => no(Declined::Revoked {
                        changes: Box::new(diff),
                    }),
                    None => no(Declined::NotApproved),
                }
            }
        }
    }
}

fn declined(origin: &Origin, entry: &SkillEntry, reason: Declined) -> Error {
    Error::Declined {
        origin: origin.clone(),
        skill: entry.uri().clone(),
        reason,
    }
}
