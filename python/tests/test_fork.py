"""B4: a cache in a child forked after use (gunicorn, `multiprocessing` with the fork start
method). The child inherits the parent's memory but not its threads, and must not use the
parent's database connection: the parent's `SkillCache` and `LoadedSkill` raise a
`RuntimeError` at once in the child, saying to open a new cache there, and a cache the child
opens is its own — it loads, and its `request_timeout` holds against a server that never
answers.

Each child runs under a deadline: a child that hangs is killed and the test fails (before the
fix, the parent's cache hung the child forever on its first miss, past `request_timeout`).
"""

from __future__ import annotations

import asyncio
import gc
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import skillcache

from conftest import files_on_disk, hostile_argv, open_cache, serve_argv

CHILD_DEADLINE = 60.0
NOTES = "skill://release-notes/SKILL.md"


async def warm_parent(tmp_path: Path, skills: Path) -> tuple[skillcache.SkillCache, skillcache.LoadedSkill]:
    """The parent's cache after use: a skill loaded (the runtime, the index and a server all
    started), so the child has everything to inherit."""
    cache = open_cache(tmp_path, approval="not_required")
    cache.connect_stdio("docs", serve_argv(skills, tmp_path))
    info = await asyncio.wait_for(cache.entry("docs", NOTES), CHILD_DEADLINE)
    skill = await asyncio.wait_for(cache.load("docs", info.entry), CHILD_DEADLINE)
    return cache, skill


async def in_child(
    tmp_path: Path, skills: Path, cache: skillcache.SkillCache, skill: skillcache.LoadedSkill
) -> dict[str, Any]:
    """What a forked child sees, as a JSON-able report."""
    report: dict[str, Any] = {}
    # The parent's objects: a clear error at once, for a miss, a hit and a synchronous call.
    for name, call in [
        ("entry", lambda: cache.entry("docs", "skill://code-style/SKILL.md")),
        ("read", lambda: skill.read("templates/notes.md")),
        ("load", lambda: cache.load("docs", skill.entry)),
    ]:
        started = time.monotonic()
        try:
            await asyncio.wait_for(call(), 10)
            report[name] = "returned"
        except RuntimeError as e:
            report[name] = {"error": str(e), "seconds": time.monotonic() - started}
        except asyncio.TimeoutError:
            report[name] = "hung"
    try:
        cache.connect_stdio("again", serve_argv(skills, tmp_path))
        report["connect"] = "returned"
    except RuntimeError as e:
        report["connect"] = {"error": str(e)}
    # Memory the parent filled is still readable: the entry and SKILL.md the skill holds.
    report["held_uri"] = skill.entry.uri
    report["held_text"] = skill.skill_md.text
    # A cache of the child's own, on the same root: it works.
    own = open_cache(tmp_path, approval="not_required")
    own.connect_stdio("docs", serve_argv(skills, tmp_path))
    info = await asyncio.wait_for(own.entry("docs", NOTES), CHILD_DEADLINE)
    _, files = await asyncio.wait_for(own.load_all("docs", info.entry), CHILD_DEADLINE)
    on_disk = files_on_disk(skills, info.entry)
    report["loaded"] = all(f.bytes == on_disk[f.uri] for f in files) and len(files) == len(on_disk)
    # ...and its request deadline holds: a server that never answers a read.
    slow = open_cache(tmp_path, "slow", approval="not_required", request_timeout=1.0)
    slow.connect_stdio("silent", hostile_argv(skills, "silent", tmp_path / f"silent-{os.getpid()}.log"))
    info = await asyncio.wait_for(slow.entry("silent", NOTES), CHILD_DEADLINE)
    started = time.monotonic()
    try:
        await asyncio.wait_for(slow.load("silent", info.entry), CHILD_DEADLINE)
        report["deadline"] = "loaded"
    except skillcache.TimeoutError as e:
        report["deadline"] = {"error": type(e).__name__, "seconds": time.monotonic() - started}
    except asyncio.TimeoutError:
        report["deadline"] = "hung"
    return report


def check(report: dict[str, Any]) -> None:
    for name in ["entry", "read", "load"]:
        outcome = report[name]
        assert isinstance(outcome, dict), (name, outcome)
        assert outcome["seconds"] < 5, (name, outcome)  # at once, not after a deadline
        message = outcome["error"]
        assert "forked" in message and "open a new SkillCache in this process" in message, message
    assert "open a new SkillCache" in report["connect"]["error"]
    assert report["held_uri"] == NOTES
    assert report["held_text"].startswith("---\nname: release-notes")
    assert report["loaded"] is True
    deadline = report["deadline"]
    assert isinstance(deadline, dict) and deadline["error"] == "TimeoutError", deadline
    assert deadline["seconds"] < 30, deadline


