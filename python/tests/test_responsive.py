"""Y1: blocking work never blocks the event loop. A 16 MiB skill is loaded (fetched, verified,
stored) and loaded again (re-hashed from disk) while a ticker task keeps ticking on the same
loop, and a thread that needs the GIL keeps running: the Rust work runs on skillcache's own
threads with the GIL released.

Nothing here times anything: a loop blocked for the whole load would let the ticker run zero
times while the load is pending, whatever the machine's speed.
"""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

import pytest

import skillcache

from conftest import open_cache, serve_argv, sha256, start_peer, within, write_skills

BIG = (16 << 20) - 4096  # with its SKILL.md, a skill just inside R-W7's 16 MiB


@pytest.fixture
def big_skill(tmp_path: Path) -> Path:
    return write_skills(
        tmp_path / "skills",
        {
            "big-data": {
                "SKILL.md": b"---\nname: big-data\ndescription: Carries one large reference table.\n---\nSee data/table.bin.\n",
                "data/table.bin": os.urandom(BIG),
            }
        },
    )


async def while_ticking(work: asyncio.Future | asyncio.Task) -> tuple[object, int, int]:
    """Awaits `work` while a ticker task and a GIL-bound thread run; returns its result and how
    often each of them ran while it was pending."""
    ticks = 0
    spins = 0
    stop = threading.Event()

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.002)
            ticks += 1

    def spinner() -> None:
        nonlocal spins
        while not stop.is_set():
            spins += 1  # Python bytecode: runs only while it holds the GIL
            stop.wait(0.002)

    thread = threading.Thread(target=spinner)
    thread.start()
    task = asyncio.ensure_future(ticker())
    try:
        result = await within(work)
    finally:
        task.cancel()
        stop.set()
        thread.join()
    return result, ticks, spins


async def load_and_check(cache: skillcache.SkillCache, origin: str, skills: Path) -> str:
    info = await within(cache.entry(origin, "skill://big-data/SKILL.md"))
    (skill, files) = await within(cache.load_all(origin, info.entry))
    table = next(f for f in files if f.uri.endswith("table.bin"))
    assert len(table) == BIG
    assert table.bytes == (skills / "big-data" / "data" / "table.bin").read_bytes()
    assert table.digest == sha256(table.bytes)
    return table.provenance


async def test_y1_the_event_loop_keeps_ticking_while_a_16_mib_skill_loads_cold_and_warm(
    tmp_path: Path, big_skill: Path
) -> None:
    cache = open_cache(tmp_path, approval="not_required")
    cache.connect_stdio("local", serve_argv(big_skill, tmp_path))
    provenance, ticks, spins = await while_ticking(
        asyncio.ensure_future(load_and_check(cache, "local", big_skill))
    )
    assert provenance == "server"
    assert ticks >= 3 and spins >= 3, (ticks, spins)
    await within(cache.flush())  # the files reach the store behind the load
    # Warm, from a new handle (no memory tier): re-hashed from disk, still off the loop.
    warm = open_cache(tmp_path, approval="not_required")
    warm.connect_stdio("local", serve_argv(big_skill, tmp_path))
    provenance, ticks, spins = await while_ticking(
        asyncio.ensure_future(load_and_check(warm, "local", big_skill))
    )
    assert provenance == "cache"
    assert ticks >= 1 and spins >= 1, (ticks, spins)


async def test_y1_the_event_loop_keeps_ticking_while_a_16_mib_skill_loads_through_the_hosts_session(
    tmp_path: Path, big_skill: Path
) -> None:
    with start_peer("serve-stdio", big_skill, tmp_path) as peer:
        async with peer.session() as session:
            cache = open_cache(tmp_path, approval="not_required")
            cache.connect_session("local", session)
            provenance, ticks, _ = await while_ticking(
                asyncio.ensure_future(load_and_check(cache, "local", big_skill))
            )
            assert provenance == "server"
            assert ticks >= 3, ticks
