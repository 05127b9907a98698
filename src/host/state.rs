//! The state one cache shares between every `SkillCache` handle and every `LoadedSkill`: the sync
//! core, the bound sources, the host's settings, what this process remembers, and the counters.
//! Fields are private: the other files of the host layer read them through the methods here.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use super::behind::Keeper;
use super::flight::Flights;
use super::marks::Marks;
use super::policy::{ApprovalPolicy, Deadlines, DynamicPolicy, Offline};
use crate::core::Cache;
use crate::entry::Validation;
use crate::error::Error;
use crate::lockfile::LockFile;
use crate::origin::Origin;
use crate::source::SkillSource;
use crate::stats::Counters;
use crate::tier::BlobTier;

/// What the host chose when it built the cache; fixed from then on.
#[derive(Debug, Clone, Default)]
pub(super) struct Settings {
    pub(super) dynamic: DynamicPolicy,
    pub(super) validation: Validation,
    pub(super) deadlines: Deadlines,
    pub(super) approval: ApprovalPolicy,
    pub(super) offline: Offline,
    /// The lock file in force, if any.
    pub(super) lock: Option<Arc<LockFile>>,
}

pub(crate) struct State {
    core: Arc<Cache>,
    sources: RwLock<HashMap<Origin, Arc<dyn SkillSource>>>,
    settings: Settings,
    marks: Marks,
    flights: Flights,
    /// What [`SkillCache::stats`](crate::SkillCache::stats) reports (R-P4); the keeper counts
    /// the files it could not keep.
    counters: Arc<Counters>,
    /// Publishes what loads hand over, behind them (write-behind, `behind.rs`). Declared after
    /// everything a load may still be using; its drop waits for the queue.
    keeper: Keeper,
    /// The shared tier, if the host configured one; reached only through a
    /// [`TierHandle`](crate::tier::TierHandle), which admission gives public entries alone.
    tier: Option<Arc<dyn BlobTier>>,
}

impl State {
    pub(super) fn new(core: Cache, settings: Settings, tier: Option<Arc<dyn BlobTier>>) -> State {
        let (core, counters) = (Arc::new(core), Arc::new(Counters::default()));
        State {
            keeper: Keeper::new(Arc::clone(&core), Arc::clone(&counters)),
            core,
            sources: RwLock::default(),
            settings,
            marks: Marks::default(),
            flights: Flights::default(),
            counters,
            tier,
        }
    }

    pub(super) fn core(&self) -> &Arc<Cache> {
        &self.core
    }

    pub(super) fn settings(&self) -> &Settings {
        &self.settings
    }

    pub(super) fn marks(&self) -> &Marks {
        &self.marks
    }

    pub(super) fn flights(&self) -> &Flights {
        &self.flights
    }

    pub(crate) fn counters(&self) -> &Counters {
        &self.counters
    }

    pub(super) fn keeper(&self) -> &Keeper {
        &self.keeper
    }

    pub(super) fn tier(&self) -> Option<&Arc<dyn BlobTier>> {
        self.tier.as_ref()
    }

    /// Runs a sync core call on the blocking pool: one hop per operation.
    pub(super) async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Cache) -> Result<T, Error> + Send + 'static,
    ) -> Result<T, Error> {
        let core = Arc::clone(&self.core);
        match tokio::task::spawn_blocking(move || f(&core)).await {
            Ok(r) => r,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(e) => Err(Error::Source(crate::error::SourceError::Transport {
                origin: None,
                method: "blocking task".into(),
                source: Box::new(e),
            })),
        }
    }

    /// [`State::blocking`] once everything handed to the keeper before it is published: what
    /// looks at the store (maintenance, counts) sees every load that returned before it, and a
    /// purge is never undone by a publish queued before it.
    pub(super) async fn settled<T: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce(&Cache) -> Result<T, Error> + Send + 'static,
    ) -> Result<T, Error> {
        self.flush().await;
        self.blocking(f).await
    }

    /// Waits, off the async threads, for the keeper to publish what was handed to it.
    pub(super) async fn flush(self: &Arc<Self>) {
        let state = Arc::clone(self);
        let _ = tokio::task::spawn_blocking(move || state.keeper.flush()).await;
    }

    /// Binds `origin` to `source`, replacing an earlier binding.
    pub(super) fn bind(&self, origin: Origin, source: Arc<dyn SkillSource>) {
        self.sources
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(origin, source);
    }

    /// Unbinds `origin`.
    pub(super) fn unbind(&self, origin: &Origin) {
        self.sources
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(origin);
    }

    /// The source bound to `origin`, if any.
    pub(super) fn bound(&self, origin: &Origin) -> Option<Arc<dyn SkillSource>> {
        self.sources
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(origin)
            .cloned()
    }

    /// Every bound origin, in label order.
    pub(super) fn bound_origins(&self) -> Vec<Origin> {
        let mut origins: Vec<Origin> = self
            .sources
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .keys()
            .cloned()
            .collect();
        origins.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        origins
    }
}
