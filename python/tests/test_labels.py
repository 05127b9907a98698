"""B3: text that is not well-formed Unicode never names anything. An origin label or a file
reference with a lone surrogate (`"team\\udcff"`: a `str` decoded with `surrogateescape`, or a
JSON `\\ud800` escape) is refused — a `ConfigError` for a label at every call that takes one, a
`UriError` for a reference — and never replaced by U+FFFD, so two labels never become one
origin and a reference never reads the file whose name holds U+FFFD.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest

import skillcache

from conftest import open_cache, serve_argv, within, write_skills

NOTES = "skill://release-notes/SKILL.md"
BAD_LABELS = ["team\udcff", "team\ud800", "team\udbff"]


class Unused:
    """A host session nothing is sent over."""

    async def send_request(self, *args: Any) -> Any:
        raise AssertionError("nothing may be sent")


def refused_label(call: Callable[[], Any], label: str) -> skillcache.ConfigError:
    with pytest.raises(skillcache.ConfigError) as caught:
        call()
    e = caught.value
    shown = str.encode(label, "utf-8", "backslashreplace").decode()
    message = str(e)
    assert "origin label" in message and shown in message, message
    assert "not well-formed Unicode" in message and f"U+{ord(label[-1]):04X}" in message, message
    assert isinstance(e.__cause__, UnicodeEncodeError)
    return e


async def test_b3_a_label_with_a_lone_surrogate_is_refused_at_every_connect_and_every_call(
    tmp_path: Path, skills_dir: Path
) -> None:
    cache = open_cache(tmp_path)
    entry = None
    lock = skillcache.LockFile()
    for label in BAD_LABELS:
        refused_label(lambda: cache.connect_stdio(label, serve_argv(skills_dir, tmp_path)), label)
        refused_label(lambda: cache.connect_http(label, "http://127.0.0.1:9/mcp"), label)
        refused_label(lambda: cache.connect_session(label, Unused()), label)
        refused_label(lambda: cache.notify(label), label)
        refused_label(lambda: cache.disconnect(label), label)
        for name in ["list", "purge", "verify", "cached_entries"]:
            refused_label(lambda: getattr(cache._native, name)(label), label)
        refused_label(lambda: cache._native.entry(label, NOTES), label)
        refused_label(lambda: cache._native.purge_absent([label]), label)
    # With an entry in hand, the calls that take one refuse the label the same way.
    cache.connect_stdio("docs", serve_argv(skills_dir, tmp_path))
    entry = (await within(cache.entry("docs", NOTES))).entry
    for label in BAD_LABELS:
        for name in ["approve", "is_approved", "load", "load_all"]:
            refused_label(lambda: getattr(cache._native, name)(label, entry), label)
        refused_label(lambda: lock.insert(label, entry), label)
        refused_label(lambda: lock.check(label, entry), label)
    # The coroutines raise it where they are awaited.
    with pytest.raises(skillcache.ConfigError):
        await within(cache.entry("team\udcff", NOTES))


async def test_b3_two_labels_with_lone_surrogates_never_become_the_replacement_characters_origin(
    tmp_path: Path, skills_dir: Path
) -> None:
    cache = open_cache(tmp_path, approval="not_required")
    # "team\ufffd" is a label of its own, bound to a server; the surrogate labels are not it.
    cache.connect_stdio("team\ufffd", serve_argv(skills_dir, tmp_path))
    info = await within(cache.entry("team\ufffd", NOTES))
    await within(cache.load("team\ufffd", info.entry))
    for label in ["team\ud800", "team\udbff"]:
        with pytest.raises(skillcache.ConfigError):
            await within(cache.entry(label, NOTES))
        with pytest.raises(skillcache.ConfigError):
            await within(cache.load(label, info.entry))
    assert await within(cache.origins()) == ["team\ufffd"]


async def test_b3_a_reference_with_a_lone_surrogate_is_a_uri_error_and_never_reads_the_u_fffd_file(
    tmp_path: Path,
) -> None:
    skills = write_skills(
        tmp_path / "skills",
        {
            "release-notes": {
                "SKILL.md": b"---\nname: release-notes\ndescription: Drafts release notes.\n---\nSee templates.\n",
                "templates/n\ufffd.md".encode().decode(): b"the file named with U+FFFD\n",
            }
        },
    )
    cache = open_cache(tmp_path, approval="not_required")
    cache.connect_stdio("docs", serve_argv(skills, tmp_path))
    info = await within(cache.entry("docs", NOTES))
    skill = await within(cache.load("docs", info.entry))
    assert any("templates/" in f.uri for f in info.entry.files), info.entry.files
    honest = await within(skill.read("templates/n\ufffd.md"))
    assert honest.bytes == b"the file named with U+FFFD\n"
    for reference in ["templates/n\udcff.md", "templates/n\ud800.md"]:
        with pytest.raises(skillcache.UriError) as caught:
            await within(skill.read(reference))
        e = caught.value
        assert e.uri == reference.encode("utf-8", "backslashreplace").decode()
        assert "not well-formed Unicode" in str(e), str(e)
        assert isinstance(e.__cause__, UnicodeEncodeError)


async def refused(call: Callable[[], Any], kind: type[skillcache.Error], text: str) -> skillcache.Error:
    """`call` (awaited if it is a coroutine) refuses `text` as a `kind`, with the strict decode's
    error as its cause and the text shown with its surrogate escaped."""
    import asyncio

    with pytest.raises(kind) as caught:
        result = call()
        if asyncio.iscoroutine(result):
            await within(result)
    e = caught.value
    assert "not well-formed Unicode" in str(e), str(e)
    shown = text.encode("utf-8", "backslashreplace").decode()
    assert shown in (e.uri if isinstance(e, skillcache.UriError) else str(e)), str(e)
    assert isinstance(e.__cause__, UnicodeEncodeError)
    return e


async def test_b3_every_other_text_a_call_takes_with_a_lone_surrogate_is_a_skillcache_error(
    tmp_path: Path, skills_dir: Path
) -> None:
    """Skill URIs (often model-chosen from a catalog) are refused as a `UriError`; a principal, a
    local skill name, an argument, an environment variable, a URL and a header as a
    `ConfigError`: each one a `skillcache.Error`, caught with the other refusals. Before, each
    was a bare `UnicodeEncodeError` that `except skillcache.Error` missed."""
    cache = open_cache(tmp_path, approval="not_required")
    cache.connect_stdio("docs", serve_argv(skills_dir, tmp_path))
    bad = "x\udcff"
    for uri in [f"skill://{bad}/SKILL.md", f"skill://release-notes/{bad}.md"]:
        await refused(lambda: cache.entry("docs", uri), skillcache.UriError, uri)
        await refused(lambda: cache.refresh("docs", uri), skillcache.UriError, uri)
    cache.connect_session("host", Unused())
    await refused(lambda: cache.notify("host", f"skill://{bad}/SKILL.md"), skillcache.UriError, bad)
    calls: list[Callable[[], Any]] = [
        lambda: cache.for_principal(bad),
        lambda: open_cache(tmp_path, "other", principal=bad),
        lambda: cache.catalog(["fine", bad]),
        lambda: cache.connect_stdio("a", ["skillcache", bad]),
        lambda: cache.connect_stdio("a", [bad]),
        lambda: cache.connect_stdio("a", ["skillcache"], env={"V": bad}),
        lambda: cache.connect_stdio("a", ["skillcache"], env={bad: "v"}),
        lambda: cache.connect_http("h", f"http://127.0.0.1:9/{bad}"),
        lambda: cache.connect_http("h", "http://127.0.0.1:9/", {"x": bad}),
        lambda: cache.connect_http("h", "http://127.0.0.1:9/", {bad: "v"}),
    ]
    for call in calls:
        await refused(call, skillcache.ConfigError, bad)
    # The tools a user granted, in a list or as a table's keys or values.
    entry = (await within(cache.entry("docs", NOTES))).entry
    for granted in ([bad], {bad: True}, {"tool": bad}):
        await refused(lambda g=granted: cache.approve("docs", entry, g), skillcache.ConfigError, bad)
    # Nothing refused was bound, and the cache still answers.
    assert (await within(cache.entry("docs", NOTES))).entry.name == "release-notes"


class Lying(str):
    """A `str` whose `encode` answers for it: raw control characters, megabytes of them."""

    def encode(self, *args: Any, **kwargs: Any) -> bytes:  # type: ignore[override]
        return b"\x1b]0;pwned\x07\r\nall good: origin 'trusted' connected\n" * 200_000


class Renaming(str):
    """A `str` whose `encode` names another label."""

    def encode(self, *args: Any, **kwargs: Any) -> bytes:  # type: ignore[override]
        return b"trusted"


async def test_b3_a_refused_texts_shown_form_is_the_packages_own_and_cut_like_a_labels(
    tmp_path: Path, skills_dir: Path
) -> None:
    """The text a refusal shows is made by Python's own conversion of the `str` it holds, never
    by the object's `encode` (a subclass's chooses what it returns), and cut after 40 characters
    with an ellipsis, as a refused label is shown. Before, a subclass put megabytes of raw escape
    sequences, or another label's name, into the message."""
    cache = open_cache(tmp_path, approval="not_required")
    for label in [Lying("team\udcff"), Renaming("evil\udcff")]:
        e = refused_label(lambda: cache.connect_stdio(label, serve_argv(skills_dir, tmp_path)), label)
        assert "trusted" not in str(e) and "\x1b" not in str(e) and len(str(e)) < 1024, str(e)[:80]
    long = "a" * 50 + "\udcff"
    with pytest.raises(skillcache.ConfigError) as caught:
        cache.connect_http(long, "http://127.0.0.1:9/mcp")
    assert "a" * 40 + "…" in str(caught.value) and "a" * 41 not in str(caught.value), str(caught.value)
    cache.connect_stdio("docs", serve_argv(skills_dir, tmp_path))
    info = await within(cache.entry("docs", NOTES))
    skill = await within(cache.load("docs", info.entry))
    with pytest.raises(skillcache.UriError) as uri:
        await within(skill.read(Lying("x\udcff")))
    assert uri.value.uri == "x\\udcff" and len(str(uri.value)) < 1024, str(uri.value)[:80]
    with pytest.raises(skillcache.UriError) as uri:
        await within(skill.read("b" * 50 + "\udcff"))
    assert uri.value.uri == "b" * 40 + "…", uri.value.uri


