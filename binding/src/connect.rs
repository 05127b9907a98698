//! The sources a binding's `connect_stdio` and `connect_http` bind, built as a Rust host builds
//! them (`McpSource::stdio` over a command, `ServerConfig::Http`), with the message bound of the
//! limits in force: each package converts its own values (Python's `dict`, JS's options object)
//! and calls these.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;

use skillcache::error::ConfigError;
use skillcache::source::{McpSource, SkillSource};
use skillcache::{Error, Limits, ServerConfig};

/// A server spawned from `argv` over stdio, nothing started until a request needs it: `env`
/// adds to the inherited environment, `cwd` is its working folder, `stderr` where its stderr
/// goes (`None`: this process's own, through skillcache, which then names the server's last
/// stderr line when it exits before answering).
///
/// # Errors
/// [`ConfigError::Invalid`] for an empty `argv`.
pub fn stdio(
    argv: impl IntoIterator<Item = String>,
    env: impl IntoIterator<Item = (String, String)>,
    cwd: Option<PathBuf>,
    stderr: Option<Stdio>,
    limits: Option<&Limits>,
) -> Result<Arc<dyn SkillSource>, Error> {
    let mut argv = argv.into_iter();
    let Some(program) = argv.next() else {
        return Err(Error::Config(ConfigError::Invalid {
            what: "argv must name a program".to_owned(),
        }));
    };
    let mut command = tokio::process::Command::new(program);
    command.args(argv).envs(env);
    if let Some(dir) = cwd {
        command.current_dir(dir);
    }
    command.stderr(stderr.unwrap_or_else(Stdio::piped));
    Ok(bounded(McpSource::stdio(command), limits))
}

/// A Streamable HTTP endpoint, with `headers` on every request.
///
/// # Errors
/// [`ConfigError`] for a URL or header the source refuses.
pub fn http(
    url: String,
    headers: impl IntoIterator<Item = (String, String)>,
    limits: Option<&Limits>,
) -> Result<Arc<dyn SkillSource>, Error> {
    let config = ServerConfig::Http {
        url,
        headers: headers.into_iter().collect(),
    };
    Ok(bounded(config.source()?, limits))
}

/// `source` with the message bound of `limits` (the baseline's without them, R-B2).
fn bounded(source: McpSource, limits: Option<&Limits>) -> Arc<dyn SkillSource> {
    Arc::new(match limits {
        Some(limits) => source.limits(limits),
        None => source,
    })
}
