"""The failure paths from Python: tampered bytes (V2, V8), the approval gate (P1, A2), a lock in
force (L1), offline mode (L2), deadlines (B1) and the message bound (B2) over the host's session.

Hostile input comes from servers and sessions that lie on purpose (`hostile_server.py`,
`TamperingSession`, the fakes below); every wait is under a deadline (`within`).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

import skillcache

from conftest import (
    CountingSession,
    FIXTURE_SKILLS,
    TamperingSession,
    hostile_argv,
    open_cache,
    serve_argv,
    sha256,
    start_peer,
    within,
)

NOTES = "skill://release-notes/SKILL.md"


def requests_logged(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


# --- V2/V8: tampered bytes --------------------------------------------------------------------


async def test_v2_a_tampered_file_from_a_server_raises_verify_error_with_both_digests_and_nothing_is_stored(
    tmp_path: Path, skills_dir: Path
) -> None:
    log = tmp_path / "requests.log"
    cache = open_cache(tmp_path)
    cache.connect_stdio("hostile", hostile_argv(skills_dir, "tamper", log))
    info = await within(cache.entry("hostile", NOTES))
    await within(cache.approve("hostile", info.entry))
    honest = (skills_dir / "release-notes" / "SKILL.md").read_bytes()
    flipped = bytes([honest[0] ^ 0x01]) + honest[1:]
    with pytest.raises(skillcache.VerifyError) as caught:
        await within(cache.load("hostile", info.entry))
    e = caught.value
    assert isinstance(e, skillcache.Error)
    assert (e.origin, e.uri, e.mismatch) == ("hostile", NOTES, "digest")
    assert e.expected == sha256(honest) == info.entry.files[0].digest
    assert e.actual == sha256(flipped)
    assert "verification failed" in str(e)
    # Nothing was kept: no blob, and the next load asks the server again (no cached copy).
    assert (await within(cache.inventory())).blobs == 0
    with pytest.raises(skillcache.VerifyError):
        await within(cache.load("hostile", info.entry))
    assert requests_logged(log).count("resources/read") == 2


async def test_v2_bytes_tampered_in_the_hosts_session_raise_verify_error_and_nothing_is_stored(
    tmp_path: Path, skills_dir: Path
) -> None:
    with start_peer("serve-stdio", skills_dir, tmp_path) as peer:
        async with peer.session() as session:
            tampering = TamperingSession(session)
            cache = open_cache(tmp_path)
            cache.connect_session("local", tampering)
            info = await within(cache.entry("local", NOTES))
            await within(cache.approve("local", info.entry))
            with pytest.raises(skillcache.VerifyError) as caught:
                await within(cache.load("local", info.entry))
            assert caught.value.mismatch == "digest"
            assert caught.value.expected == info.entry.files[0].digest
            assert caught.value.actual != caught.value.expected
            assert (await within(cache.inventory())).blobs == 0
            # The same skill through the honest session loads: the failure was the bytes'.
            cache.connect_session("local", CountingSession(session))
            skill = await within(cache.load("local", info.entry))
            assert skill.skill_md.bytes == FIXTURE_SKILLS["release-notes"]["SKILL.md"]


# --- P1/A2: the approval gate -----------------------------------------------------------------


async def test_p1_an_unapproved_load_raises_declined_before_any_resources_read(
    tmp_path: Path, skills_dir: Path
) -> None:
    with start_peer("serve-stdio", skills_dir, tmp_path) as peer:
        async with peer.session() as session:
            counting = CountingSession(session)
            cache = open_cache(tmp_path)
            cache.connect_session("local", counting)
            info = await within(cache.entry("local", NOTES))
            with pytest.raises(skillcache.DeclinedError) as caught:
                await within(cache.load("local", info.entry))
            e = caught.value
            assert (e.origin, e.skill, e.uri, e.reason) == ("local", NOTES, NOTES, "not_approved")
            assert e.changes is None
            assert counting.methods == ["skills/get"]
            assert not await within(cache.is_approved("local", info.entry))


async def test_p1_the_gate_holds_over_skillcaches_own_transport_too(
    tmp_path: Path, skills_dir: Path
) -> None:
    log = tmp_path / "requests.log"
    cache = open_cache(tmp_path)
    cache.connect_stdio("hostile", hostile_argv(skills_dir, "honest", log))
    info = await within(cache.entry("hostile", NOTES))
    with pytest.raises(skillcache.DeclinedError):
        await within(cache.load("hostile", info.entry))
    assert "resources/read" not in requests_logged(log)


async def test_a2_a_changed_file_revokes_the_approval_and_the_load_names_the_change(
    tmp_path: Path, skills_dir: Path
) -> None:
    with start_peer("serve-stdio", skills_dir, tmp_path) as peer:
        async with peer.session() as session:
            counting = CountingSession(session)
            cache = open_cache(tmp_path)
            cache.connect_session("local", counting)
            info = await within(cache.entry("local", NOTES))
            await within(cache.approve("local", info.entry))
            notes = skills_dir / "release-notes" / "templates" / "notes.md"
            notes.write_bytes(b"# {{version}}, edited\n")
            changed = await within(cache.refresh("local", NOTES))
            assert changed.revoked
            uri = "skill://release-notes/templates/notes.md"
            assert [c[0] for c in changed.diff.changed] == [uri]
            with pytest.raises(skillcache.DeclinedError) as caught:
                await within(cache.load("local", changed.entry))
            assert caught.value.reason == "revoked"
            assert [c[0] for c in caught.value.changes.changed] == [uri]
            assert counting.count("resources/read") == 0


# --- L1: a lock in force ----------------------------------------------------------------------


async def test_l1_a_skill_that_drifted_from_the_lock_is_refused_naming_the_change_before_any_read(
    tmp_path: Path, skills_dir: Path
) -> None:
    with start_peer("serve-stdio", skills_dir, tmp_path) as peer:
        async with peer.session() as session:
            first = open_cache(tmp_path, "first")
            first.connect_session("local", session)
            pinned = await within(first.entry("local", NOTES))
            lock = skillcache.LockFile()
            lock.insert("local", pinned.entry)
            lock.write(tmp_path / "skills.lock")

            (skills_dir / "release-notes" / "templates" / "notes.md").write_bytes(b"drifted\n")
            counting = CountingSession(session)
            locked = open_cache(
                tmp_path,
                "locked",
                approval="not_required",
                locked=skillcache.LockFile.read(tmp_path / "skills.lock"),
            )
            locked.connect_session("local", counting)
            now = await within(locked.entry("local", NOTES))
            assert now.entry.binding != pinned.entry.binding
            with pytest.raises(skillcache.DeclinedError) as caught:
                await within(locked.load("local", now.entry))
            e = caught.value
            assert e.reason == "drift"
            assert [c[0] for c in e.changes.changed] == ["skill://release-notes/templates/notes.md"]
            assert e.changes.added == [] and e.changes.removed == []
            # A skill the lock does not list is declined too.
            other = await within(locked.entry("local", "skill://code-style/SKILL.md"))
            with pytest.raises(skillcache.DeclinedError) as not_locked:
                await within(locked.load("local", other.entry))
            assert not_locked.value.reason == "not_locked"
            assert counting.count("resources/read") == 0
            # The skill as pinned is admitted by the lock itself.
            lock.check("local", pinned.entry)
            with pytest.raises(skillcache.DeclinedError):
                lock.check("local", now.entry)


# --- L2: offline ------------------------------------------------------------------------------


class NoContact:
    """A session that fails any request: offline mode must never send one."""

    def __init__(self) -> None:
        self.methods: list[str] = []

    async def send_request(self, request: Any, result_type: Any, *args: Any, **kwargs: Any) -> Any:
        self.methods.append(request.method)
        raise AssertionError(f"offline mode sent {request.method}")


async def test_l2_offline_mode_serves_the_cache_and_contacts_nothing(
    tmp_path: Path, skills_dir: Path
) -> None:
    # Fill the cache online, from a server whose entries stay fresh for an hour.
    online = open_cache(tmp_path, approval="not_required")
    online.connect_stdio("local", serve_argv(skills_dir, tmp_path) + ["--ttl-ms", "3600000"])
    info = await within(online.entry("local", NOTES))
    skill = await within(online.load("local", info.entry))
    await within(skill.read_all())
    del online, skill

    offline = open_cache(tmp_path, approval="not_required", offline=True)
    silent = NoContact()
    offline.connect_session("local", silent)
    # A server that cannot even start: it is never started.
    offline.connect_stdio("gone", [str(tmp_path / "no-such-server")])
    cached = await within(offline.entry("local", NOTES))
    assert cached.from_cache and not cached.stale
    skill = await within(offline.load("local", cached.entry))
    files = await within(skill.read_all())
    assert {f.provenance for f in files} == {"cache"}
    assert [f.bytes for f in files] == [
        FIXTURE_SKILLS["release-notes"][f.uri.removeprefix("skill://release-notes/")]
        for f in files
    ]
    with pytest.raises(skillcache.OfflineError) as caught:
        await within(offline.entry("local", "skill://code-style/SKILL.md"))
    assert (caught.value.origin, caught.value.missing) == ("local", "entry")
    assert caught.value.uri == "skill://code-style/SKILL.md"
    with pytest.raises(skillcache.OfflineError) as gone:
        await within(offline.entry("gone", NOTES))
    assert gone.value.missing == "entry"
    assert silent.methods == []


async def test_l2_offline_a_stale_entry_is_refused_unless_allowed_and_then_reported_stale(
    tmp_path: Path, skills_dir: Path
) -> None:
    online = open_cache(tmp_path, approval="not_required")
    online.connect_stdio("local", serve_argv(skills_dir, tmp_path))  # ttlMs 0: stale at once
    await within(online.load("local", (await within(online.entry("local", NOTES))).entry))
    del online
    with pytest.raises(skillcache.OfflineError) as caught:
        await within(open_cache(tmp_path, offline=True).entry("local", NOTES))
    assert caught.value.missing == "stale" and caught.value.age_ms is not None
    allowed = open_cache(tmp_path, offline=True, allow_stale=True, approval="not_required")
    stale = await within(allowed.entry("local", NOTES))
    assert stale.stale
    skill = await within(allowed.load("local", stale.entry))
    assert skill.skill_md.provenance == "cache"


# --- B1/B2: deadlines and the message bound over the host's session --------------------------


class Hanging:
    """A session whose requests never answer; it records the cancellation it gets."""

    def __init__(self) -> None:
        self.cancelled = asyncio.Event()

    async def send_request(self, request: Any, result_type: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            raise


async def test_b1_a_session_request_past_the_deadline_raises_timeout_and_is_cancelled_on_the_loop(
    tmp_path: Path,
) -> None:
    cache = open_cache(tmp_path, request_timeout=0.3)
    hanging = Hanging()
    cache.connect_session("slow", hanging)
    with pytest.raises(skillcache.TimeoutError) as caught:
        await within(cache.entry("slow", NOTES))
    e = caught.value
    assert isinstance(e, TimeoutError) and isinstance(e, skillcache.SourceError)
    assert (e.origin, e.method, e.after) == ("slow", "skills/get", 0.3)
    # The abandoned request does not linger in the host's session.
    await within(hanging.cancelled.wait())
    assert cache.stats()["timeouts"] == 1


class Answering:
    """A session that answers every request with `answer(method, request)`."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer

    async def send_request(self, request: Any, result_type: Any, *args: Any, **kwargs: Any) -> Any:
        result = self.answer(request.method, request)
        if isinstance(result, BaseException):
            raise result
        return result


