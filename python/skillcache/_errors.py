"""The exception classes: one per kind of `skillcache::Error`, all under `skillcache.Error`.

The extension module raises them (`src/errors.rs` maps every Rust variant, exhaustively) and
sets the Rust error's fields as attributes. Every attribute exists on every class (`None` where
a kind has no such field), so a handler can read `e.origin` or `e.uri` without `getattr`.
"""

import builtins


class Error(Exception):
    """Everything that can go wrong in skillcache (`skillcache::Error`).

    `str(e)` is the library's message with its cause chain (`…: the connection to the server
    failed: cannot connect to …: connection refused`), display-safe: no control character or
    escape sequence, whatever a server sent. `kind` names the Rust variant in snake case (for
    example `"limit_exceeded"`, `"timeout"`, `"lock_file"`; each subclass lists its kinds).
    `causes` holds the messages of the cause chain alone, outermost first.
    """

    kind: str | None = None
    origin: str | None = None
    uri: str | None = None
    causes: list[str] = []

    # Fields of the Rust variants, by name. Each subclass's docstring says which it sets.
    rule: str | None = None
    field: str | None = None
    skill: str | None = None
    text: str | None = None
    limit: str | None = None
    declared: int | None = None
    max: int | None = None
    method: str | None = None
    problem: str | None = None
    path: str | None = None
    why: str | None = None
    mismatch: str | None = None
    expected: object = None
    actual: object = None
    diffs: list[str] | None = None
    code: int | None = None
    server_message: str | None = None
    after: float | None = None
    digest: str | None = None
    root: str | None = None
    op: str | None = None
    line: int | None = None
    column: int | None = None
    errno: int | None = None
    waited: float | None = None
    holder: str | None = None
    what: str | None = None
    found: int | None = None
    supported: int | None = None
    reason: str | None = None
    changes: object = None
    missing: str | None = None
    age_ms: int | None = None
    location: str | None = None
    quota: int | None = None
    size: int | None = None


class UriError(Error):
    """A URI is not acceptable as a skill or file URI, or leaves the skill's root: `uri`, `rule`."""


class EntryError(Error):
    """Untrusted input (a server's answer, a folder) broke a rule. By `kind`: `"digest"` (`text`, `rule`), `"invalid"`
    (`origin`, `skill`, `field`, `rule`), `"limit_exceeded"` (see `LimitExceededError`), `"response"`
    (`origin`, `method`, `rule`), `"frontmatter"` (`problem`), `"folder"` (`path`, `why`). `origin`
    names the server that sent the answer (`None` for an entry that came from no server)."""


class LimitExceededError(EntryError):
    """A skill is larger than the limits, declined from its entry alone: `origin`, `skill` (and
    `uri`), `limit` (`"files"` or `"total_bytes"`), `declared`, `max`."""


class VerifyError(Error):
    """Bytes did not match their entry and were not used: `origin`, `uri`,
    `mismatch` (`"size"`, `"digest"`, `"frontmatter"`, `"frontmatter_unreadable"`,
    `"unlisted"`, `"not_a_regular_file"`), `expected` and `actual` (ints for a size,
    `"sha256:…"` strings for a digest), `diffs` (the differing frontmatter keys), `problem`."""


class SourceError(Error):
    """A request to a server failed. See the subclasses; `origin` names the server (as the host
    bound it) and `method` the request."""


class ServerError(SourceError):
    """The server answered with a JSON-RPC error: `origin`, `method`, `uri` (the skill's or
    file's URI the request named; `None` for `skills/list`), `code`, `server_message` (the
    server's own text: display-safe, at most 1,024 characters, then `…`)."""


class TransportError(SourceError):
    """The connection to the server failed: `origin`, `method`; the cause is in `causes`."""


class TimeoutError(SourceError, builtins.TimeoutError):  # noqa: A001 - the Rust name, on purpose
    """No answer within the deadline: `origin`, `method`, `after` (seconds). Also a
    builtin `TimeoutError`, so `except TimeoutError` catches it either way."""


class MessageTooLargeError(SourceError):
    """An answer larger than the message bound: `origin`, `method`, `max` (bytes)."""


class NotConnectedError(SourceError):
    """No source is connected for `origin`."""


class StoreError(Error):
    """The blob store failed or refused. By `kind`: `"blob_mismatch"` (`origin`, `digest`,
    `mismatch`, `expected`, `actual`), `"root_refused"` (`root`, `why`, `path`), `"io"` (`op`,
    `path`, `errno`), `"lock_timeout"` (`path`, `waited`, `holder`)."""


class IndexError(Error):  # noqa: A001 - the Rust name, on purpose
    """The index failed or refused. By `kind`: `"database"` (`what`), `"too_new"` (`found`,
    `supported`), `"read_only"` (`path`, `what`), `"io"` (`op`, `path`, `errno`: moving a damaged database aside,
    the host key file), `"host_key"` (`path`, `problem`). Not the
    builtin `IndexError`: import it qualified (`skillcache.IndexError`)."""


class ConfigError(Error, ValueError):
    """A configuration value, MCP config file or lock file was refused; also a `ValueError`. By `kind`: `"invalid"`
    (`what`), `"file"` and `"lock_file"` (`path`, `line`, `column`, `field`, `problem`; `line` and
    `column` are `None` when the refusal is of the whole file)."""


class L2ConfigError(ConfigError):
    """The shared tier cannot be set up as given: `location`, `problem`."""


class DeclinedError(Error):
    """The host's policy declined the skill; nothing was requested: `origin`,
    `skill` (and `uri`), `reason` (`"dynamic"`, `"not_approved"`, `"revoked"`, `"not_locked"`,
    `"drift"`, `"over_quota"`), `changes` (an `EntryDiff` for `"revoked"` and `"drift"`),
    `quota` and `size` (bytes, for `"over_quota"`: the origin's quota and the skill's declared
    size)."""


class OfflineError(Error):
    """Offline mode lacks what was asked for; no server was contacted: `origin`, `uri`
    (`None` for a whole listing), `missing` (`"entry"`, `"stale"`, `"file"`, `"server"`),
    `age_ms` (for `"stale"`), `method` (for `"server"`)."""


# Tracebacks and reprs name the module a host imports these from (`skillcache.DeclinedError`),
# not this private one; pickling finds them there too.
for _cls in [v for v in list(globals().values()) if isinstance(v, type) and issubclass(v, Error)]:
    _cls.__module__ = "skillcache"
del _cls
