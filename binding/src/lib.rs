//! The one binding layer (issue 39, B5): what the Python package (`python/`) and the Node
//! package (`node/`) would otherwise each write for themselves, and let drift apart.
//!
//! - [`options`]: the builder options a binding takes as plain values (names, numbers, seconds),
//!   read once, with the library's own defaults and its own names for every choice
//!   ([`FromStr`](std::str::FromStr) on [`skillcache::Isolation`], …). Each binding spells an
//!   option its own way (`request_timeout`, `requestTimeout`); [`options::Spelling`] says how,
//!   so a refusal names the option as the host wrote it.
//! - [`report`]: every [`skillcache::Error`] as one [`report::Report`]: the class a binding
//!   raises, the kind, the fields, and a message that is display-safe and carries the cause
//!   chain; plus the enumerable lists of every kind and every decline reason, which each
//!   binding's tests check it maps.
//! - [`connect`]: the stdio and Streamable HTTP sources `connect_stdio` and `connect_http`
//!   bind, with the message bound of the limits in force.
//! - [`bounds`]: how much of a host's list, table or grant a binding copies before refusing it,
//!   charged per item and character as the input is walked.
//! - [`outcome`]: how a request sent through the host's own session (Python's
//!   `connect_session`, Node's `connectClient`) ended, as the error or answer the cache takes.
//!
//! A binding converts its language's values into these and the results back, and bridges the
//! async runtimes; it holds no rule of its own. This crate is a workspace member that is not
//! published: it uses the library's public API only, so the library's sealed surface is not
//! widened for the bindings' sake.

pub mod bounds;
pub mod connect;
pub mod options;
pub mod outcome;
pub mod report;
