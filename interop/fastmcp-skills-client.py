"""FastMCP's skills client (`fastmcp`, pinned in requirements.txt) against a skills server over
Streamable HTTP: it validates each `skills/list` page as a whole by the strict Agent Skills
rules, so one lenient entry on a page makes it list nothing. Prints one JSON report on stdout:
how many skills it listed, over how many pages, or the error it raised.

    python fastmcp-skills-client.py URL
"""

import asyncio
import json
import sys

from fastmcp import Client
from fastmcp.skills import SkillsClientExtension


async def main() -> None:
    report = {"listed": 0, "error": None}
    try:
        async with Client(sys.argv[1], extensions=[SkillsClientExtension()]) as client:
            skills = await client.list_skills()
            report["listed"] = len(skills)
            report["uris"] = sorted(s.uri for s in skills)
    except Exception as e:  # the report carries it
        report["error"] = f"{type(e).__name__}: {e}"
    json.dump(report, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    asyncio.run(main())
