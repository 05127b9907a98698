"""Y1/Y2: the package's surface — the stubs match the extension, every Rust error kind has its
class under `skillcache.Error` with its fields, lock files, maintenance, and the README's
example runs as written."""

from __future__ import annotations

import ast
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

import skillcache
import skillcache._errors as errors
import skillcache._reports as reports
import skillcache._skillcache as native

from conftest import REPO, FIXTURE_SKILLS, open_cache, serve_argv, sha256, within, write_skills

PACKAGE = Path(skillcache.__file__).resolve().parent
SOURCES = REPO / "python"
NOTES = "skill://release-notes/SKILL.md"


# --- Y2: types --------------------------------------------------------------------------------


def stub_classes() -> dict[str, set[str]]:
    tree = ast.parse((SOURCES / "skillcache" / "_skillcache.pyi").read_text())
    return {
        node.name: {
            item.name
            for item in node.body
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        for node in tree.body
        if isinstance(node, ast.ClassDef)
    }


def test_y2_the_stubs_name_every_class_and_member_of_the_extension_and_nothing_else() -> None:
    stubs = stub_classes()
    runtime = {
        name: cls for name, cls in vars(native).items() if inspect.isclass(cls)
    }
    assert set(stubs) == set(runtime)
    for name, members in stubs.items():
        public = {m for m in dir(runtime[name]) if not m.startswith("_")}
        assert public == {m for m in members if not m.startswith("_")}, name
    assert (PACKAGE / "py.typed").is_file()


# The native halves that the package's own classes of the same name wrap (`_cache.py`, whose
# methods are coroutine functions), and the extension's internal awaitable.
WRAPPED = {"SkillCache", "LoadedSkill"}


def test_y2_the_package_exports_every_class_of_the_extension_and_of_the_errors() -> None:
    for name, cls in [*vars(native).items(), *vars(errors).items(), *vars(reports).items()]:
        if inspect.isclass(cls) and cls.__module__ in (native.__name__, errors.__name__, "skillcache"):
            if name in WRAPPED:
                assert getattr(skillcache, name).__module__ == "skillcache._cache", name
            elif name == "Pending":
                assert not hasattr(skillcache, name)
            else:
                assert getattr(skillcache, name) is cls, name


# A requirement id (`R-V1`, `K3`, `T4`, `Y2`): maintainers' shorthand, meaningless to a user.
REQUIREMENT_ID = re.compile(r"\bR-[A-Z]+\d+\b|\b[A-Z]\d{1,2}\b")


def test_n5_no_docstring_a_python_user_sees_names_a_requirement_id() -> None:
    seen = 0
    for module in (skillcache, native, errors):
        for name, obj in [(module.__name__, module), *vars(module).items()]:
            if name.startswith("_") and obj is not module:
                continue
            members = [(name, obj)]
            if inspect.isclass(obj):
                members += [(f"{name}.{m}", v) for m, v in vars(obj).items() if not m.startswith("_")]
            for label, member in members:
                doc = inspect.getdoc(member) or ""
                seen += bool(doc)
                assert not REQUIREMENT_ID.search(doc), (label, REQUIREMENT_ID.search(doc))
    assert seen >= 100


# --- Y1: errors -------------------------------------------------------------------------------


def test_y1_every_error_class_the_extension_raises_exists_under_skillcache_error() -> None:
    # The classes the shared table (skillcache-binding, exhaustive over every variant) names.
    named = {cls for cls, _ in skillcache._skillcache.error_kinds()["kinds"]}
    assert len(named) >= 15
    for name in named:
        cls = getattr(skillcache, name)
        assert issubclass(cls, skillcache.Error), name
    for cls in vars(errors).values():
        if inspect.isclass(cls) and issubclass(cls, Exception):
            assert issubclass(cls, skillcache.Error)
    assert issubclass(skillcache.TimeoutError, TimeoutError)
    assert issubclass(skillcache.TimeoutError, skillcache.SourceError)
    assert skillcache.IndexError is not IndexError
    assert "IndexError" not in skillcache.__all__ and "TimeoutError" not in skillcache.__all__


def test_y1_refused_configuration_is_a_config_error_with_its_fields(tmp_path: Path) -> None:
    with pytest.raises(skillcache.ConfigError) as caught:
        open_cache(tmp_path, max_files=1)
    assert caught.value.kind == "invalid" and "baseline" in caught.value.what
    cache = open_cache(tmp_path)
    with pytest.raises(skillcache.ConfigError):
        cache.connect_stdio("", ["server"])
    with pytest.raises(ValueError):
        open_cache(tmp_path, isolation="sometimes")
    with pytest.raises(skillcache.UriError) as uri:
        cache.connect_stdio("docs", ["server"])
        import asyncio

        asyncio.run(cache.entry("docs", "../etc/passwd"))
    assert uri.value.uri == "../etc/passwd" and uri.value.rule


def test_y1_a_host_key_that_others_can_read_is_refused_as_an_index_error(tmp_path: Path) -> None:
    key = tmp_path / "host.key"
    key.write_bytes(b"k" * 32)
    key.chmod(0o644)
    with pytest.raises(skillcache.IndexError) as caught:
        skillcache.SkillCache(root=tmp_path / "root", key_file=key)
    assert caught.value.kind == "host_key" and caught.value.path == str(key)
    assert caught.value.problem


# --- L1: lock files ---------------------------------------------------------------------------


async def test_l1_a_lock_file_round_trips_and_a_broken_one_is_refused_naming_the_field(
    tmp_path: Path, skills_dir: Path
) -> None:
    cache = open_cache(tmp_path)
    cache.connect_stdio("local", serve_argv(skills_dir, tmp_path))
    entry = (await within(cache.entry("local", NOTES))).entry
    lock = skillcache.LockFile()
    lock.insert("local", entry)
    lock.write(tmp_path / "skills.lock")
    read = skillcache.LockFile.read(tmp_path / "skills.lock")
    assert len(read) == 1
    (pinned,) = read.skills
    assert (pinned.origin, pinned.uri, pinned.binding) == ("local", NOTES, entry.binding)
    assert sorted(pinned.files) == sorted((f.uri, f.digest, f.size) for f in entry.files)
    read.check("local", entry)

    text = (tmp_path / "skills.lock").read_text()
    digest = entry.files[0].digest
    (tmp_path / "broken.lock").write_text(text.replace(digest, "sha256:nothex"))
    with pytest.raises(skillcache.ConfigError) as caught:
        skillcache.LockFile.read(tmp_path / "broken.lock")
    e = caught.value
    assert e.kind == "lock_file" and e.path == str(tmp_path / "broken.lock")
    assert "digest" in e.field
    with pytest.raises(skillcache.StoreError) as missing:
        skillcache.LockFile.read(tmp_path / "absent.lock")
    assert missing.value.kind == "io" and missing.value.errno == 2


async def test_l1_check_lock_names_each_file_that_changed_and_each_origin_it_could_not_list(
    tmp_path: Path, skills_dir: Path
) -> None:
    cache = open_cache(tmp_path)
    cache.connect_stdio("local", serve_argv(skills_dir, tmp_path))
    lock = skillcache.LockFile()
    for listed in await within(cache.list("local")):
        assert isinstance(listed, skillcache.EntryInfo), listed
        lock.insert("local", listed.entry)
    clean = await within(cache.check_lock(lock))
    assert isinstance(clean, skillcache.LockCheck)
    assert (clean.is_clean, clean.pinned, clean.matched, clean.drift) == (True, 2, 2, [])

    # The server's folder changes under the lock: one file edited, one skill added.
    notes = skills_dir / "release-notes" / "templates" / "notes.md"
    pinned = FIXTURE_SKILLS["release-notes"]["templates/notes.md"]
    notes.write_bytes(b"# changed\n")
    write_skills(skills_dir, {"extra": {"SKILL.md": b"---\nname: extra\ndescription: Added.\n---\n"}})
    fresh = open_cache(tmp_path)
    fresh.connect_stdio("local", serve_argv(skills_dir, tmp_path))
    # A pinned origin with no server bound is drift too, never raised.
    lock.insert("gone", (await within(fresh.entry("local", NOTES))).entry)
    check = await within(fresh.check_lock(lock))
    assert not check.is_clean and check.pinned == 3
    kinds = sorted((d.kind, d.origin, d.skill) for d in check.drift)
    assert kinds == [
        ("added", "local", "skill://extra/SKILL.md"),
        ("files", "local", NOTES),
        ("unlisted", "gone", None),
    ], kinds
    (files,) = [d for d in check.drift if d.kind == "files"]
    (changed,) = files.files
    assert isinstance(changed, skillcache.FileDrift)
    assert changed.uri == "skill://release-notes/templates/notes.md"
    assert changed.pinned == (sha256(pinned), len(pinned))
    assert changed.now == (sha256(b"# changed\n"), len(b"# changed\n"))
    assert "skill://release-notes/templates/notes.md changed" in files.message
    (gone,) = [d for d in check.drift if d.kind == "unlisted"]
    assert "origin gone" in gone.message


async def test_leaving_async_with_leaves_every_loaded_file_in_the_store(
    tmp_path: Path, skills_dir: Path
) -> None:
    """A load returns before its files are durable; `async with` waits for them on the way
    out, on an exception too, so a host may remove the root right after the block."""
    argv = serve_argv(skills_dir, tmp_path)
    cache = open_cache(tmp_path, approval="not_required")
    with pytest.raises(RuntimeError, match="the host's own failure"):
        async with cache as same:
            assert same is cache
            cache.connect_stdio("local", argv)
            entry = (await within(cache.entry("local", NOTES))).entry
            _, files = await within(cache.load_all("local", entry))
            raise RuntimeError("the host's own failure")
    origins = tmp_path / "cache" / "root" / "origins"
    blobs = [p for p in origins.rglob("*")
             if p.is_file() and "tmp" not in p.relative_to(origins).parts]
    assert len(blobs) == len(files), blobs
    assert (await within(cache.inventory())).blobs == len(files)


# --- maintenance: V9 and the admin calls ------------------------------------------------------


async def test_v9_a_cached_copy_damaged_on_disk_is_refetched_once_and_verify_gc_purge_report(
    tmp_path: Path, skills_dir: Path
) -> None:
    argv = serve_argv(skills_dir, tmp_path)
    cache = open_cache(tmp_path, approval="not_required")
    cache.connect_stdio("local", argv)
    entry = (await within(cache.entry("local", NOTES))).entry
    await within(cache.load_all("local", entry))
    await within(cache.flush())  # the files reach the store behind the load
    md = FIXTURE_SKILLS["release-notes"]["SKILL.md"]
    blob = next(
        p for p in (tmp_path / "cache" / "root" / "origins").rglob("*")
        if p.is_file() and p.name == entry.files[0].digest.removeprefix("sha256:")[2:]
    )
    blob.chmod(0o644)
    blob.write_bytes(b"X" + md[1:])
    blob.chmod(0o444)

    fresh = open_cache(tmp_path, approval="not_required")  # no memory tier of its own yet
    fresh.connect_stdio("local", argv)
    skill = await within(fresh.load("local", entry))
    assert skill.skill_md.bytes == md and skill.skill_md.retried
    stats = fresh.stats()
    assert (stats["quarantines"], stats["retries"]) == (1, 1)

    report = await within(fresh.verify())
    assert report.is_clean and report.checked == len(entry.files) and report.corrupt == []
    inventory = await within(fresh.inventory())
    assert inventory.quarantined == 1 and inventory.blobs == len(entry.files)
    (held,) = await within(fresh.cached_entries("local"))
    assert (held.origin, held.uri, held.files) == ("local", NOTES, len(entry.files))
    gc = await within(fresh.gc())
    assert gc.bytes_after == gc.bytes_before
    await within(fresh.purge("local"))
    after = await within(fresh.inventory())
    assert (after.entries, after.blobs, after.quarantined) == (0, 0, 0)


async def test_c6_a_principals_approval_does_not_admit_another_principal(
    tmp_path: Path, skills_dir: Path
) -> None:
    cache = open_cache(tmp_path)
    cache.connect_stdio("local", serve_argv(skills_dir, tmp_path))
    alice, bob = cache.for_principal("alice"), cache.for_principal("bob")
    entry = (await within(alice.entry("local", NOTES))).entry
    await within(alice.approve("local", entry, grant_tools=["Read"]))
    skill = await within(alice.load("local", entry))
    assert skill.granted_tools == ["Read"]
    with pytest.raises(skillcache.DeclinedError):
        await within(bob.load("local", (await within(bob.entry("local", NOTES))).entry))


# --- Y2/N7: the documented examples run as written -------------------------------------------


@pytest.mark.parametrize("doc", ["README.md", "python/README.md"])
def test_n7_the_readme_examples_run_verbatim_with_only_the_packages_commands_on_path(
    doc: str,
) -> None:
    # run_examples.py extracts the blocks from the markdown file and runs each with this
    # interpreter, PATH holding only its folder: the `skillcache` they start is the package's
    # console script (N2). `.ci/run` runs the same script from a fresh virtualenv.
    out = subprocess.run(
        [sys.executable, str(SOURCES / "tests" / "run_examples.py"), doc],
        capture_output=True, text=True, timeout=600,
    )
    assert out.returncode == 0, out.stderr
    assert "ok: " in out.stdout


def test_y1_connect_session_outside_the_sessions_event_loop_is_refused(tmp_path: Path) -> None:
    cache = open_cache(tmp_path)
    with pytest.raises(RuntimeError, match="event loop"):
        cache.connect_session("local", object())