# B1 (the sixteenth review): what a host hands in is bounded as it is copied, each reference to a
# shared value counted again, so a small object graph can never make an enormous copy (a failed
# allocation aborts the process). The bounds are the binding layer's (`binding/src/bounds.rs`),
# the same as the Node package's.


async def test_b1_a_grant_that_expands_when_walked_is_refused_before_it_is_copied(
    tmp_path: Path, skills_dir: Path
) -> None:
    cache = open_cache(tmp_path)
    cache.connect_stdio("docs", serve_argv(skills_dir, tmp_path))
    entry = (await within(cache.entry("docs", NOTES))).entry
    doubled: Any = "x"
    for _ in range(40):  # 41 objects; 2^40 values when walked
        doubled = [doubled, doubled]
    wide: Any = "x"
    for _ in range(20):  # within the depth bound; a million values when walked
        wide = [wide, wide]
    for grant, said in [(doubled, "nested deeper than 32"), (wide, "more than 10000 items")]:
        with pytest.raises(skillcache.ConfigError) as caught:
            await within(cache.approve("docs", entry, grant), 5)
        assert "grant_tools refused" in str(caught.value) and said in str(caught.value)
    big = "x" * (1 << 20)
    with pytest.raises(skillcache.ConfigError, match="more than 1 MiB of text"):
        await within(cache.approve("docs", entry, {"tools": [big, big]}))
    assert not await within(cache.is_approved("docs", entry))
    await within(cache.approve("docs", entry, {"tools": ["Read", "Grep"]}))  # an honest grant