def child_main(tmp_path: Path, skills: Path, cache: Any, skill: Any, write_fd: int) -> None:
    """The child's whole life: runs the checks and writes the report to `write_fd`."""
    try:
        report = asyncio.run(in_child(tmp_path, skills, cache, skill))
    except BaseException as e:  # reported, so the parent's failure says what happened
        report = {"crashed": f"{type(e).__name__}: {e}"}
    with os.fdopen(write_fd, "w") as out:
        json.dump(report, out)


def read_report(read_fd: int) -> dict[str, Any]:
    with os.fdopen(read_fd) as f:
        text = f.read()
    assert text, "the child wrote no report"
    report = json.loads(text)
    assert "crashed" not in report, report["crashed"]
    return report


def test_b4_a_child_of_os_fork_is_refused_the_parents_cache_at_once_and_its_own_cache_works(
    tmp_path: Path, skills_dir: Path
) -> None:
    cache, skill = asyncio.run(warm_parent(tmp_path, skills_dir))
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read_fd)
            child_main(tmp_path, skills_dir, cache, skill, write_fd)
            code = 0
        finally:
            os._exit(code)
    os.close(write_fd)
    end = time.monotonic() + CHILD_DEADLINE
    status = None
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        pytest.fail(f"the forked child hung: killed after {CHILD_DEADLINE} s")
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    check(read_report(read_fd))
    # The parent's cache is untouched by its child: it still reads.
    again = asyncio.run(asyncio.wait_for(skill.read("templates/notes.md"), CHILD_DEADLINE))
    assert again.bytes == (skills_dir / "release-notes" / "templates" / "notes.md").read_bytes()


def test_b4_a_multiprocessing_fork_child_is_refused_the_parents_cache_at_once_and_its_own_cache_works(
    tmp_path: Path, skills_dir: Path
) -> None:
    cache, skill = asyncio.run(warm_parent(tmp_path, skills_dir))
    context = multiprocessing.get_context("fork")
    read_fd, write_fd = os.pipe()
    process = context.Process(
        target=child_main, args=(tmp_path, skills_dir, cache, skill, write_fd)
    )
    process.start()
    os.close(write_fd)
    process.join(CHILD_DEADLINE)
    if process.is_alive():
        process.kill()
        process.join()
        pytest.fail(f"the forked child hung: killed after {CHILD_DEADLINE} s")
    assert process.exitcode == 0, process.exitcode
    check(read_report(read_fd))


def test_b4_a_fork_while_other_threads_are_inside_the_index_leaves_the_child_a_working_cache(
    tmp_path: Path, skills_dir: Path
) -> None:
    """Threads of the parent busy in the index (SQLite) while the main thread forks, again and
    again: a lock a parent thread held at the fork would stay held in the child, which has only
    the forking thread, so the child's own `SkillCache` would hang opening the index (before the
    fork gate, a few of every 40 children did). The gate (`os.register_at_fork`) keeps every
    thread out of SQLite across the fork.

    CPython 3.11's own after-fork code can hang a child of a process whose threads are taking
    and dropping the GIL (it waits for a lock of its thread-state list), before any code of the
    child runs: about one child in 200 here, none in 320 under 3.12. A child says when it got
    past that point; one that hangs before is CPython's, counted apart, and fails the test only
    from 3.12 on."""
    cache, _ = asyncio.run(warm_parent(tmp_path, skills_dir))
    stop = threading.Event()

    def busy() -> None:
        async def loop() -> None:
            while not stop.is_set():
                await cache.cached_entries()
                await cache.inventory()

        asyncio.run(loop())

    threads = [threading.Thread(target=busy, daemon=True) for _ in range(3)]
    for t in threads:
        t.start()
    hung = before_ours = failed = 0
    try:
        for _ in range(40):
            time.sleep(0.01)
            read_fd, write_fd = os.pipe()
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    os.write(write_fd, b"1")  # past CPython's after-fork code
                    own = open_cache(tmp_path, approval="not_required")
                    entries = asyncio.run(asyncio.wait_for(own.cached_entries(), 20))
                    code = 0 if entries else 3
                finally:
                    os._exit(code)
            os.close(write_fd)
            end = time.monotonic() + 15
            while time.monotonic() < end:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    failed += not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0)
                    break
                time.sleep(0.02)
            else:
                os.set_blocking(read_fd, False)
                try:
                    started = os.read(read_fd, 1) == b"1"
                except BlockingIOError:
                    started = False
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                if started:
                    hung += 1
                else:
                    before_ours += 1
            os.close(read_fd)
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    assert (hung, failed) == (0, 0), f"{hung} of 40 children hung, {failed} failed"
    if sys.version_info >= (3, 12):
        assert before_ours == 0, f"{before_ours} children hung in the interpreter's after-fork code"


