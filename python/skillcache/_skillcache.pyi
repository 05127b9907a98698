"""Types of the extension module `skillcache._skillcache`. The `skillcache` package
re-exports every class but the native halves of `SkillCache` and `LoadedSkill`, which its own
classes of those names wrap (`_cache.py`); its exception classes are in `_errors.py`."""

import os
import pathlib
from collections.abc import Awaitable, Generator, Iterable, Mapping, Sequence
from typing import IO, Any, Generic, Literal, TypeVar, final

from ._errors import Error

__version__: str

JSON = Any
"""A JSON value: dict, list, str, int, float, bool or None."""

StrPath = str | os.PathLike[str]

T = TypeVar("T")

@final
class ManifestFile:
    """One file of a skill's manifest: what its bytes must match."""

    @property
    def uri(self) -> str: ...
    @property
    def digest(self) -> str:
        """`sha256:` and 64 hex digits."""
    @property
    def size(self) -> int: ...

@final
class SkillEntry:
    """A validated skill entry: what exists is valid."""

    @property
    def uri(self) -> str:
        """The `SKILL.md` URI."""
    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def is_dynamic(self) -> bool:
        """`resources: "dynamic"`: no digests, nothing to verify against (the host's `dynamic` policy decides whether it loads)."""
    @property
    def binding(self) -> str | None:
        """The approval binding (hex); `None` for a dynamic skill."""
    @property
    def files(self) -> list[ManifestFile]: ...
    @property
    def frontmatter(self) -> dict[str, JSON]: ...
    @property
    def requested_tools(self) -> JSON | None:
        """The frontmatter's `allowed-tools`, verbatim: a request, never a grant."""
    def to_json(self) -> dict[str, JSON]:
        """The entry in wire form."""
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...

@final
class EntryDiff:
    """What changed between two entries of one skill."""

    @property
    def added(self) -> list[str]: ...
    @property
    def removed(self) -> list[str]: ...
    @property
    def changed(self) -> list[tuple[str, str, str]]:
        """`(uri, old digest, new digest)` of each changed file."""
    @property
    def frontmatter(self) -> list[str]:
        """The frontmatter keys that differ."""
    @property
    def dynamic_changed(self) -> bool: ...

@final
class EntryInfo:
    """An entry as `SkillCache.entry`, `refresh` or `list` resolved it."""

    @property
    def entry(self) -> SkillEntry: ...
    @property
    def from_cache(self) -> bool:
        """It was fresh in the index and the server was not asked."""
    @property
    def revoked(self) -> bool:
        """Storing it revoked an approval: the skill changed since it was approved."""
    @property
    def diff(self) -> EntryDiff | None: ...
    @property
    def stale(self) -> bool:
        """A cached entry past its `ttlMs`, used offline because stale entries are allowed."""

@final
class SkillFile:
    """One file's bytes, with their origin, URI and what they were checked against."""

    @property
    def bytes(self) -> bytes: ...
    @property
    def text(self) -> str:
        """The bytes as UTF-8 (`UnicodeDecodeError` for a file that is not text)."""
    @property
    def origin(self) -> str: ...
    @property
    def uri(self) -> str: ...
    @property
    def digest(self) -> str | None:
        """The digest the bytes matched on this access; `None` for a dynamic skill's file."""
    @property
    def verified(self) -> bool: ...
    @property
    def provenance(self) -> Literal["cache", "server", "l2"]: ...
    @property
    def retried(self) -> bool:
        """A cached copy failed and the file was fetched once more (at most once)."""
    @property
    def stored(self) -> bool: ...
    def framed(self) -> str:
        """The file framed for model context: a line naming the origin, the URI, that it
        came from an MCP server, its size and digest, and a boundary the content does not
        contain; the text unchanged; the line that closes it. Bytes that are not UTF-8 text are
        described, not inlined."""
    def __len__(self) -> int: ...

@final
class Pending(Generic[T]):
    """The rest of a call that could not be answered on the calling thread: awaiting it awaits
    the asyncio future skillcache's runtime finishes."""

    def __await__(self) -> Generator[Any, None, T]: ...

@final
class LoadedSkill:
    """The native half of `skillcache.LoadedSkill` (`_cache.py`)."""

    @property
    def origin(self) -> str: ...
    @property
    def entry(self) -> SkillEntry: ...
    @property
    def skill_md(self) -> SkillFile: ...
    @property
    def granted_tools(self) -> JSON | None: ...
    @property
    def files(self) -> list[ManifestFile]: ...
    def read(self, reference: str) -> SkillFile | Pending[SkillFile]: ...
    def read_all(self) -> list[SkillFile] | Pending[list[SkillFile]]: ...

@final
class CatalogSkill:
    """One skill of a `Catalog`."""

    @property
    def handle(self) -> str:
        """Unique in the catalog, and the same whenever it holds the same skills: the name, the
        root URI (two paths of one origin), or `origin:` and either (a name shared with another
        origin or a local skill)."""
    @property
    def origin(self) -> str: ...
    @property
    def entry(self) -> SkillEntry:
        """As listed: what `approve` and `load` take."""
    @property
    def collides_with(self) -> list[str]:
        """The handles of every other skill with its name (a local skill's is its bare name),
        sorted; empty when the name is unique."""

