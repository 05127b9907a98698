"""skillcache for Python hosts: verified, cached, approval-bound loading of skills served over MCP
(the Skills extension `io.modelcontextprotocol/skills`, SEP-2640).

A thin layer over the Rust library: every check (size, SHA-256, frontmatter, approval, lock,
limits, deadlines) is the Rust code's, and every error is a `skillcache.Error`.

    import skillcache

    cache = skillcache.SkillCache(root="/tmp/skills-cache")
    cache.connect_stdio("docs", ["docs-server", "--stdio"])
    info = await cache.entry("docs", "skill://release-notes/SKILL.md")
    await cache.approve("docs", info.entry)
    skill = await cache.load("docs", info.entry)      # DeclinedError if not approved
    print(skill.skill_md.text, skill.skill_md.digest)
    notes = await skill.read("templates/notes.md")    # only files the entry lists

Every asynchronous method is a coroutine function (`async def`): a call does nothing until it
is awaited, so it can be made before an event loop runs (`asyncio.run(cache.entry(...))`).
`pip install` also gives the `skillcache` command, the same command line as the Rust binary.

See python/README.md for the whole API.
"""

from ._errors import (
    ConfigError,
    DeclinedError,
    EntryError,
    Error,
    IndexError,
    L2ConfigError,
    LimitExceededError,
    MessageTooLargeError,
    NotConnectedError,
    OfflineError,
    ServerError,
    SourceError,
    StoreError,
    TimeoutError,
    TransportError,
    UriError,
    VerifyError,
)
from ._cache import LoadedSkill, SkillCache
from ._reports import (
    BlobRef,
    CachedEntry,
    DynamicSkill,
    FileDrift,
    GcReport,
    Inventory,
    LockCheck,
    LockDrift,
    Pin,
    VerifyReport,
)
from ._skillcache import (
    Catalog,
    CatalogSkill,
    EntryDiff,
    EntryInfo,
    LockedSkill,
    LockFile,
    ManifestFile,
    SkillEntry,
    SkillFile,
    __version__,
)

# Before the interpreter finalizes, let the runtime's threads hand back their last results: a
# thread that takes the GIL during finalization aborts the process (see `_quiesce`).
import atexit as _atexit

from ._skillcache import _quiesce

_atexit.register(_quiesce)

# A fork (gunicorn, `multiprocessing`'s fork start method) waits for the library's SQLite work in
# other threads to end and starts none until the child exists: a lock a parent thread held at
# that instant would stay held in the child, and the child's own `SkillCache` would hang.
import os as _os

from ._skillcache import _after_fork_in_child, _after_fork_in_parent, _before_fork

if hasattr(_os, "register_at_fork"):
    _os.register_at_fork(
        before=_before_fork,
        after_in_parent=_after_fork_in_parent,
        after_in_child=_after_fork_in_child,
    )

# `IndexError` and `TimeoutError` keep the Rust names and would shadow the builtins under a star
# import, so they are left out of it: use `skillcache.IndexError`, `skillcache.TimeoutError`
# (which is also a builtin `TimeoutError`).
__all__ = [
    "BlobRef",
    "CachedEntry",
    "Catalog",
    "CatalogSkill",
    "ConfigError",
    "DeclinedError",
    "DynamicSkill",
    "EntryDiff",
    "EntryError",
    "EntryInfo",
    "Error",
    "GcReport",
    "Inventory",
    "L2ConfigError",
    "LimitExceededError",
    "LoadedSkill",
    "LockFile",
    "LockedSkill",
    "LockCheck",
    "LockDrift",
    "FileDrift",
    "ManifestFile",
    "Pin",
    "MessageTooLargeError",
    "NotConnectedError",
    "OfflineError",
    "ServerError",
    "SkillCache",
    "SkillEntry",
    "SkillFile",
    "SourceError",
    "StoreError",
    "TransportError",
    "UriError",
    "VerifyError",
    "VerifyReport",
    "__version__",
]
