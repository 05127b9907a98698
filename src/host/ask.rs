//! One request to a server under the host's deadlines (R-B1, R-B4).

use std::time::Duration;

use serde_json::Value;

use super::policy::Deadlines;
use super::state::State;
use crate::entry::check_result_type;
use crate::error::Error;
use crate::origin::Origin;
use crate::source::{SkillSource, SourceFuture};
use crate::stats::Counter;

impl State {
    /// One request to `origin`'s server, under the deadlines (R-B1): connecting (if the source is
    /// not connected yet, R-B4) under the connect deadline, then the request under its own.
    /// A result that is not `complete` is refused. A request that misses its deadline is
    /// dropped whole, so nothing of it is kept.
    pub(super) async fn ask(
        &self,
        origin: &Origin,
        source: &dyn SkillSource,
        method: &'static str,
        uri: Option<&str>,
        request: SourceFuture<'_>,
    ) -> Result<Value, Error> {
        let timeout = |method: &str, after: Duration| {
            self.counters().bump(Counter::Timeouts);
            tracing::info!(
                origin = origin.as_str(),
                method,
                uri,
                ?after,
                "the server did not answer in time"
            );
            Error::Source(crate::error::SourceError::Timeout {
                origin: origin.clone(),
                method: method.to_owned(),
                after,
            })
        };
        let Deadlines {
            connect,
            request: per_request,
        } = self.settings().deadlines;
        // A source's error names no origin (it cannot know the host's label): every error that
        // leaves here does (issue 19).
        let named = |e: Error| match e {
            Error::Source(e) => Error::Source(e.sent_to(origin, uri)),
            other => other.sent_by(origin),
        };
        tokio::time::timeout(connect, source.ready())
            .await
            .map_err(|_| timeout("initialize", connect))?
            .map_err(named)
            .inspect_err(|e| {
                tracing::info!(origin = origin.as_str(), error = %e, "connecting to the server failed");
            })?;
        tracing::debug!(origin = origin.as_str(), method, uri, "request sent");
        let result = tokio::time::timeout(per_request, request)
            .await
            .map_err(|_| timeout(method, per_request))?
            .map_err(named)
            .inspect_err(|e| {
                tracing::info!(origin = origin.as_str(), method, uri, error = %e, "request failed");
            })?;
        check_result_type(method, &result).map_err(|e| Error::from(e).sent_by(origin))?;
        tracing::debug!(origin = origin.as_str(), method, uri, "answer received");
        Ok(result)
    }
}