async def test_b1_one_string_referenced_many_times_is_refused_in_every_list_and_table(
    tmp_path: Path,
) -> None:
    cache = open_cache(tmp_path)
    mib = "x" * (1 << 20)
    calls: dict[str, Callable[[], Any]] = {
        "argv": lambda: cache.connect_stdio("a", ["server"] + [mib] * 60_000),
        "env": lambda: cache.connect_stdio("b", ["server"], env={f"K{i}": mib for i in range(20)}),
        "headers": lambda: cache.connect_http("c", "http://127.0.0.1:9/mcp", {f"H{i}": mib for i in range(20)}),
        "local_names": lambda: cache.catalog([mib] * 60_000),
    }
    for what, call in calls.items():
        with pytest.raises(skillcache.ConfigError) as caught:
            result = call()
            if hasattr(result, "__await__"):
                await within(result)
        message = str(caught.value)
        assert f"{what} refused" in message and "16 MiB" in message, message
    with pytest.raises(skillcache.ConfigError, match="more than 65536 items"):
        cache.connect_stdio("d", ["x"] * 70_000)
    with pytest.raises(TypeError, match="argv must be a list of str, not a str"):
        cache.connect_stdio("e", "server --stdio")  # type: ignore[arg-type]
    assert await within(cache.origins()) == []


