"""The maintenance reports: `verify`, `gc`, `inventory`, `cached_entries` and `check_lock` as
typed, frozen values. Each is built from the Rust library's own serialization of its report (the one shape
`skillcache … --json` prints and the Node package reads), so the fields are the library's;
`tests/test_reports.py` checks that every key the library writes has its field here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, NamedTuple


class BlobRef(NamedTuple):
    """A blob of an origin, by digest: a tuple `(origin, digest)`, with names."""

    origin: str
    digest: str


@dataclass(frozen=True)
class VerifyReport:
    """What `SkillCache.verify` found."""

    checked: int
    """Blobs re-hashed."""
    corrupt: list[BlobRef]
    """Blobs whose bytes or size did not match, and names that were not blobs: quarantined."""
    missing: list[BlobRef]
    """Records whose blob is gone: forgotten."""
    orphaned: list[BlobRef]
    """Blobs with no record (a crash between publish and record): `gc` removes them."""
    strays: list[str]
    """Paths under the store that are not blobs at all."""
    is_clean: bool
    """Nothing was corrupt."""

    @classmethod
    def _of(cls, report: dict[str, Any]) -> VerifyReport:
        blobs = ("corrupt", "missing", "orphaned")
        return cls(**{k: [BlobRef(**b) for b in v] if k in blobs else v for k, v in report.items()})


@dataclass(frozen=True)
class GcReport:
    """What `SkillCache.gc` removed."""

    unreferenced: int
    """Blobs no entry references."""
    not_blobs: int
    """Names in the store that were not blobs (a link, a FIFO, a folder)."""
    evicted: int
    """Blobs removed to meet the byte budget, least recently used first."""
    temporaries: int
    """Temporaries swept."""
    bytes_before: int
    bytes_after: int
    over_budget: bool
    """The budget could not be met without touching blobs of fresh entries."""


@dataclass(frozen=True)
class Inventory:
    """What the cache root holds, counted."""

    origins: int
    """Origins with entries or blobs."""
    entries: int
    """Stored entries, over every origin and principal."""
    blobs: int
    """Recorded blobs."""
    blob_bytes: int
    """Their total size."""
    quarantined: int
    """Files in quarantine (copies that failed verification, kept for inspection)."""
    schema_version: int
    """The index's schema version."""
    index_read_only: bool
    """Whether the index could only be opened read-only."""


@dataclass(frozen=True)
class CachedEntry:
    """One entry the cache holds."""

    origin: str
    uri: str
    scope: Literal["public", "private"]
    principal: str
    """The principal of a private entry (empty for a public one)."""
    files: int
    """How many files its manifest lists; 0 for a dynamic skill."""
    bytes: int
    """The sum of their declared sizes."""
    dynamic: bool
    """A dynamic skill (no manifest): `files` is 0."""
    fresh: bool
    """Whether its `ttlMs` has not run out yet."""


class Pin(NamedTuple):
    """A file's digest and size, as a lock pins it or a server lists it: a tuple, with names."""

    digest: str
    size: int


@dataclass(frozen=True)
class FileDrift:
    """One file that differs from its pin; `pinned` is `None` for a file added since, `now` for
    one no longer listed."""

    uri: str
    pinned: Pin | None
    now: Pin | None


@dataclass(frozen=True)
class LockDrift:
    """One way a server's listing differs from the lock."""

    kind: Literal["files", "became_dynamic", "binding", "removed", "added", "refused", "unlisted"]
    origin: str
    skill: str | None
    """`None` for an origin that could not be listed."""
    message: str
    """The library's sentence for it: display-safe, naming origin, skill and files."""
    files: list[FileDrift]
    """For `"files"`: every file that differs."""


class DynamicSkill(NamedTuple):
    """A dynamic skill a server lists beside the pins: not drift, never pinned."""

    origin: str
    skill: str


@dataclass(frozen=True)
class LockCheck:
    """What `SkillCache.check_lock` found: every drift in the lock's order."""

    pinned: int
    """How many skills the lock pins."""
    matched: int
    """How many of them matched their pin exactly."""
    is_clean: bool
    """Every pinned origin publishes exactly what the lock pins, and nothing more."""
    drift: list[LockDrift]
    dynamic: list[DynamicSkill]

    @classmethod
    def _of(cls, check: dict[str, Any]) -> LockCheck:
        def pin(p: dict[str, Any] | None) -> Pin | None:
            return None if p is None else Pin(**p)

        def drift(d: dict[str, Any]) -> LockDrift:
            files = [FileDrift(f["uri"], pin(f["pinned"]), pin(f["now"])) for f in d["files"]]
            return LockDrift(**{**d, "files": files})

        return cls(
            **{
                **check,
                "drift": [drift(d) for d in check["drift"]],
                "dynamic": [DynamicSkill(**d) for d in check["dynamic"]],
            }
        )


# Reprs and tracebacks name the module a host imports these from, not this private one.
for _cls in [v for v in list(globals().values()) if isinstance(v, type) and v.__module__ == __name__]:
    _cls.__module__ = "skillcache"
del _cls