async def test_b2_an_answer_over_the_message_bound_is_refused_before_it_is_parsed(
    tmp_path: Path,
) -> None:
    bound = 2 * (16 << 20) + (64 << 10)
    huge = {"skills": [], "padding": "x" * (bound + 1)}
    cache = open_cache(tmp_path)
    cache.connect_session("big", Answering(lambda method, _: huge))
    with pytest.raises(skillcache.MessageTooLargeError) as caught:
        await within(cache.list("big"))
    assert (caught.value.method, caught.value.max) == ("skills/list", bound)
    # Raised limits raise the bound with them: the same answer is read (and has no skills).
    raised = open_cache(tmp_path, "raised", max_total_bytes=32 << 20)
    raised.connect_session("big", Answering(lambda method, _: huge))
    assert await within(raised.list("big")) == []


async def test_w_a_bad_entry_in_a_listing_is_its_own_error_and_the_rest_is_listed(
    tmp_path: Path,
) -> None:
    md = FIXTURE_SKILLS["code-style"]["SKILL.md"]
    good = {
        "uri": "skill://code-style/SKILL.md",
        "frontmatter": {"name": "code-style", "description": "Checks code against the team's style rules."},
        "resources": [{"uri": "skill://code-style/SKILL.md", "digest": sha256(md), "size": len(md)}],
    }
    # Too large for the limits (R-W7), and a digest that is not SHA-256 (R-W1).
    bad = dict(good, uri="skill://big/code-style/SKILL.md", resources=[
        {"uri": "skill://big/code-style/SKILL.md", "digest": sha256(md), "size": 17 << 20}
    ])
    worse = dict(good, uri="skill://odd/code-style/SKILL.md", resources=[
        {"uri": "skill://odd/code-style/SKILL.md", "digest": "md5:abc", "size": 1}
    ])
    cache = open_cache(tmp_path)
    cache.connect_session("mixed", Answering(lambda method, _: {"skills": [good, bad, worse]}))
    items = await within(cache.list("mixed"))
    kinds = sorted(type(i).__name__ for i in items)
    assert kinds == ["EntryError", "EntryInfo", "LimitExceededError"]
    limit = next(i for i in items if isinstance(i, skillcache.LimitExceededError))
    assert (limit.limit, limit.declared, limit.max) == ("total_bytes", 17 << 20, 16 << 20)
    invalid = next(i for i in items if type(i) is skillcache.EntryError)
    assert invalid.kind == "invalid" and invalid.field is not None and invalid.rule is not None


