"""The Python half of `SkillCache.connect_session`: one request over the host's own session.

The Rust side (`src/session.rs`) schedules `ask` on the loop that runs the session and reads its
answer after checking its size. Nothing here inspects the answer: every field reaches
skillcache's own validation, as the server sent it.
"""

import functools
import json
from typing import Any


@functools.cache
def _raw_types() -> tuple[Any, Any]:
    """The request and result classes, made once. Imported here, not at module level: the
    package works without the MCP SDK installed (it is the `mcp` extra), and a host that calls
    `connect_session` has it.

    Both are what the SDK's 1.x and 2.x `ClientSession.send_request` take alike: a pydantic
    `Request` (dumped with `model_dump`) and a result type with `model_validate`, here a root
    model over the plain dict, so every field the server sent reaches skillcache as sent."""
    from mcp.types import Request
    from pydantic import RootModel

    class RawRequest(Request[dict[str, Any], str]):
        params: dict[str, Any]

    class RawResult(RootModel[dict[str, Any]]):
        pass

    return RawRequest, RawResult


async def ask(session: Any, method: str, params: str) -> str:
    """Sends `method` with `params` (JSON text) over `session` and returns the `result` object
    as ASCII-only JSON text (so its length in characters is its length in bytes)."""
    request, result = _raw_types()
    raw = await session.send_request(request(method=method, params=json.loads(params)), result)
    # The SDK's answer is a `RawResult`; a host's stand-in may answer the dict itself.
    raw = getattr(raw, "root", raw)
    return json.dumps(raw, separators=(",", ":"))
