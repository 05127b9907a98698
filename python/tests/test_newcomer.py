"""A newcomer's first hour (N2, N3, N4): the `skillcache` command that installing the package
gives is the binary's command line; every asynchronous method is a coroutine function whose
calls can be made outside a running loop; every documented exception field is set; the server's
stderr goes where the host says; no Rust `Debug` text reaches `str()` or `repr()`.

The command is compared with the binary the way a person reads it: the same stdout, stderr and
exit code for the same command line.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import pydoc
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import skillcache

from conftest import (
    FIXTURE_SKILLS,
    REPO,
    hostile_argv,
    open_cache,
    serve_argv,
    skillcache_bin,
    within,
)

NOTES = "skill://release-notes/SKILL.md"


def console_script() -> Path:
    """The `skillcache` command installed beside this interpreter (`[project.scripts]`)."""
    script = Path(sys.executable).parent / "skillcache"
    if not script.is_file():
        pytest.fail(f"{script} is missing: install the package (pip install ./python)")
    return script


def command_env(scratch: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLCACHE_")}
    env.update(
        HOME=str(scratch),
        XDG_CACHE_HOME=str(scratch / "cache"),
        XDG_CONFIG_HOME=str(scratch / "config"),
        NO_COLOR="1",
    )
    return env


def run(program: Path, args: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str, str]:
    out = subprocess.run(
        [str(program), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    return out.returncode, out.stdout, out.stderr


# --- N2: the console script is the binary's command line -------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["--version"],
        ["--help"],
        ["load", "--help"],
        ["frobnicate"],  # an unknown command: clap's usage error, exit 2
        ["inspect", str(REPO / "samples" / "skills" / "release-notes")],
        ["inspect", str(REPO / "samples" / "skills" / "release-notes"), "--root", "x"],  # exit 2
        ["inspect", str(REPO / "samples" / "skills")],  # no SKILL.md at its root: exit 4
        ["inspect", "no/such/folder"],  # exit 2 before anything starts
        ["entry", "not a uri", "--origin", "docs", "--stdio", "true"],  # exit 2
        ["stats", "--root", "root", "--key-file", "host.key", "--json"],
    ],
)
def test_n2_the_console_script_answers_as_the_binary_does(args: list[str], tmp_path: Path) -> None:
    # One after the other in one folder: a path either prints is the same path.
    results = [
        run(program, args, tmp_path, command_env(tmp_path))
        for program in (skillcache_bin(), console_script())
    ]
    assert results[0] == results[1]
    assert results[0][0] in (0, 2, 4)


def test_u2_the_console_scripts_demo_runs_its_tour_to_the_end(tmp_path: Path) -> None:
    # Before: the tour started its server as `<this process's executable> serve`, which under
    # the console script is the Python interpreter (`can't open file '…/serve'`, exit 4).
    code, out, err = run(console_script(), ["demo"], tmp_path, command_env(tmp_path))
    assert code == 0, err
    assert "8. a dynamic skill" in out and "0 corrupt" in out, out


def test_n2_the_console_script_loads_verified_and_declines_with_the_binarys_exit_codes(
    tmp_path: Path, skills_dir: Path
) -> None:
    script = console_script()
    # The server is the console script too: `serve` over stdio as a child of the command.
    server = f"{script} serve {skills_dir}"
    common = ["--root", "root", "--key-file", "host.key", "--origin", "docs", "--stdio", server]
    env = command_env(tmp_path)
    code, out, err = run(script, ["load", NOTES, "--require-approval", *common], tmp_path, env)
    assert code == 5 and out == "", err  # declined: not approved
    assert err.startswith("skillcache: error: ") and "not been approved" in err
    code, out, err = run(script, ["load", NOTES, *common], tmp_path, env)
    assert code == 0, err
    assert out.encode() == FIXTURE_SKILLS["release-notes"]["SKILL.md"]
    code, out, err = run(script, ["read", NOTES, "../../etc/passwd", *common], tmp_path, env)
    assert code == 5, err  # a reference that leaves the skill


async def test_n2_serve_from_the_console_script_serves_connect_stdio(
    tmp_path: Path, skills_dir: Path
) -> None:
    cache = open_cache(tmp_path, approval="not_required")
    cache.connect_stdio(
        "docs",
        [str(console_script()), "serve", str(skills_dir)],
    )
    info = await within(cache.entry("docs", NOTES))
    skill, files = await within(cache.load_all("docs", info.entry))
    assert {f.uri: f.bytes for f in files} == {
        f"skill://release-notes/{rel}": data for rel, data in FIXTURE_SKILLS["release-notes"].items()
    }
    assert all(f.verified and f.provenance == "server" for f in files)


# --- N3: coroutines ---------------------------------------------------------------------------

ASYNC_METHODS = {
    skillcache.SkillCache: [
        "list", "entry", "refresh", "approve", "is_approved", "load", "load_all", "verify", "gc",
        "purge", "origins", "purge_absent", "catalog", "inventory", "cached_entries",
    ],
    skillcache.LoadedSkill: ["read", "read_all"],
}
SYNC_METHODS = {
    skillcache.SkillCache: [
        "connect_stdio", "connect_http", "connect_session", "notify", "disconnect", "stats",
        "for_principal",
    ],
}


def test_n3_every_async_method_is_a_coroutine_function_and_help_says_so() -> None:
    for cls, names in ASYNC_METHODS.items():
        page = pydoc.render_doc(cls, renderer=pydoc.plaintext)
        for name in names:
            assert inspect.iscoroutinefunction(getattr(cls, name)), (cls, name)
            assert f"async {name}(self" in page, (cls, name)
    for cls, names in SYNC_METHODS.items():
        for name in names:
            assert not inspect.iscoroutinefunction(getattr(cls, name)), (cls, name)


def test_n3_asyncio_run_takes_a_call_made_outside_any_loop(tmp_path: Path, skills_dir: Path) -> None:
    cache = open_cache(tmp_path, approval="not_required")
    cache.connect_stdio("docs", serve_argv(skills_dir, tmp_path))
    info = asyncio.run(cache.entry("docs", NOTES))
    skill = asyncio.run(cache.load("docs", info.entry))
    notes = asyncio.run(skill.read("templates/notes.md"))
    assert notes.bytes == FIXTURE_SKILLS["release-notes"]["templates/notes.md"]


def test_n3_calls_made_before_the_loop_are_gathered_in_it(tmp_path: Path, skills_dir: Path) -> None:
    cache = open_cache(tmp_path, approval="not_required")
    cache.connect_stdio("docs", serve_argv(skills_dir, tmp_path))
    calls = [
        cache.entry("docs", NOTES),
        cache.entry("docs", "skill://code-style/SKILL.md"),
        cache.origins(),
    ]

    async def main() -> list[Any]:
        return await within(asyncio.gather(*calls))

    notes, style, _ = asyncio.run(main())
    assert (notes.entry.uri, style.entry.uri) == (NOTES, "skill://code-style/SKILL.md")


# --- N3: every documented field is set --------------------------------------------------------


async def test_n3_a_server_error_and_a_transport_error_name_their_origin(
    tmp_path: Path, skills_dir: Path
) -> None:
    cache = open_cache(tmp_path)
    cache.connect_stdio("local", serve_argv(skills_dir, tmp_path))
    with pytest.raises(skillcache.ServerError) as server:
        await within(cache.entry("local", "skill://no-such-skill/SKILL.md"))
    e = server.value
    assert (e.origin, e.method, e.code) == ("local", "skills/get", -32602)
    assert e.server_message and "local" in str(e)
    cache.connect_stdio("gone", [str(tmp_path / "no-such-server")])
    with pytest.raises(skillcache.TransportError) as transport:
        await within(cache.entry("gone", NOTES))
    e = transport.value
    assert e.origin == "gone" and e.method and e.causes
    assert "gone" in str(e)


async def test_n3_a_message_over_the_bound_names_its_origin(tmp_path: Path) -> None:
    bound = 2 * (16 << 20) + (64 << 10)

    class Huge:
        async def send_request(self, request: Any, result_type: Any, *a: Any, **k: Any) -> Any:
            return {"skills": [], "padding": "x" * (bound + 1)}

    cache = open_cache(tmp_path)
    cache.connect_session("big", Huge())
    with pytest.raises(skillcache.MessageTooLargeError) as caught:
        await within(cache.list("big"))
    assert (caught.value.origin, caught.value.method, caught.value.max) == ("big", "skills/list", bound)


# --- N3: the server's stderr ------------------------------------------------------------------

CHATTY = """
import sys, runpy
sys.stderr.write("server says hello on stderr\\n"); sys.stderr.flush()
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def chatty_argv(tmp_path: Path, skills: Path) -> list[str]:
    """The hostile test server (honest mode) behind a line written to its stderr."""
    wrapper = tmp_path / "chatty.py"
    wrapper.write_text(CHATTY)
    return [sys.executable, str(wrapper), *hostile_argv(skills, "honest", tmp_path / "log")[1:]]


