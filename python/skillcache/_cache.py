"""`SkillCache` and `LoadedSkill`: the host API for asyncio, every asynchronous call a coroutine
(`async def`) over the native class of the same name (`src/cache.rs`), which does the work.

A coroutine does nothing until it is awaited, so calls can be made before an event loop runs:
`asyncio.run(cache.entry(...))`, or a list of calls later given to `asyncio.gather`. Awaited, it
starts the native call. `load`, `load_all`, `read` and `read_all` are answered on the calling
thread when the memory tier or a small cached copy can answer them — with the GIL released, and
at most 64 KiB read and hashed a call — so a hit never waits for another thread. Everything else,
and whatever those four must wait for (a miss, a larger file, the index, the server), runs on
skillcache's own threads and is awaited as an asyncio future.
"""

from __future__ import annotations

import asyncio
import operator
import os
import pathlib
from collections.abc import Iterable, Mapping, Sequence
from typing import IO, Any, Literal

from . import _skillcache as _native
from ._errors import Error
from ._reports import CachedEntry, GcReport, Inventory, LockCheck, VerifyReport
from ._skillcache import (
    Catalog,
    EntryInfo,
    LockFile,
    ManifestFile,
    Pending as _Pending,
    SkillEntry,
    SkillFile,
)

JSON = Any


def _index(n: Any) -> int | None:
    """`n` as an `int` by `operator.index` (a float or a str is a `TypeError`), or `None`."""
    return None if n is None else operator.index(n)

StrPath = str | os.PathLike[str]

# A hit answered on the calling thread is a result, not an awaitable that suspends, so a loop of
# awaited hits (`while True: await skill.read(f)`) would never give the event loop a turn: its
# timers, I/O and signal handlers would wait for the loop to end. Every `_HITS_PER_TURN`-th hit
# (counted across the process) yields once (`asyncio.sleep(0)`), so such a loop holds the event
# loop for at most that many hits: about 0.1 ms of memory-tier hits, or a few ms of hits that
# re-hash up to 64 KiB each. The turn costs a few microseconds, under 0.1 us a hit.
# A refusal answered on the calling thread (a reference the window does not list, a URI out of
# its root) raises inside the call just as fast, so it is counted the same way: a host loop that
# retries refused, model-chosen references would otherwise never yield either.
# (Inline in each hit path below: a call of a helper coroutine per hit would cost more than the
# count; the refusal path, rarer, takes the helper.)
_HITS_PER_TURN = 32
_hits = 0


async def _count_refusal() -> None:
    """Counts a call refused on the calling thread as a hit, yielding on every
    `_HITS_PER_TURN`-th."""
    global _hits
    _hits += 1
    if _hits >= _HITS_PER_TURN:
        _hits = 0
        await asyncio.sleep(0)


class LoadedSkill:
    """A loaded skill: the acting window. Reads stay inside the files of the entry it was loaded
    from, and go to its origin's server only. Made by `SkillCache.load` and `load_all`."""

    __slots__ = ("_native",)

    def __init__(self, native: _native.LoadedSkill) -> None:
        self._native = native

    @property
    def origin(self) -> str:
        """The origin it was loaded from."""
        return self._native.origin

    @property
    def entry(self) -> SkillEntry:
        """The held entry."""
        return self._native.entry

    @property
    def skill_md(self) -> SkillFile:
        """The verified `SKILL.md` (unverified for a dynamic skill)."""
        return self._native.skill_md

    @property
    def granted_tools(self) -> JSON | None:
        """What the approval that admitted this load granted; `None` without one."""
        return self._native.granted_tools

    @property
    def files(self) -> list[ManifestFile]:
        """The files this window may read: the held entry's manifest."""
        return self._native.files

    async def read(self, reference: str) -> SkillFile:
        """Reads a file: `reference` is resolved against the skill root (a relative path, or an
        absolute URI inside the root) and must be listed in the held entry; otherwise a
        `UriError` or `VerifyError`, and nothing is sent. Every byte is verified on this access."""
        try:
            started = self._native.read(reference)
        except Exception:
            await _count_refusal()
            raise
        if type(started) is _Pending:
            return await started
        global _hits
        _hits += 1
        if _hits >= _HITS_PER_TURN:
            _hits = 0
            await asyncio.sleep(0)
        return started

    async def read_all(self) -> list[SkillFile]:
        """Every file of the held entry, in manifest order, each verified (one batch when
        cold)."""
        try:
            started = self._native.read_all()
        except Exception:
            await _count_refusal()
            raise
        if type(started) is _Pending:
            return await started
        global _hits
        _hits += 1
        if _hits >= _HITS_PER_TURN:
            _hits = 0
            await asyncio.sleep(0)
        return started

    def __repr__(self) -> str:
        return repr(self._native)


