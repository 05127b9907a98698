"""`connect_session` with whichever MCP SDK major is installed (1.x or 2.x): the corpus, loaded
byte for byte through the host's own `ClientSession`, over stdio and Streamable HTTP, from
`skillcache serve` (target/debug/skillcache, or $SKILLCACHE_BIN).

    python python/tests/session_sdk_check.py [SKILLS_DIR]

Run from a virtualenv holding the package and one `mcp` (CI runs it with 1.x, pinned by
python/tests/requirements-mcp1.txt; the pytest suite runs with 2.x). It prints one line per
transport and exits 1 on any difference. It uses only what both majors share: `ClientSession`,
`stdio_client`, and the Streamable HTTP client of each (`streamablehttp_client` in 1.x,
`streamable_http_client` in 2.x).
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import tempfile
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator

import mcp
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

import skillcache

REPO = Path(__file__).resolve().parents[2]
DEADLINE = 120.0


def binary() -> str:
    path = Path(os.environ.get("SKILLCACHE_BIN", REPO / "target" / "debug" / "skillcache"))
    if not path.is_file():
        sys.exit(f"{path} is missing: build it with `cargo build` at the repository root")
    return str(path)


@asynccontextmanager
async def stdio_session(argv: list[str]) -> AsyncIterator[Any]:
    params = StdioServerParameters(command=argv[0], args=argv[1:])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


@asynccontextmanager
async def http_session(url: str) -> AsyncIterator[Any]:
    from mcp.client import streamable_http

    client = getattr(streamable_http, "streamable_http_client", None) or getattr(
        streamable_http, "streamablehttp_client"
    )
    async with client(url) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def load_corpus(session: Any, skills: Path, scratch: Path, name: str) -> tuple[int, int]:
    """Lists and loads every skill through `session`; returns (skills, files) checked."""
    cache = skillcache.SkillCache(
        root=scratch / name / "root", key_file=scratch / name / "host.key", approval="not_required"
    )
    cache.connect_session("corpus", session)
    listed = await asyncio.wait_for(cache.list("corpus"), DEADLINE)
    refused = [item for item in listed if isinstance(item, skillcache.Error)]
    if refused:
        raise SystemExit(f"{name}: refused entries: {refused}")
    count = 0
    for info in listed:
        _, files = await asyncio.wait_for(cache.load_all("corpus", info.entry), DEADLINE)
        root = info.entry.uri.removesuffix("SKILL.md")
        folder = skills / root.removeprefix("skill://").rstrip("/")
        for f in files:
            want = (folder / f.uri.removeprefix(root)).read_bytes()
            if f.bytes != want:
                raise SystemExit(f"{name}: {f.uri}: {len(f.bytes)} bytes, not the {len(want)} on disk")
            count += 1
    return len(listed), count


async def main(skills: Path) -> None:
    scratch = Path(tempfile.mkdtemp())
    serve = [binary(), "serve", str(skills)]
    version = getattr(mcp, "__version__", None)
    if version is None:
        from importlib.metadata import version as dist_version

        version = dist_version("mcp")
    async with stdio_session(serve) as session:
        n, files = await load_corpus(session, skills, scratch, "stdio")
    print(f"mcp {version}, stdio: {n} skills, {files} files, byte for byte")
    server = subprocess.Popen(
        serve + ["--http", "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        assert server.stdout is not None
        url = None
        for line in server.stdout:
            if m := re.search(r"listening on (http://\S+)", line):
                url = m.group(1)
                break
        if url is None:
            raise SystemExit("skillcache serve --http never said where it listens")
        async with http_session(url) as session:
            n, files = await load_corpus(session, skills, scratch, "http")
        print(f"mcp {version}, Streamable HTTP: {n} skills, {files} files, byte for byte")
    finally:
        server.kill()
        server.wait(timeout=DEADLINE)


if __name__ == "__main__":
    default = REPO / "tests" / "data" / "corpus" / "skills"
    asyncio.run(main(Path(sys.argv[1]) if len(sys.argv) > 1 else default))
