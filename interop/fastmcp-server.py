"""FastMCP's SEP-2640 skills server (PyPI fastmcp 4.1.6, pinned in requirements.txt), serving
every skill folder under SKILLS_DIR.

    python fastmcp-server.py SKILLS_DIR http PORT   # Streamable HTTP at http://127.0.0.1:PORT/mcp
    python fastmcp-server.py SKILLS_DIR stdio       # stdio
"""

import sys

from fastmcp import FastMCP
from fastmcp.server.providers.skills import SkillsDirectoryProvider
from fastmcp.skills.extension import SkillsExtension


def main() -> None:
    if len(sys.argv) < 3 or sys.argv[2] not in ("http", "stdio"):
        sys.exit("usage: fastmcp-server.py SKILLS_DIR (http PORT | stdio)")
    root, transport = sys.argv[1], sys.argv[2]
    server = FastMCP("fastmcp-skills-server")
    provider = SkillsDirectoryProvider(roots=root, experimental_skills=True)
    server.add_provider(provider)
    server.add_extension(SkillsExtension(providers=[provider]))
    if transport == "http":
        server.run(transport="http", host="127.0.0.1", port=int(sys.argv[3]), show_banner=False)
    else:
        server.run(transport="stdio", show_banner=False)


if __name__ == "__main__":
    main()