class SkillCache:
    """The verified skill cache: opens (or creates) the cache root and its index. Every argument
    has the Rust builder's default; timeouts are in seconds; `max_files` and `max_total_bytes`
    raise the limits a skill must stay within. Opening does not wait for the cache lock, and
    nothing is contacted until a call needs a server.

        cache = SkillCache(root="/tmp/skills-cache")
        cache.connect_stdio("docs", ["docs-server", "--stdio"])
        info = await cache.entry("docs", "skill://release-notes/SKILL.md")
        await cache.approve("docs", info.entry)
        skill = await cache.load("docs", info.entry)
    """

    __slots__ = ("_native",)

    def __init__(
        self,
        root: StrPath | None = None,
        *,
        key_file: StrPath | None = None,
        isolation: Literal["rehash", "guaranteed"] = "rehash",
        approval: Literal["required", "not_required"] = "required",
        dynamic: Literal["decline", "allow_unverified"] = "decline",
        memory_tier: int | None = None,
        origin_quota: int | None = None,
        offline: bool = False,
        allow_stale: bool = False,
        locked: LockFile | None = None,
        principal: str | None = None,
        request_timeout: float | None = None,
        connect_timeout: float | None = None,
        lock_timeout: float | None = None,
        max_files: int | None = None,
        max_total_bytes: int | None = None,
        strict: bool = False,
        discovery_paths: Sequence[StrPath] | None = None,
    ) -> None:
        self._native = _native.SkillCache(
            root,
            key_file=key_file,
            isolation=isolation,
            approval=approval,
            dynamic=dynamic,
            # An integer by `__index__`, as Python's own APIs take one (numpy's included).
            memory_tier=_index(memory_tier),
            origin_quota=_index(origin_quota),
            offline=offline,
            allow_stale=allow_stale,
            locked=locked,
            principal=principal,
            request_timeout=request_timeout,
            connect_timeout=connect_timeout,
            lock_timeout=lock_timeout,
            max_files=_index(max_files),
            max_total_bytes=_index(max_total_bytes),
            strict=strict,
            discovery_paths=discovery_paths,
        )

    @classmethod
    def _of(cls, native: _native.SkillCache) -> SkillCache:
        cache = cls.__new__(cls)
        cache._native = native
        return cache

    # --- synchronous: binding origins, settings, counters ------------------------------------

    @property
    def root(self) -> pathlib.Path:
        """The cache root."""
        return self._native.root

    @property
    def healed_index(self) -> pathlib.Path | None:
        """Where a damaged index was moved when the cache was opened, if it was."""
        return self._native.healed_index

    def for_principal(self, principal: str) -> SkillCache:
        """A handle on the same cache acting as `principal` (approvals are per principal); a
        principal with an invisible character is refused (`ConfigError`)."""
        return SkillCache._of(self._native.for_principal(principal))

    def connect_stdio(
        self,
        origin: str,
        argv: Sequence[str],
        env: Mapping[str, str] | None = None,
        cwd: StrPath | None = None,
        stderr: int | IO[Any] | None = None,
    ) -> None:
        """Binds `origin` to a server started from `argv`, spoken to over its stdin and stdout.
        Nothing starts until a request needs it. `env` adds to the inherited environment; `cwd`
        is its working folder. `stderr` is where the server's stderr goes: `None` (the default)
        inherits this process's; `subprocess.DEVNULL` discards it; a file descriptor or an
        object with `fileno()` (an open file, `sys.stderr`) receives it — a regular file at its
        end (it is opened anew for appending, so closing yours afterwards is fine)."""
        self._native.connect_stdio(origin, argv, env, cwd, stderr)

    def connect_http(self, origin: str, url: str, headers: Mapping[str, str] | None = None) -> None:
        """Binds `origin` to a Streamable HTTP endpoint, with `headers` on every request."""
        self._native.connect_http(origin, url, headers)

    def connect_session(self, origin: str, session: Any) -> None:
        """Binds `origin` to an MCP session the host already holds (an `mcp.ClientSession`, or
        anything with its `send_request`). Call it from the event loop that runs the session:
        every request is sent on that loop."""
        self._native.connect_session(origin, session)

    def notify(self, origin: str, uri: str | None = None) -> None:
        """Forwards a change notification the host's session received: `uri` for
        `notifications/resources/updated`, `None` for `list_changed`. Only for origins bound
        with `connect_session` (the others receive their notifications themselves)."""
        self._native.notify(origin, uri)

    def disconnect(self, origin: str) -> None:
        """Unbinds `origin`; its cached content stays."""
        self._native.disconnect(origin)

    def stats(self) -> dict[str, int]:
        """What this cache did since it was opened: each counter by name."""
        return self._native.stats()

    # --- asynchronous -------------------------------------------------------------------------

    async def list(self, origin: str) -> list[EntryInfo | Error]:
        """Every skill of `origin` (`skills/list`), validated and stored; no file is fetched.
        Each item is an `EntryInfo`, or the `skillcache.Error` (not raised) that refused that
        entry."""
        return await self._native.list(origin)

    async def entry(self, origin: str, uri: str) -> EntryInfo:
        """The entry for `uri`: from the index while fresh, else `skills/get`. No file."""
        return await self._native.entry(origin, uri)

    async def refresh(self, origin: str, uri: str) -> EntryInfo:
        """`skills/get` again, whatever the index holds."""
        return await self._native.refresh(origin, uri)

    async def approve(self, origin: str, entry: SkillEntry, grant_tools: JSON | None = None) -> None:
        """Approves `entry` as it is now; `grant_tools` is what the user granted of the tools it
        requests (`entry.requested_tools` grants all it asks for)."""
        return await self._native.approve(origin, entry, grant_tools)

    async def is_approved(self, origin: str, entry: SkillEntry) -> bool:
        """Whether this principal approved `entry` as it is now."""
        return await self._native.is_approved(origin, entry)

    async def load(self, origin: str, entry: SkillEntry) -> LoadedSkill:
        """Loads a skill: the limits, the dynamic policy, the lock and the approval are checked
        before any request (`DeclinedError`); then its `SKILL.md` is read, verified and checked
        against the entry's frontmatter."""
        try:
            started = self._native.load(origin, entry)
        except Exception:
            await _count_refusal()
            raise
        if type(started) is _Pending:
            return LoadedSkill(await started)
        global _hits
        _hits += 1
        if _hits >= _HITS_PER_TURN:
            _hits = 0
            await asyncio.sleep(0)
        return LoadedSkill(started)

    async def load_all(self, origin: str, entry: SkillEntry) -> tuple[LoadedSkill, list[SkillFile]]:
        """`load`, then every file, as one batch: `(LoadedSkill, [SkillFile])` in manifest
        order."""
        try:
            started = self._native.load_all(origin, entry)
        except Exception:
            await _count_refusal()
            raise
        if type(started) is _Pending:
            native, files = await started
            return LoadedSkill(native), files
        global _hits
        _hits += 1
        if _hits >= _HITS_PER_TURN:
            _hits = 0
            await asyncio.sleep(0)
        native, files = started
        return LoadedSkill(native), files

    async def check_lock(self, lock: LockFile) -> LockCheck:
        """Whether every origin `lock` pins still publishes exactly what it pins, as
        `skillcache lock --check` asks: one `skills/list` per origin, no file fetched. Every
        difference is a `LockDrift` in `drift` (a file added, removed or changed, with its pinned
        and listed digest and size; a skill added, removed, refused or now dynamic; an origin not
        connected or that could not be listed); nothing is raised for a server's failure, so the
        check answers for every origin. `is_clean` when there is none."""
        return LockCheck._of(await self._native.check_lock(lock))

    async def verify(self, origin: str | None = None) -> VerifyReport:
        """Re-hashes every cached blob (of `origin`, or all); a corrupt one is quarantined."""
        return VerifyReport._of(await self._native.verify(origin))

    async def gc(self, max_bytes: int | None = None) -> GcReport:
        """Removes unreferenced blobs and temporaries; with `max_bytes`, evicts least recently
        used content until the store fits."""
        return GcReport(**await self._native.gc(max_bytes))

    async def purge(self, origin: str) -> None:
        """Removes everything of `origin`: entries, approvals, blobs."""
        return await self._native.purge(origin)

    async def origins(self) -> list[str]:
        """Every origin the root holds anything of, sorted by label; bound or not."""
        return await self._native.origins()

    async def purge_absent(self, keep: Iterable[str]) -> list[str]:
        """Removes everything of every origin the root holds that `keep` does not name — the
        servers the host no longer configures — and returns the labels removed. `keep` is any
        iterable of labels (not a bare `str`), all checked before anything is removed."""
        return await self._native.purge_absent(keep)

    async def catalog(self, local_names: Sequence[str] = ()) -> Catalog:
        """Lists every bound origin, concurrently, into one `Catalog`: every skill under a
        handle unique across origins and stable across runs, every name collision reported —
        with `local_names`, the host's own filesystem skills, too, which no MCP skill shadows.
        An origin that cannot be listed is in `failures`, not raised."""
        return await self._native.catalog(local_names)

    async def flush(self) -> None:
        """Waits until every file that loads handed over before this call is in the store.
        A load returns its verified files at once and the cache stores them behind it; the
        maintenance calls (`verify`, `gc`, `purge`, `inventory`, ...) flush first by themselves,
        and so does the interpreter's exit. Call it before handing the root to another process."""
        await self._native.flush()

    async def __aenter__(self) -> "SkillCache":
        return self

    async def __aexit__(self, *exc: object) -> None:
        """Leaving `async with`, failed or not, waits for the store (`flush`): what the block
        loaded is on disk before whatever follows it (a temporary root removed, another process
        reading the root). The cache stays usable; an exception passes on."""
        await self.flush()

    async def inventory(self) -> Inventory:
        """Counts what the cache root holds."""
        return Inventory(**await self._native.inventory())

    async def cached_entries(self, origin: str | None = None) -> list[CachedEntry]:
        """Every entry the cache holds (of `origin`, or all), for every principal."""
        return [CachedEntry(**e) for e in await self._native.cached_entries(origin)]

    def __repr__(self) -> str:
        return repr(self._native)