@final
class Catalog:
    """The skills of every bound origin in one view, from `SkillCache.catalog`."""

    @property
    def skills(self) -> list[CatalogSkill]:
        """By origin label, then by URI."""
    def get(self, handle: str) -> CatalogSkill | None:
        """The skill with exactly this handle; a bare name finds nothing once it collides."""
    @property
    def failures(self) -> list[tuple[str, Error]]:
        """`(origin, error)` of an origin whose listing failed or of one refused entry."""
    def __len__(self) -> int: ...
    def __contains__(self, handle: str) -> bool: ...

@final
class LockedSkill:
    @property
    def origin(self) -> str: ...
    @property
    def uri(self) -> str: ...
    @property
    def binding(self) -> str: ...
    @property
    def files(self) -> list[tuple[str, str, int]]:
        """`(uri, digest, size)` of each pinned file."""

@final
class LockFile:
    """A lock file (`skills.lock`): the skills a host pins, by digest."""

    def __init__(self) -> None: ...
    @staticmethod
    def read(path: StrPath) -> LockFile: ...
    def insert(self, origin: str, entry: SkillEntry) -> None: ...
    def check(self, origin: str, entry: SkillEntry) -> None:
        """`DeclinedError` (`"not_locked"`, `"drift"`) unless `entry` is exactly as pinned."""
    def write(self, path: StrPath) -> None: ...
    @property
    def skills(self) -> list[LockedSkill]: ...
    def __len__(self) -> int: ...

@final
class SkillCache:
    """The native half of `skillcache.SkillCache` (`_cache.py`, which documents every call).
    Each asynchronous call returns its result or a `Pending` (`load`, `load_all`), or an asyncio
    future (the rest); call them from a running event loop."""

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
    ) -> None: ...
    @property
    def root(self) -> pathlib.Path: ...
    @property
    def healed_index(self) -> pathlib.Path | None: ...
    def for_principal(self, principal: str) -> SkillCache: ...
    def connect_stdio(
        self,
        origin: str,
        argv: Sequence[str],
        env: Mapping[str, str] | None = None,
        cwd: StrPath | None = None,
        stderr: int | IO[Any] | None = None,
    ) -> None: ...
    def connect_http(
        self, origin: str, url: str, headers: Mapping[str, str] | None = None
    ) -> None: ...
    def connect_session(self, origin: str, session: Any) -> None: ...
    def notify(self, origin: str, uri: str | None = None) -> None: ...
    def disconnect(self, origin: str) -> None: ...
    def list(self, origin: str) -> Awaitable[list[EntryInfo | Error]]: ...
    def entry(self, origin: str, uri: str) -> Awaitable[EntryInfo]: ...
    def refresh(self, origin: str, uri: str) -> Awaitable[EntryInfo]: ...
    def approve(
        self, origin: str, entry: SkillEntry, grant_tools: JSON | None = None
    ) -> Awaitable[None]: ...
    def is_approved(self, origin: str, entry: SkillEntry) -> Awaitable[bool]: ...
    def load(self, origin: str, entry: SkillEntry) -> LoadedSkill | Pending[LoadedSkill]: ...
    def load_all(
        self, origin: str, entry: SkillEntry
    ) -> (
        tuple[LoadedSkill, list[SkillFile]] | Pending[tuple[LoadedSkill, list[SkillFile]]]
    ): ...
    def check_lock(self, lock: LockFile) -> Awaitable[dict[str, Any]]: ...
    def verify(self, origin: str | None = None) -> Awaitable[dict[str, Any]]: ...
    def gc(self, max_bytes: int | None = None) -> Awaitable[dict[str, Any]]: ...
    def purge(self, origin: str) -> Awaitable[None]: ...
    def origins(self) -> Awaitable[list[str]]: ...
    def purge_absent(self, keep: Iterable[str]) -> Awaitable[list[str]]: ...
    def catalog(self, local_names: Sequence[str] = ()) -> Awaitable[Catalog]: ...
    def flush(self) -> Awaitable[None]: ...
    def inventory(self) -> Awaitable[dict[str, Any]]: ...
    def cached_entries(self, origin: str | None = None) -> Awaitable[list[dict[str, Any]]]: ...
    def stats(self) -> dict[str, int]: ...

async def _ready() -> None:
    """An awaitable that does nothing (the bench's bare await); not part of the API."""

def _quiesce() -> None:
    """Waits (at exit) until no result is being handed back; not part of the API."""

def _before_fork() -> bool:
    """`os.register_at_fork`'s `before`: no SQLite work runs across the fork; not part of the
    API."""

def _after_fork_in_parent() -> None: ...
def _after_fork_in_child() -> None: ...
def _hops() -> int:
    """How many calls went to skillcache's runtime so far (the tests count them); not part of
    the API."""

def _in_flight() -> int:
    """How many of the module's calls are on skillcache's runtime now (the tests see a
    cancelled call leave); not part of the API."""

def error_kinds() -> dict[str, list[object]]:
    """Every error kind, class and decline reason the package maps (the tests check each has
    its class); not part of the API."""

def run_cli(argv: Sequence[str]) -> int:
    """Runs the `skillcache` command line (`argv`, the program's name first) and returns its
    exit code: the `skillcache` console script."""