async def test_n3_connect_stdio_sends_the_servers_stderr_to_a_file_or_discards_it(
    tmp_path: Path, skills_dir: Path
) -> None:
    log = tmp_path / "server.err"
    with open(log, "w") as f:
        f.write("before\n")
        cache = open_cache(tmp_path)
        cache.connect_stdio("docs", chatty_argv(tmp_path, skills_dir), stderr=f)
    # The file object is closed already: the source holds its own descriptor.
    await within(cache.entry("docs", NOTES))
    assert log.read_text() == "before\nserver says hello on stderr\n"

    fd = os.open(tmp_path / "by-fd.err", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        by_fd = open_cache(tmp_path, "by-fd")
        by_fd.connect_stdio("docs", chatty_argv(tmp_path, skills_dir), stderr=fd)
    finally:
        os.close(fd)
    await within(by_fd.entry("docs", NOTES))
    assert (tmp_path / "by-fd.err").read_text() == "server says hello on stderr\n"

    for bad in (subprocess.PIPE, subprocess.STDOUT, True, "server.err"):
        with pytest.raises(ValueError, match="stderr must be"):
            by_fd.connect_stdio("docs", ["server"], stderr=bad)


@pytest.mark.parametrize("stderr", ["inherit", "devnull"])
def test_n3_connect_stdio_inherits_the_servers_stderr_unless_told_otherwise(
    stderr: str, tmp_path: Path, skills_dir: Path
) -> None:
    host = textwrap.dedent(
        f"""
        import asyncio, subprocess, skillcache
        cache = skillcache.SkillCache(root={str(tmp_path / 'root')!r}, key_file={str(tmp_path / 'k')!r})
        target = subprocess.DEVNULL if {stderr!r} == "devnull" else None
        cache.connect_stdio("docs", {chatty_argv(tmp_path, skills_dir)!r}, stderr=target)
        asyncio.run(cache.entry("docs", {NOTES!r}))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", host], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    said = "server says hello on stderr" in out.stderr
    assert said == (stderr == "inherit"), out.stderr


# --- N4: no Debug text ------------------------------------------------------------------------


async def test_n4_reprs_and_messages_quote_as_python_does(tmp_path: Path, skills_dir: Path) -> None:
    odd = "it's \"odd\" \u00e9\x1b"
    with pytest.raises(ValueError) as caught:
        open_cache(tmp_path, isolation=odd)
    assert str(caught.value) == f"isolation must be one of 'rehash', 'guaranteed', not {odd!r}"

    cache = open_cache(tmp_path, approval="not_required")
    cache.connect_stdio("docs", serve_argv(skills_dir, tmp_path))
    info = await within(cache.entry("docs", NOTES))
    entry = info.entry
    assert repr(entry) == f"SkillEntry(uri={entry.uri!r}, name={entry.name!r})"
    skill, files = await within(cache.load_all("docs", entry))
    f = files[0]
    assert repr(f) == (
        f"SkillFile(uri={f.uri!r}, origin={f.origin!r}, digest={f.digest!r}, "
        f"size={len(f)}, provenance={f.provenance!r})"
    )
    assert repr(skill) == f"LoadedSkill(origin='docs', uri={NOTES!r})"
    assert repr(entry.files[0]).startswith(f"ManifestFile(uri={entry.files[0].uri!r}, ")
    assert repr(cache) == f"SkillCache(root={str(cache.root)!r})"
    catalog = await within(cache.catalog())
    s = catalog.skills[0]
    assert repr(s) == f"CatalogSkill(handle={s.handle!r}, origin={s.origin!r}, uri={s.entry.uri!r})"
    lock = skillcache.LockFile()
    lock.insert("docs", entry)
    (pinned,) = lock.skills
    assert repr(pinned) == f"LockedSkill(origin='docs', uri={NOTES!r}, files={len(entry.files)})"


async def test_n4_an_entry_diff_reads_as_python_values(tmp_path: Path, skills_dir: Path) -> None:
    cache = open_cache(tmp_path)
    cache.connect_stdio("docs", serve_argv(skills_dir, tmp_path))
    info = await within(cache.entry("docs", NOTES))
    await within(cache.approve("docs", info.entry))
    (skills_dir / "release-notes" / "templates" / "notes.md").write_bytes(b"# edited\n")
    changed = await within(cache.refresh("docs", NOTES))
    d = changed.diff
    assert repr(d) == (
        f"EntryDiff(added={d.added!r}, removed={d.removed!r}, changed={d.changed!r}, "
        f"frontmatter={d.frontmatter!r}, dynamic_changed={d.dynamic_changed!r})"
    )
    assert "('skill://release-notes/templates/notes.md', 'sha256:" in repr(d)
