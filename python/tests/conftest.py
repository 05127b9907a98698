"""Fixtures of the Python package's tests: scratch caches, fixture skills, and the real peers
(`skillcache serve`, the official TS server, FastMCP) over stdio and Streamable HTTP, reached
through `connect_*` and through an `mcp.ClientSession`.

The peers written by others need npm and PyPI: like the Rust interop tests they run only with
`SKILLCACHE_INTEROP=1` (`.ci/run` sets it), install themselves from the pinned lock files
(`interop/package-lock.json`; FastMCP comes with `python/requirements-dev.txt`), and fail loudly
when they cannot. `skillcache serve` is the binary `cargo build` makes (`target/debug/skillcache`,
or `$SKILLCACHE_BIN`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import queue
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

import skillcache

REPO = Path(__file__).resolve().parents[2]
INTEROP = REPO / "interop"
HERE = Path(__file__).resolve().parent
SKILLS_EXTENSION = "io.modelcontextprotocol/skills"
SWITCH = "SKILLCACHE_INTEROP"

# How long a test may wait for anything it starts or asks: a hang fails the test, it never
# stalls CI (pytest-timeout in pyproject.toml is the backstop behind this).
DEADLINE = 60.0

T = TypeVar("T")


async def within(awaitable: Awaitable[T], seconds: float = DEADLINE) -> T:
    """`awaitable`, or a failure once `seconds` have passed."""
    return await asyncio.wait_for(awaitable, seconds)


def sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def skillcache_bin() -> Path:
    binary = Path(os.environ.get("SKILLCACHE_BIN", REPO / "target" / "debug" / "skillcache"))
    if not binary.is_file():
        pytest.fail(f"{binary} is missing: build it first with `cargo build` at the repository root")
    return binary


# --- fixture skills ---------------------------------------------------------------------------

FIXTURE_SKILLS: dict[str, dict[str, bytes]] = {
    "release-notes": {
        "SKILL.md": b"---\nname: release-notes\ndescription: Drafts release notes from merged pull requests.\n---\n# Release notes\n\nStart from templates/notes.md.\n",
        "templates/notes.md": b"# {{version}}\n\n## Changes\n\n- {{change}}\n",
        # Not text: a server sends it as a base64 `blob`.
        "assets/palette.bin": bytes(range(256)) * 16,
    },
    "code-style": {
        "SKILL.md": b"---\nname: code-style\ndescription: Checks code against the team's style rules.\n---\nRead references/rules.md first.\n",
        "references/rules.md": b"1. Names say what a thing is.\n2. Comments say why.\n",
    },
}


def write_skills(root: Path, skills: dict[str, dict[str, bytes]] = FIXTURE_SKILLS) -> Path:
    for name, files in skills.items():
        for rel, data in files.items():
            path = root / name / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    return root


@pytest.fixture
def skills_dir(tmp_path: Path) -> Path:
    return write_skills(tmp_path / "skills")


def open_cache(tmp_path: Path, name: str = "cache", **options: Any) -> skillcache.SkillCache:
    """A cache in the test's scratch folder, its host key beside it (never the user's)."""
    return skillcache.SkillCache(
        root=tmp_path / name / "root", key_file=tmp_path / name / "host.key", **options
    )


# --- processes --------------------------------------------------------------------------------


@dataclass
class Running:
    """A server process; its output lines are collected, and it is killed at the end."""

    process: subprocess.Popen[bytes]
    lines: queue.Queue[str] = field(default_factory=queue.Queue)

    def wait_for_line(self, pattern: str, seconds: float = DEADLINE) -> re.Match[str]:
        end = time.monotonic() + seconds
        seen = []
        while time.monotonic() < end:
            try:
                line = self.lines.get(timeout=0.1)
            except queue.Empty:
                if self.process.poll() is not None:
                    break
                continue
            seen.append(line)
            if m := re.search(pattern, line):
                return m
        pytest.fail(f"the server never printed {pattern!r}; it printed:\n" + "".join(seen[-40:]))


@contextmanager
def running(argv: list[str], cwd: Path | None = None) -> Iterator[Running]:
    process = subprocess.Popen(
        argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    server = Running(process)

    def pump() -> None:
        assert process.stdout is not None
        for raw in process.stdout:
            server.lines.put(raw.decode(errors="replace"))

    threading.Thread(target=pump, daemon=True).start()
    try:
        yield server
    finally:
        process.kill()
        process.wait(timeout=DEADLINE)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, server: Running, seconds: float = DEADLINE) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if server.process.poll() is not None:
            pytest.fail(f"the server exited with {server.process.returncode} before listening")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    pytest.fail(f"nothing listened on port {port} within {seconds} s")


# --- the real peers ---------------------------------------------------------------------------


def interop_enabled() -> bool:
    return os.environ.get(SWITCH) == "1"


_npm_installed = False


def node_peers() -> Path:
    """The official TS server, installed once from `interop/package-lock.json` (pinned)."""
    global _npm_installed
    if not interop_enabled():
        pytest.skip(f"interop tests are off: set {SWITCH}=1 (needs the npm registry)")
    pinned = INTEROP / "node_modules" / "@modelcontextprotocol" / "server" / "package.json"
    if not _npm_installed and not (
        pinned.is_file() and json.loads(pinned.read_text())["version"] == "2.4.0"
    ):
        out = subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund"],
            cwd=INTEROP,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if out.returncode != 0:
            pytest.fail(f"{SWITCH}=1 but npm ci failed in {INTEROP}:\n{out.stderr}")
    _npm_installed = True
    return INTEROP


def fastmcp_python() -> str:
    """An interpreter with FastMCP 4.1.6 (python/requirements-dev.txt pins it)."""
    if not interop_enabled():
        pytest.skip(f"interop tests are off: set {SWITCH}=1 (needs PyPI)")
    check = subprocess.run(
        [sys.executable, "-c", "import fastmcp, sys; sys.exit(fastmcp.__version__ != '4.1.6')"],
        capture_output=True,
    )
    if check.returncode != 0:
        pytest.fail(f"{SWITCH}=1 but FastMCP 4.1.6 is not installed: pip install -r python/requirements-dev.txt")
    return sys.executable


@dataclass
class Peer:
    """A server that serves `skills_dir`, over stdio (`argv`) or Streamable HTTP (`url`)."""

    name: str
    skills_dir: Path
    argv: list[str] | None = None
    url: str | None = None

    def connect(self, cache: skillcache.SkillCache, origin: str) -> None:
        """Binds `origin` through skillcache's own transports."""
        if self.argv is not None:
            cache.connect_stdio(origin, self.argv)
        else:
            assert self.url is not None
            cache.connect_http(origin, self.url)

    @asynccontextmanager
    async def session(self) -> AsyncIterator[Any]:
        """An `mcp.ClientSession` of the official Python SDK to this server, as a host holds
        one: the SDK negotiates (server/discover, else initialize) and declares the skills
        extension."""
        from mcp import Client, StdioServerParameters
        from mcp.client import advertise

        target: Any
        if self.argv is not None:
            target = StdioServerParameters(command=self.argv[0], args=self.argv[1:])
        else:
            target = self.url
        async with Client(
            target, extensions=[advertise(SKILLS_EXTENSION, {})], cache=None
        ) as client:
            yield client.session


