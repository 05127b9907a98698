"""T4: a hit never leaves the calling thread. A read or load the memory tier or a small cached
copy can answer is answered inside the call — no hop to skillcache's runtime, counted by the
extension (`_skillcache._hops()`, which counts every call handed to the runtime) — while a miss
still goes to the server, a tampered copy found on the way is quarantined and fetched exactly
once, and a cancelled call leaves nothing behind.

Nothing here is timed: `python/bench/bench.py` measures the fast path against Python's floor.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

import skillcache
from skillcache import _skillcache as native

from conftest import FIXTURE_SKILLS, hostile_argv, open_cache, within, write_skills

NOTES = "skill://release-notes/SKILL.md"
TEMPLATE = "templates/notes.md"
PALETTE = "assets/palette.bin"


def requests(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


async def warm_skill(
    tmp_path: Path, skills_dir: Path, log: Path, **options: object
) -> tuple[skillcache.SkillCache, skillcache.SkillEntry, skillcache.LoadedSkill]:
    """A cache over the counting server, its skill loaded and every file read once (the
    misses), so what follows is warm."""
    cache = open_cache(tmp_path, approval="not_required", **options)
    cache.connect_stdio("docs", hostile_argv(skills_dir, "honest", log))
    entry = (await within(cache.entry("docs", NOTES))).entry
    skill, _ = await within(cache.load_all("docs", entry))
    # The files reach the store behind the load (write-behind): wait for them, so that what
    # follows reads the store.
    await within(cache.flush())
    # A read through the full path leaves the evidence the fast path checks (a stored hit's).
    await within(skill.read_all())
    return cache, entry, skill


@pytest.mark.parametrize(
    "options",
    [
        {},  # the memory tier answers
        {"memory_tier": 0},  # re-hashed from disk (Rehash)
        {"memory_tier": 0, "isolation": "guaranteed"},  # the stored copy's evidence (Guaranteed)
    ],
    ids=["memory", "rehash", "guaranteed"],
)
async def test_t4_a_warm_read_and_load_are_answered_with_no_hop_to_the_runtime(
    options: dict[str, object], tmp_path: Path, skills_dir: Path
) -> None:
    log = tmp_path / "requests.log"
    cache, entry, skill = await warm_skill(tmp_path, skills_dir, log, **options)
    asked = len(requests(log))
    hits_before = sum(cache.stats()[k] for k in ("hits_hashed", "hits_evidence"))
    digest = next(f.digest for f in entry.files if f.uri.endswith(TEMPLATE))
    hops = native._hops()
    for _ in range(50):
        f = await skill.read(TEMPLATE)
        assert f.bytes == FIXTURE_SKILLS["release-notes"][TEMPLATE]
        assert (f.verified, f.provenance, f.digest) == (True, "cache", digest)
        again = await cache.load("docs", entry)
        assert again.skill_md.bytes == FIXTURE_SKILLS["release-notes"]["SKILL.md"]
    files = await skill.read_all()
    assert [f.bytes for f in files] == [
        FIXTURE_SKILLS["release-notes"][f.uri.removeprefix("skill://release-notes/")] for f in files
    ]
    assert native._hops() == hops  # not one call went to the runtime
    assert len(requests(log)) == asked  # nor to the server
    hits = sum(cache.stats()[k] for k in ("hits_hashed", "hits_evidence"))
    assert hits - hits_before == 50 + 50 + len(files)  # each file checked on each access


async def test_t4_a_miss_goes_to_the_runtime_and_the_server(tmp_path: Path, skills_dir: Path) -> None:
    log = tmp_path / "requests.log"
    cache = open_cache(tmp_path, approval="not_required")
    cache.connect_stdio("docs", hostile_argv(skills_dir, "honest", log))
    entry = (await within(cache.entry("docs", NOTES))).entry
    # A miss is polled once on the calling thread, then goes on on the runtime: one hop. On a
    # busy machine the calling thread can be descheduled long enough inside that one poll for
    # every step of the miss (the blocking read, the server's answer) to be done when the poll
    # looks: the miss is then answered in it, with no hop. Either way it reached the server.
    hops = native._hops()
    skill = await within(cache.load("docs", entry))  # SKILL.md: a miss
    assert native._hops() - hops in (0, 1)
    assert requests(log).count("resources/read") == 1
    hops = native._hops()
    f = await within(skill.read(TEMPLATE))  # another miss
    assert f.provenance == "server" and f.bytes == FIXTURE_SKILLS["release-notes"][TEMPLATE]
    assert native._hops() - hops in (0, 1)
    assert requests(log).count("resources/read") == 2
    hops = native._hops()
    again = await skill.read(TEMPLATE)  # now a hit: never a hop
    assert again.provenance == "cache" and native._hops() == hops


@pytest.mark.parametrize("isolation", ["rehash", "guaranteed"])
async def test_t4_a_copy_tampered_on_disk_is_quarantined_and_fetched_once_not_served(
    isolation: str, tmp_path: Path, skills_dir: Path
) -> None:
    log = tmp_path / "requests.log"
    cache, entry, skill = await warm_skill(
        tmp_path, skills_dir, log, memory_tier=0, isolation=isolation
    )
    honest = FIXTURE_SKILLS["release-notes"][TEMPLATE]
    digest = next(f.digest for f in entry.files if f.uri.endswith(TEMPLATE))
    (blob,) = [
        p for p in (tmp_path / "cache" / "root" / "origins").rglob("*")
        if p.is_file() and p.name == digest.removeprefix("sha256:")[2:]
    ]
    blob.chmod(0o644)
    blob.write_bytes(b"X" + honest[1:])  # same size: only the hash can tell
    blob.chmod(0o444)
    reads = requests(log).count("resources/read")
    stats = cache.stats()
    hops = native._hops()
    f = await within(skill.read(TEMPLATE))
    assert f.bytes == honest and f.retried and f.provenance == "server"
    assert native._hops() == hops + 1  # the fast path declined it: the full path took over
    assert requests(log).count("resources/read") == reads + 1  # exactly one refetch
    after = cache.stats()
    assert (after["quarantines"], after["retries"]) == (stats["quarantines"] + 1, stats["retries"] + 1)
    hits = ("hits_hashed", "hits_evidence")
    assert [after[k] for k in hits] == [stats[k] for k in hits]  # the tampered copy was no hit
    healed = await skill.read(TEMPLATE)  # the refetched copy, kept: a hit again
    assert healed.bytes == honest and healed.provenance == "cache"
    assert native._hops() == hops + 1
    assert (await within(cache.verify())).is_clean


BIG = "data/big.bin"
BIG_SKILL = {
    "big-data": {
        "SKILL.md": b"---\nname: big-data\ndescription: One file over the inline bound.\n---\nRead data/big.bin.\n",
        # Over the 64 KiB a call reads and hashes on the event loop's thread.
        BIG: bytes(range(256)) * 512,
    }
}


READS = 10


async def test_t4_a_file_over_the_inline_bound_is_hashed_off_the_event_loop(tmp_path: Path) -> None:
    skills = write_skills(tmp_path / "big-skills", BIG_SKILL)
    log = tmp_path / "requests.log"
    for tier, hop in [(0, 1), (None, 0)]:
        cache = open_cache(tmp_path, f"tier-{tier}", approval="not_required", memory_tier=tier)
        cache.connect_stdio("docs", hostile_argv(skills, "honest", log))
        entry = (await within(cache.entry("docs", "skill://big-data/SKILL.md"))).entry
        skill = await within(cache.load("docs", entry))
        await within(skill.read(BIG))  # the miss
        await within(cache.flush())  # stored behind the read: wait for it
        await within(skill.read(BIG))  # read back from the store (and kept in memory, if on)
        hops = native._hops()
        for _ in range(READS):
            f = await within(skill.read(BIG))
            assert f.bytes == BIG_SKILL["big-data"][BIG] and f.provenance == "cache"
        # Re-hashed from disk: on the runtime's blocking threads. From the memory tier (bytes
        # this process verified, nothing to hash): on the calling thread, never a hop. A read
        # handed to the blocking threads hops unless those threads finish it before the call's
        # first poll looks (a preempted calling thread on a loaded machine): so of READS reads,
        # at least one hops, and none hops twice.
        if hop:
            assert 1 <= native._hops() - hops <= READS, tier
        else:
            assert native._hops() == hops, tier


async def test_t4_a_cancelled_read_leaves_nothing_behind(tmp_path: Path, skills_dir: Path) -> None:
    log = tmp_path / "requests.log"
    cache, entry, skill = await warm_skill(tmp_path, skills_dir, log)
    stats = cache.stats()
    hops = native._hops()
    # Cancelled before its first step: the call never starts.
    task = asyncio.ensure_future(skill.read(TEMPLATE))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cache.stats() == stats and native._hops() == hops
    # A hit cannot be cancelled half-way: it completes in its first step, whole.
    task = asyncio.ensure_future(skill.read(TEMPLATE))
    await asyncio.sleep(0)
    task.cancel()
    assert (await task).bytes == FIXTURE_SKILLS["release-notes"][TEMPLATE]
    # A cold load cancelled on the runtime: nothing half-kept, and the next load is whole.
    cold = open_cache(tmp_path, "cold", approval="not_required")
    cold.connect_stdio("docs", hostile_argv(skills_dir, "honest", tmp_path / "cold.log"))
    task = asyncio.ensure_future(cold.load_all("docs", entry))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert (await within(cold.verify())).is_clean
    _, files = await within(cold.load_all("docs", entry))
    assert {f.uri: f.bytes for f in files} == {
        f"skill://release-notes/{rel}": data for rel, data in FIXTURE_SKILLS["release-notes"].items()
    }


async def test_t4_two_thousand_concurrent_reads_fetch_once_then_hit(
    tmp_path: Path, skills_dir: Path
) -> None:
    log = tmp_path / "requests.log"
    cache = open_cache(tmp_path, approval="not_required")
    cache.connect_stdio("docs", hostile_argv(skills_dir, "honest", log))
    entry = (await within(cache.entry("docs", NOTES))).entry
    skill = await within(cache.load("docs", entry))
    files = await within(asyncio.gather(*(skill.read(PALETTE) for _ in range(2000))))
    assert all(f.bytes == FIXTURE_SKILLS["release-notes"][PALETTE] for f in files)
    assert requests(log).count("resources/read") == 2  # SKILL.md, then the palette once
    hops = native._hops()
    files = await within(asyncio.gather(*(skill.read(PALETTE) for _ in range(2000))))
    assert all(f.provenance == "cache" for f in files) and native._hops() == hops


def test_t4_two_threads_with_their_own_loops_read_one_cache(tmp_path: Path, skills_dir: Path) -> None:
    log = tmp_path / "requests.log"
    cache = open_cache(tmp_path, approval="not_required", memory_tier=0)
    cache.connect_stdio("docs", hostile_argv(skills_dir, "honest", log))
    entry = asyncio.run(cache.entry("docs", NOTES)).entry
    results: list[object] = []

    def reader() -> None:
        async def main() -> list[bytes]:
            skill = await within(cache.load("docs", entry))
            return [(await within(skill.read(rel))).bytes for rel in (TEMPLATE, PALETTE) * 100]

        try:
            results.append(asyncio.run(main()))
        except BaseException as e:  # reported by the assertion below
            results.append(e)

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    expected = [FIXTURE_SKILLS["release-notes"][rel] for rel in (TEMPLATE, PALETTE) * 100]
    assert results == [expected, expected]
    # Each file was fetched once, whichever thread asked first.
    assert requests(log).count("resources/read") == 3


@pytest.mark.parametrize("call", ["read", "read_all", "load", "load_all"])
async def test_t4_a_loop_of_awaited_hits_gives_the_event_loop_turns_for_timers_and_signals(
    call: str, tmp_path: Path, skills_dir: Path
) -> None:
    """A hit is answered inside the call, so a loop that only awaits hits never suspends on its
    own: the package yields a turn every so many hits. Before it did, a timer due in 10 ms and a
    signal sent at once both waited for the whole loop (its cap below), however long it ran."""
    import os
    import signal

    log = tmp_path / "requests.log"
    cache, entry, skill = await warm_skill(tmp_path, skills_dir, log)
    hit = {
        "read": lambda: skill.read(TEMPLATE),
        "read_all": lambda: skill.read_all(),
        "load": lambda: cache.load("docs", entry),
        "load_all": lambda: cache.load_all("docs", entry),
    }[call]
    loop = asyncio.get_running_loop()
    seen: dict[str, int] = {}
    done = 0
    loop.call_later(0.01, lambda: seen.setdefault("timer", done))
    loop.add_signal_handler(signal.SIGUSR1, lambda: seen.setdefault("signal", done))
    try:
        os.kill(os.getpid(), signal.SIGUSR1)
        cap = 20_000
        hops = native._hops()
        while done < cap and len(seen) < 2:
            await hit()
            done += 1
        assert native._hops() == hops  # every call was a hit
    finally:
        loop.remove_signal_handler(signal.SIGUSR1)
    assert done < cap, f"the loop of {done} hits never let a timer or a signal run: {seen}"
    assert set(seen) == {"timer", "signal"}


@pytest.mark.parametrize("reference", ["../other/SKILL.md", "not-listed.md"], ids=["outside", "unlisted"])
async def test_t4_a_loop_of_awaited_refused_reads_gives_the_event_loop_turns(
    reference: str, tmp_path: Path, skills_dir: Path
) -> None:
    """A refusal answered on the calling thread (a reference outside the root or not listed)
    raises inside the call as fast as a hit answers: a host loop retrying model-chosen references
    would never give the event loop a turn unless refusals are counted as hits are. Before they
    were, a timer due in 10 ms waited for the whole loop (its cap below)."""
    log = tmp_path / "requests.log"
    _, _, skill = await warm_skill(tmp_path, skills_dir, log)
    loop = asyncio.get_running_loop()
    seen: dict[str, int] = {}
    done = 0
    loop.call_later(0.01, lambda: seen.setdefault("timer", done))
    cap = 20_000
    hops = native._hops()
    sent = requests(log)
    while done < cap and not seen:
        with pytest.raises(skillcache.Error):
            await skill.read(reference)
        done += 1
    assert native._hops() == hops  # every refusal was answered on the calling thread
    assert done < cap, f"the loop of {done} refused reads never let a timer run"
    assert requests(log) == sent  # nothing was sent for a refusal
