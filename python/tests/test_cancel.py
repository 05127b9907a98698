"""B2: cancelling the Python task that awaits a miss ends the miss. `task.cancel()` and
`asyncio.wait_for(..., timeout)` drop the call's future in Rust (the module's count of futures
on its runtime, `_skillcache._in_flight()`, returns to what it was), a request sent over the
host's own session is cancelled on its loop, and the connection serves the next call.

The servers never answer the request the miss waits for (`hostile_server.py silent`, a session
that never answers): without the cancellation reaching Rust the call would stay on the runtime
until the request deadline, 30 s by default — longer than every wait here.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

import skillcache
from skillcache import _skillcache as native

from conftest import DEADLINE, hostile_argv, open_cache, within

NOTES = "skill://release-notes/SKILL.md"
STYLE = "skill://code-style/SKILL.md"


async def until(condition: Any, what: str, seconds: float = DEADLINE) -> None:
    end = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > end:
            pytest.fail(f"{what}: not within {seconds} s")
        await asyncio.sleep(0.01)


async def a_pending_miss(tmp_path: Path, skills: Path) -> tuple[skillcache.SkillCache, skillcache.SkillEntry, Path]:
    log = tmp_path / "requests.log"
    cache = open_cache(tmp_path, approval="not_required")
    cache.connect_stdio("silent", hostile_argv(skills, "silent", log))
    info = await within(cache.entry("silent", NOTES))
    return cache, info.entry, log


def reads_sent(log: Path) -> int:
    return log.read_text().split().count("resources/read") if log.exists() else 0


async def test_b2_cancelling_the_task_awaiting_a_miss_drops_its_future_in_rust(
    tmp_path: Path, skills_dir: Path
) -> None:
    cache, entry, log = await a_pending_miss(tmp_path, skills_dir)
    before = native._in_flight()
    task = asyncio.ensure_future(cache.load("silent", entry))
    await until(lambda: reads_sent(log) == 1, "the miss sent its read")
    assert native._in_flight() == before + 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await until(lambda: native._in_flight() == before, "the cancelled miss left the runtime")
    # The connection outlives the cancelled request: the next call is answered.
    info = await within(cache.entry("silent", STYLE))
    assert info.entry.uri == STYLE


async def test_b2_wait_for_with_a_timeout_ends_the_miss_it_gives_up_on(
    tmp_path: Path, skills_dir: Path
) -> None:
    cache, entry, log = await a_pending_miss(tmp_path, skills_dir)
    before = native._in_flight()
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(cache.load("silent", entry), 0.5)
    assert reads_sent(log) == 1
    await until(lambda: native._in_flight() == before, "the abandoned miss left the runtime")
    # A file read from a loaded window ends the same way.
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(cache.load_all("silent", entry), 0.5)
    await until(lambda: native._in_flight() == before, "the abandoned batch left the runtime")


class Hanging:
    """A host session that never answers, and says when a request it holds is cancelled."""

    def __init__(self) -> None:
        self.waiting = 0
        self.cancelled = 0

    async def send_request(self, request: Any, result_type: Any, *args: Any, **kwargs: Any) -> Any:
        self.waiting += 1
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise


async def test_b2_cancelling_a_task_awaiting_the_hosts_session_cancels_the_request_on_its_loop(
    tmp_path: Path,
) -> None:
    cache = open_cache(tmp_path)
    hanging = Hanging()
    cache.connect_session("slow", hanging)
    before = native._in_flight()
    task = asyncio.ensure_future(cache.entry("slow", NOTES))
    await until(lambda: hanging.waiting == 1, "the request reached the session")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await until(lambda: hanging.cancelled == 1, "the session's request was cancelled")
    await until(lambda: native._in_flight() == before, "the cancelled call left the runtime")
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(cache.entry("slow", NOTES), 0.3)
    await until(lambda: hanging.cancelled == 2, "the abandoned request was cancelled")
    await until(lambda: native._in_flight() == before, "the abandoned call left the runtime")
