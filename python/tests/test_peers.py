"""Y2: honest loads against real peers — `skillcache serve`, the official TS server and FastMCP,
over stdio and Streamable HTTP — through skillcache's own transports (`connect_stdio`,
`connect_http`) and through the host's own `mcp.ClientSession` (`connect_session`). Every byte
handed out is compared with the file on disk, every digest with the file's SHA-256.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import skillcache

from conftest import (
    CountingSession,
    FIXTURE_SKILLS,
    files_on_disk,
    open_cache,
    sha256,
    start_peer,
    within,
)

# FastMCP declares the skills extension only in the 2026-07-28 flow (server/discover) and the
# TS server speaks 2025-11-25 over stdio: both lifecycles are crossed.
PEERS = ["serve-stdio", "serve-http", "ts-stdio", "ts-http", "fastmcp-http"]


async def load_every_skill_and_compare(
    cache: skillcache.SkillCache, origin: str, skills: Path
) -> list[skillcache.SkillFile]:
    """Lists, approves and loads every skill, reads every file, and checks each byte and digest
    against the disk; returns every file read."""
    listing = await within(cache.list(origin))
    refused = [item for item in listing if isinstance(item, skillcache.Error)]
    assert refused == [], refused
    entries = [item.entry for item in listing if isinstance(item, skillcache.EntryInfo)]
    assert sorted(e.name for e in entries) == sorted(FIXTURE_SKILLS)
    read: list[skillcache.SkillFile] = []
    for entry in entries:
        await within(cache.approve(origin, entry))
        skill = await within(cache.load(origin, entry))
        disk = files_on_disk(skills, entry)
        assert skill.skill_md.bytes == disk[entry.uri]
        assert skill.skill_md.verified
        files = await within(skill.read_all())
        assert [f.uri for f in files] == [f.uri for f in entry.files]
        for f in files:
            assert f.bytes == disk[f.uri], f.uri
            assert f.digest == sha256(disk[f.uri])
            assert f.verified and f.origin == origin
        read.extend(files)
    return read


@pytest.mark.parametrize("kind", PEERS)
async def test_y2_every_skill_loads_verified_byte_for_byte_through_connect(
    kind: str, tmp_path: Path, skills_dir: Path
) -> None:
    with start_peer(kind, skills_dir, tmp_path) as peer:
        cache = open_cache(tmp_path)
        peer.connect(cache, "peer")
        cold = await load_every_skill_and_compare(cache, "peer", skills_dir)
        assert {f.provenance for f in cold} <= {"server", "cache"}
        # The first cache stores its files behind its loads: a second cache on the root finds
        # them once it has (another cache cannot see what is on its way).
        await within(cache.flush())
        # Warm, from a fresh handle on the same root: every byte from the cache, re-hashed.
        warm_cache = open_cache(tmp_path)
        peer.connect(warm_cache, "peer")
        warm = await load_every_skill_and_compare(warm_cache, "peer", skills_dir)
        assert {f.provenance for f in warm} == {"cache"}
        stats = warm_cache.stats()
        assert stats["misses"] == 0
        assert stats["hits_hashed"] + stats["hits_evidence"] == len(warm) + len(FIXTURE_SKILLS)


@pytest.mark.parametrize("kind", PEERS)
async def test_y1_every_skill_loads_verified_byte_for_byte_through_the_hosts_session(
    kind: str, tmp_path: Path, skills_dir: Path
) -> None:
    with start_peer(kind, skills_dir, tmp_path) as peer:
        async with peer.session() as session:
            counting = CountingSession(session)
            cache = open_cache(tmp_path)
            cache.connect_session("peer", counting)
            files = await load_every_skill_and_compare(cache, "peer", skills_dir)
            # Every request went over the host's session; each file was read once (V1: none
            # before its load), and the SKILL.md files again by read_all from the cache.
            assert counting.count("skills/list") == 1
            assert counting.count("resources/read") == len(files)
            assert set(counting.methods) == {"skills/list", "resources/read"}