def index_logs(tmp_path: Path) -> list[str]:
    """The index's write-ahead log and shared-memory files in the default test root."""
    root = tmp_path / "cache" / "root"
    return sorted(p.name for p in root.iterdir() if p.name.startswith("index.sqlite3-"))


def test_a_parent_closing_its_cache_leaves_the_index_log_of_a_forked_childs_own_cache_alone(
    tmp_path: Path, skills_dir: Path
) -> None:
    """Round 28 of review (F1): the child opens a cache of its own on the parent's root, as
    the error in the child says to, and the parent then closes its cache. Before the fix, the
    child inherited the parent's open index connection, and with it SQLite's note of a lock
    the child did not hold: the parent, closing, deleted the write-ahead log the child was
    using (the child then saw purged origins and "database disk image is malformed"). The fork
    now closes every index connection first, so the child inherits none."""
    cache, skill = asyncio.run(warm_parent(tmp_path, skills_dir))
    to_parent, from_child = os.pipe()
    to_child, from_parent = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            signal.alarm(int(CHILD_DEADLINE))
            os.close(to_parent)
            os.close(from_parent)
            own = open_cache(tmp_path, approval="not_required")
            asyncio.run(own.cached_entries())
            os.write(from_child, b"1")
            os.read(to_child, 1)  # the parent closed its cache
            report: dict[str, Any] = {"logs": index_logs(tmp_path)}
            asyncio.run(own.purge("docs"))
            report["origins"] = asyncio.run(own.origins())
            os.write(from_child, json.dumps(report).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(from_child)
    os.close(to_child)
    assert os.read(to_parent, 1) == b"1", "the child opened its own cache"
    assert index_logs(tmp_path), "the child's cache has the log open"
    del cache, skill
    gc.collect()
    os.write(from_parent, b"x")
    _, status = os.waitpid(pid, 0)
    text = os.read(to_parent, 65536)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, (status, text)
    report = json.loads(text)
    assert report["logs"], "the parent deleted the log of the child's open index"
    assert report["origins"] == [], report
    after = open_cache(tmp_path, approval="not_required")
    assert asyncio.run(after.origins()) == [], "the child's purge is in the index"
    assert asyncio.run(after.verify()).is_clean


def test_a_child_forked_while_the_parent_waits_inside_the_index_refuses_that_index_saying_why(
    tmp_path: Path, skills_dir: Path
) -> None:
    """Round 29 of review (F1'): a thread of the parent waits inside the index (another process
    holds its write lock) longer than the fork waits for it; that connection cannot be closed,
    and the child inherits it with SQLite's lock bookkeeping. A cache of the child's own on that
    root would then lose its log when the parent closes, so the child refuses to open it, and
    says why."""
    cache, skill = asyncio.run(warm_parent(tmp_path, skills_dir))
    index = tmp_path / "cache" / "root" / "index.sqlite3"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3, sys, time; c = sqlite3.connect(sys.argv[1]); "
         "c.execute('BEGIN IMMEDIATE'); print('held', flush=True); time.sleep(30)", str(index)],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        # A listing is recorded in the index: the write waits inside SQLite for the lock.
        waiting = threading.Thread(target=lambda: asyncio.run(cache.list("docs")), daemon=True)
        waiting.start()
        time.sleep(0.5)
        read_fd, write_fd = os.pipe()
        pid = os.fork()  # waits for the listing as long as the fork gate does, then goes on
        if pid == 0:
            code = 1
            try:
                signal.alarm(int(CHILD_DEADLINE))
                os.close(read_fd)
                try:
                    own = open_cache(tmp_path, approval="not_required")
                    asyncio.run(own.cached_entries())
                    said = "opened"
                except Exception as e:  # the refusal, whatever its class
                    said = f"{type(e).__name__}: {e}"
                os.write(write_fd, said.encode())
                code = 0
            finally:
                os._exit(code)
        os.close(write_fd)
        _, status = os.waitpid(pid, 0)
        said = os.read(read_fd, 65536).decode()
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, (status, said)
        assert "forked while its parent was still inside this index" in said, said
    finally:
        holder.kill()
        holder.wait()
    waiting.join(60)
    assert not waiting.is_alive()
    # The parent's own cache goes on, its listing recorded once the lock was free.
    assert asyncio.run(cache.origins()) == ["docs"]
    del skill