async def test_b1_a_server_error_and_a_broken_session_keep_their_kind(tmp_path: Path) -> None:
    from mcp.shared.exceptions import MCPError

    def refuse(method: str, _: Any) -> BaseException:
        return MCPError(code=-32602, message="unknown skill")

    cache = open_cache(tmp_path)
    cache.connect_session("refusing", Answering(refuse))
    with pytest.raises(skillcache.ServerError) as server:
        await within(cache.entry("refusing", NOTES))
    assert (server.value.method, server.value.code, server.value.server_message) == (
        "skills/get",
        -32602,
        "unknown skill",
    )
    cache.connect_session("broken", Answering(lambda m, _: ConnectionResetError("peer went away")))
    with pytest.raises(skillcache.TransportError) as broken:
        await within(cache.entry("broken", NOTES))
    assert broken.value.method == "skills/get"
    assert any("peer went away" in c for c in broken.value.causes)


class ServerSaid(Exception):
    """What a host's own session raises for a JSON-RPC error, as the SDK does: `.error` with
    the server's `code` and `message` (a JSON `\\ud800` escape kept as a lone surrogate)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.error = type("ErrorData", (), {"code": -32000, "message": message})()


async def test_b1_a_servers_huge_message_with_a_lone_surrogate_is_a_bounded_server_error(
    tmp_path: Path,
) -> None:
    """A server's message with a lone surrogate and megabytes of text is still the server's
    refusal (its code kept) and no part of the report holds more than the bound of it; nor does
    a broken session's own huge text. Before, the message could not be taken as Rust text, and
    the fallback kept all 3.6 MB of it in `str(e)` and `causes`."""
    evil = "\x1b]0;pwned\x07\r\nX" * 300_000
    cache = open_cache(tmp_path)
    cache.connect_session("refusing", Answering(lambda m, _: ServerSaid("\ud800" + evil)))
    with pytest.raises(skillcache.ServerError) as server:
        await within(cache.entry("refusing", NOTES))
    e = server.value
    assert e.code == -32000
    assert e.server_message.startswith("\ufffd") and "\\x1b]0;pwned" in e.server_message[:20]
    cache.connect_session("broken", Answering(lambda m, _: ConnectionResetError("\ud800" + evil)))
    with pytest.raises(skillcache.TransportError) as broken:
        await within(cache.entry("broken", NOTES))
    for raised in (e, broken.value):
        parts = [str(raised), raised.server_message or "", *raised.causes]
        assert max(map(len, parts)) < 8192, [len(p) for p in parts]
        assert not any(c in p for p in parts for c in "\x1b\x07\r\n"), parts
    assert any(c.startswith("ConnectionResetError: \ufffd") for c in broken.value.causes)


async def test_b1_a_real_servers_refusal_is_a_server_error(tmp_path: Path, skills_dir: Path) -> None:
    cache = open_cache(tmp_path)
    cache.connect_stdio("local", serve_argv(skills_dir, tmp_path))
    with pytest.raises(skillcache.ServerError) as caught:
        await within(cache.entry("local", "skill://no-such-skill/SKILL.md"))
    assert caught.value.code == -32602 and caught.value.method == "skills/get"