def test_b3_an_option_name_with_a_lone_surrogate_is_a_config_error_and_an_index_is_an_int(
    tmp_path: Path,
) -> None:
    for option in ["isolation", "approval", "dynamic"]:
        with pytest.raises(skillcache.ConfigError) as caught:
            open_cache(tmp_path, **{option: "rehash\udcff"})
        assert "not well-formed Unicode" in str(caught.value)
        assert isinstance(caught.value.__cause__, UnicodeEncodeError)

    class Count:
        """An integer by `__index__` only (as numpy's integers are)."""

        def __index__(self) -> int:
            return 1 << 20

    cache = open_cache(tmp_path, memory_tier=Count(), max_files=Count())
    assert cache.root.is_dir()
    with pytest.raises(TypeError):
        open_cache(tmp_path, "float", memory_tier=1.5)


def test_a_url_that_is_no_http_url_with_a_host_is_refused_at_connect(tmp_path: Path) -> None:
    cache = open_cache(tmp_path)
    for url in ["notaurl", "ftp://example.com/mcp", "http://", "http://:8080/mcp"]:
        with pytest.raises(skillcache.ConfigError, match="an http:// or https:// URL with a host"):
            cache.connect_http("docs", url)
    cache.connect_http("docs", "http://127.0.0.1:9/mcp")  # nothing is contacted until a request


async def test_b1_the_bounds_measure_text_itself_and_cover_every_list_the_package_takes(
    tmp_path: Path,
) -> None:
    """The seventeenth review: a `str` subclass whose `__len__` says 0 passed the text bound;
    a key whose `__len__` changed its dict during the walk raised PyO3's panic; `discovery_paths`
    and `purge_absent`'s `keep` were unbounded; a megabyte of path took half a minute."""

    class Short(str):
        def __len__(self) -> int:
            return 0

    mib = Short("x" * (1 << 20))
    cache = open_cache(tmp_path)
    with pytest.raises(skillcache.ConfigError, match="argv refused: .*16 MiB"):
        cache.connect_stdio("a", ["server"] + [mib] * 60_000)
    with pytest.raises(skillcache.ConfigError, match="discovery_paths refused"):
        open_cache(tmp_path, "other", discovery_paths=[str(tmp_path / "skills") + mib] * 60_000)

    table: dict[str, str] = {}

    class Grows(str):
        def __len__(self) -> int:
            table[f"k{len(table)}"] = "v"
            return str.__len__(self)

    table[Grows("a")] = "1"
    cache.connect_stdio("b", ["server"], env=table)  # no panic: the pairs are a snapshot

    def endless() -> Any:
        while True:
            yield "docs"

    with pytest.raises(skillcache.ConfigError, match="keep refused: .*65536 items"):
        await within(cache.purge_absent(endless()))

    for option in ["root", "key_file"]:
        with pytest.raises(skillcache.ConfigError, match="bytes long: at most 4096"):
            skillcache.SkillCache(**{"root": tmp_path / "r", option: str(tmp_path) + "/a" * 300_000})
