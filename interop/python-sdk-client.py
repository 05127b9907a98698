"""The official Python MCP SDK (`mcp`, pinned in requirements.txt) as a client of a skills
server: it lists every skill (following `nextCursor`), gets each one, reads every file it lists
and checks each file's size and SHA-256 itself. It prints one JSON report on stdout.

The Python SDK has no skills helper: `skills/list` and `skills/get` are sent as custom requests,
and the extension is advertised in the client capabilities.

    python python-sdk-client.py --http URL [--mode auto|legacy]
    python python-sdk-client.py --stdio 'COMMAND ARGS…' [--mode auto|legacy]
"""

import argparse
import asyncio
import base64
import hashlib
import json
import shlex
import sys
from typing import Any, Literal

import mcp_types
from mcp import Client
from mcp.client.extension import advertise
from mcp.client.stdio import StdioServerParameters
from pydantic import TypeAdapter

SKILLS = "io.modelcontextprotocol/skills"
RAW = TypeAdapter(dict[str, Any])
MAX_PAGES = 1000


class ListParams(mcp_types.PaginatedRequestParams):
    """`skills/list` params."""


class ListRequest(mcp_types.Request[ListParams, Literal["skills/list"]]):
    method: Literal["skills/list"] = "skills/list"
    params: ListParams


class GetParams(mcp_types.RequestParams):
    uri: str


class GetRequest(mcp_types.Request[GetParams, Literal["skills/get"]]):
    method: Literal["skills/get"] = "skills/get"
    params: GetParams


def content_bytes(item: Any) -> bytes:
    """A `resources/read` item's bytes: text as UTF-8, a blob base64-decoded."""
    text = getattr(item, "text", None)
    if text is not None:
        return text.encode("utf-8")
    return base64.b64decode(item.blob, validate=True)


async def sweep(client: Client) -> dict[str, Any]:
    report: dict[str, Any] = {
        "protocol": client.protocol_version,
        "pages": 0,
        "listed": 0,
        "skills": 0,
        "files": 0,
        "verified": 0,
        "bytes": 0,
        "failures": [],
    }
    listed: list[str] = []
    cursor = None
    seen = set()
    for _ in range(MAX_PAGES):
        page = await client.session.send_request(ListRequest(params=ListParams(cursor=cursor)), RAW)
        report["pages"] += 1
        listed.extend(s["uri"] for s in page["skills"])
        cursor = page.get("nextCursor")
        if not cursor:
            break
        if cursor in seen:
            report["failures"].append(f"skills/list repeated the cursor {cursor!r}")
            break
        seen.add(cursor)
    report["listed"] = len(listed)
    for uri in listed:
        got = await client.session.send_request(GetRequest(params=GetParams(uri=uri)), RAW)
        entry = got["skill"]
        if entry["uri"] != uri:
            report["failures"].append(f"skills/get {uri} answered for {entry['uri']}")
            continue
        report["skills"] += 1
        if entry["resources"] == "dynamic":
            continue
        for resource in entry["resources"]:
            report["files"] += 1
            try:
                read = await client.read_resource(resource["uri"])
            except Exception as e:  # the report says which file and why
                report["failures"].append(f"resources/read {resource['uri']}: {e}")
                continue
            items = [c for c in read.contents if c.uri == resource["uri"]]
            if len(items) != 1:
                report["failures"].append(f"{resource['uri']}: {len(items)} items for the URI")
                continue
            data = content_bytes(items[0])
            digest = "sha256:" + hashlib.sha256(data).hexdigest()
            if len(data) != resource["size"] or digest != resource["digest"]:
                report["failures"].append(
                    f"{resource['uri']}: {len(data)} bytes {digest}, listed {resource['size']} {resource['digest']}"
                )
                continue
            report["verified"] += 1
            report["bytes"] += len(data)
    return report


async def main() -> None:
    parser = argparse.ArgumentParser()
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--http")
    target.add_argument("--stdio")
    parser.add_argument("--mode", default="auto")
    args = parser.parse_args()
    if args.http:
        server: Any = args.http
    else:
        argv = shlex.split(args.stdio)
        server = StdioServerParameters(command=argv[0], args=argv[1:])
    async with Client(server, mode=args.mode, extensions=[advertise(SKILLS)], cache=None) as client:
        report = await sweep(client)
    json.dump(report, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    asyncio.run(main())
