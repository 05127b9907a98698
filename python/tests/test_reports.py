"""The maintenance reports are the Rust library's own serialization (one shape for the CLI's
`--json`, the Node package and this one), made typed by `skillcache/_reports.py`: every key the
library writes must be a field there and every field a key, or a report could not be built (or
would hide a field the library added)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import skillcache
from conftest import FIXTURE_SKILLS, open_cache, serve_argv, sha256, within

NOTES = "skill://release-notes/SKILL.md"


def fields(cls: type) -> list[str]:
    return sorted(f.name for f in dataclasses.fields(cls))


async def served(
    tmp_path: Path, skills_dir: Path, name: str = "cache"
) -> tuple[skillcache.SkillCache, skillcache.SkillEntry]:
    """A cache bound to `skillcache serve` over the fixture skills, and the release-notes entry."""
    cache = open_cache(tmp_path, name, approval="not_required")
    cache.connect_stdio("local", serve_argv(skills_dir, tmp_path))
    return cache, (await within(cache.entry("local", NOTES))).entry


async def test_every_report_has_exactly_the_fields_the_library_serializes(
    tmp_path: Path, skills_dir: Path
) -> None:
    cache, entry = await served(tmp_path, skills_dir)
    await within(cache.load_all("local", entry))
    native = cache._native
    for cls, raw in [
        (skillcache.VerifyReport, await within(native.verify(None))),
        (skillcache.GcReport, await within(native.gc(None))),
        (skillcache.Inventory, await within(native.inventory())),
        (skillcache.CachedEntry, (await within(native.cached_entries(None)))[0]),
    ]:
        assert sorted(raw) == fields(cls), cls.__name__

    report = await within(cache.verify())
    assert isinstance(report, skillcache.VerifyReport) and report.is_clean
    (held,) = await within(cache.cached_entries())
    assert (held.origin, held.uri, held.scope, held.dynamic) == ("local", NOTES, "public", False)
    assert held.files == len(FIXTURE_SKILLS["release-notes"])
    await within(cache.purge("local"))


async def test_a_corrupt_blob_is_a_named_origin_and_digest_pair(
    tmp_path: Path, skills_dir: Path
) -> None:
    cache, entry = await served(tmp_path, skills_dir)
    await within(cache.load_all("local", entry))
    await within(cache.flush())  # the files reach the store behind the load
    digest = entry.files[0].digest
    blob = next(
        p for p in (tmp_path / "cache").rglob("*")
        if p.is_file() and p.name == digest.removeprefix("sha256:")[2:]
    )
    blob.parent.chmod(0o700)
    blob.chmod(0o600)
    blob.write_bytes(b"X" + blob.read_bytes()[1:])
    report = await within(cache.verify())
    assert not report.is_clean
    (bad,) = report.corrupt
    assert bad == ("local", digest)  # a tuple, as before
    assert (bad.origin, bad.digest) == ("local", digest)
    await within(cache.purge("local"))


async def test_a_lock_check_has_exactly_the_fields_the_library_serializes(
    tmp_path: Path, skills_dir: Path
) -> None:
    _, entry = await served(tmp_path, skills_dir)
    lock = skillcache.LockFile()
    lock.insert("local", entry)
    lock.insert("gone", entry)  # a pinned origin with no server: drift, never raised
    # Changed on disk, then served by a server started after the change.
    (skills_dir / "release-notes" / "templates" / "notes.md").write_bytes(b"# changed\n")
    cache, _ = await served(tmp_path, skills_dir, "second")

    raw = await within(cache._native.check_lock(lock))
    assert sorted(raw) == fields(skillcache.LockCheck)
    for d in raw["drift"]:
        assert sorted(d) == fields(skillcache.LockDrift)
    changed = next(d for d in raw["drift"] if d["kind"] == "files")
    assert sorted(changed["files"][0]) == fields(skillcache.FileDrift)
    assert sorted(changed["files"][0]["pinned"]) == sorted(skillcache.Pin._fields)

    check = await within(cache.check_lock(lock))
    assert not check.is_clean and check.pinned == 2
    (file,) = next(d for d in check.drift if d.kind == "files").files
    assert isinstance(file, skillcache.FileDrift) and isinstance(file.pinned, skillcache.Pin)
    assert file.now == (sha256(b"# changed\n"), len(b"# changed\n"))
    assert [d.kind for d in check.drift if d.origin == "gone"] == ["unlisted"]
