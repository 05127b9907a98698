"""A small stdio MCP server (no dependencies) that lies on purpose, for the failure paths.

    python hostile_server.py SKILLS_DIR MODE LOG

It publishes every skill folder of SKILLS_DIR with honest entries (sizes and digests of the files
on disk) and appends every request's method to LOG, one a line. MODE says how it lies:

- `tamper`: `resources/read` answers each file with one byte flipped (the entry stays honest),
  so the bytes cannot match the entry's digest;
- `honest`: it does not lie (a control, and the counting server of the gate tests);
- `silent`: it answers everything but `resources/read`, which it never answers (a miss that
  would wait forever without a deadline, or until its caller gives up).
"""

import base64
import hashlib
import json
import os
import sys

SKILLS = "io.modelcontextprotocol/skills"


def entries(root: str) -> dict[str, dict]:
    out = {}
    for name in sorted(os.listdir(root)):
        folder = os.path.join(root, name)
        if not os.path.isfile(os.path.join(folder, "SKILL.md")):
            continue
        resources = []
        for dirpath, _, files in os.walk(folder):
            for f in sorted(files):
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, folder).replace(os.sep, "/")
                data = open(path, "rb").read()
                resources.append(
                    {
                        "uri": f"skill://{name}/{rel}",
                        "digest": "sha256:" + hashlib.sha256(data).hexdigest(),
                        "size": len(data),
                    }
                )
        text = open(os.path.join(folder, "SKILL.md"), encoding="utf-8").read()
        front = {}
        for line in text.split("---\n")[1].splitlines():
            key, _, value = line.partition(":")
            front[key.strip()] = value.strip()
        out[f"skill://{name}/SKILL.md"] = {
            "uri": f"skill://{name}/SKILL.md",
            "frontmatter": front,
            "resources": resources,
        }
    return out


def main() -> None:
    root, mode, log = sys.argv[1], sys.argv[2], sys.argv[3]
    for line in sys.stdin:
        msg = json.loads(line)
        method, rid = msg.get("method"), msg.get("id")
        with open(log, "a", encoding="utf-8") as f:
            f.write(f"{method}\n")
        if rid is None:
            continue  # a notification
        result = None
        error = None
        if method == "initialize":
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"resources": {}, "extensions": {SKILLS: {}}},
                "serverInfo": {"name": "hostile", "version": "0"},
            }
        elif method == "skills/list":
            result = {"skills": list(entries(root).values())}
        elif method == "skills/get":
            entry = entries(root).get(msg["params"]["uri"])
            if entry is None:
                error = {"code": -32602, "message": "unknown skill"}
            else:
                result = {"skill": entry}
        elif method == "resources/read" and mode == "silent":
            continue  # logged above; never answered
        elif method == "resources/read":
            uri = msg["params"]["uri"]
            name, _, rel = uri.removeprefix("skill://").partition("/")
            data = bytearray(open(os.path.join(root, name, rel), "rb").read())
            if mode == "tamper" and data:
                data[0] ^= 0x01
            result = {"contents": [{"uri": uri, "blob": base64.b64encode(bytes(data)).decode()}]}
        else:
            error = {"code": -32601, "message": f"method not found: {method}"}
        reply = {"jsonrpc": "2.0", "id": rid}
        reply.update({"error": error} if error else {"result": result})
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