def serve_argv(skills: Path, scratch: Path) -> list[str]:
    return [
        str(skillcache_bin()),
        "serve",
        str(skills),
    ]


@contextmanager
def start_peer(kind: str, skills: Path, scratch: Path) -> Iterator[Peer]:
    """One of the peers, serving `skills`, for as long as the block runs."""
    if kind == "serve-stdio":
        yield Peer(kind, skills, argv=serve_argv(skills, scratch))
    elif kind == "serve-http":
        with running(serve_argv(skills, scratch) + ["--http", "127.0.0.1:0"]) as server:
            url = server.wait_for_line(r"listening on (http://\S+)").group(1)
            yield Peer(kind, skills, url=url)
    elif kind == "ts-stdio":
        dir = node_peers()
        yield Peer(kind, skills, argv=["node", str(dir / "ts-server.mjs"), str(skills)])
    elif kind == "ts-http":
        dir = node_peers()
        with running(["node", str(dir / "ts-http-server.mjs"), str(skills), "0"]) as server:
            url = server.wait_for_line(r"listening (http://\S+)").group(1)
            yield Peer(kind, skills, url=url)
    elif kind == "fastmcp-http":
        python = fastmcp_python()
        port = free_port()
        with running(
            [python, str(INTEROP / "fastmcp-server.py"), str(skills), "http", str(port)]
        ) as server:
            wait_for_port(port, server)
            yield Peer(kind, skills, url=f"http://127.0.0.1:{port}/mcp")
    else:
        raise ValueError(kind)


def hostile_argv(skills: Path, mode: str, log: Path) -> list[str]:
    return [sys.executable, str(HERE / "hostile_server.py"), str(skills), mode, str(log)]


# --- sessions that watch or lie ---------------------------------------------------------------


class CountingSession:
    """Wraps a session and records the method of every request sent through it."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.methods: list[str] = []

    async def send_request(self, request: Any, result_type: Any, *args: Any, **kwargs: Any) -> Any:
        self.methods.append(request.method)
        return await self.inner.send_request(request, result_type, *args, **kwargs)

    def count(self, method: str) -> int:
        return self.methods.count(method)


class TamperingSession(CountingSession):
    """Wraps a session and flips one byte of every file a `resources/read` returns, as a
    compromised server or a meddling proxy would; entries pass through untouched."""

    async def send_request(self, request: Any, result_type: Any, *args: Any, **kwargs: Any) -> Any:
        import base64

        result = await super().send_request(request, result_type, *args, **kwargs)
        if request.method == "resources/read":
            # The SDK answers with the package's result type, a root model over the plain dict.
            for content in result.root.get("contents", []):
                if "text" in content:
                    text = content["text"]
                    content["text"] = ("X" if text[:1] != "X" else "Y") + text[1:]
                elif "blob" in content:
                    data = bytearray(base64.b64decode(content["blob"]))
                    data[0] ^= 0x01
                    content["blob"] = base64.b64encode(bytes(data)).decode()
        return result


def files_on_disk(skills: Path, entry: skillcache.SkillEntry) -> dict[str, bytes]:
    """The bytes on disk of each file of `entry`, by URI (the skill's folder is its root)."""
    root = entry.uri.removesuffix("SKILL.md")
    folder = skills / root.removeprefix("skill://").rstrip("/")
    return {f.uri: (folder / f.uri.removeprefix(root)).read_bytes() for f in entry.files}
