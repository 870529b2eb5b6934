"""A small MCP server for the tests: `python echo_server.py [stdio | http PORT | sse PORT]`.

Its tools cover what the client must handle: plain text, tool errors, slow calls, huge output,
mixed content, a server that dies mid-call, the environment the server was given, and a schema
with nested models, enums, arrays and optional fields (as type hints generate it: $defs and anyOf).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
from typing import Literal

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import EmbeddedResource, ImageContent, TextContent, TextResourceContents
from pydantic import BaseModel, Field

server = MCPServer("echo")

# A one-pixel PNG: enough for the client to summarise an image block.
PIXEL = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000100e221bc330000000049454e44ae426082"
    )
).decode()


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def fail(message: str = "it failed") -> str:
    """Always fail with the given message."""
    raise ToolError(message)


@server.tool()
async def sleep(seconds: float) -> str:
    """Sleep for a number of seconds, then answer."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
def huge(n: int) -> str:
    """Return n characters of text."""
    line = "0123456789abcdefghijklmnopqrstuvwxyz" * 2 + "\n"
    return (line * (n // len(line) + 1))[:n]


@server.tool()
def crash() -> str:
    """Kill the server process at once."""
    os._exit(1)


@server.tool()
def env(name: str) -> str:
    """Return an environment variable of the server process ('<unset>' when missing)."""
    return os.environ.get(name, "<unset>")


@server.tool()
def header(name: str, ctx: Context) -> str:
    """Return a header of the HTTP request that carried this call ('<none>' on stdio or when missing)."""
    headers = ctx.headers or {}
    return headers.get(name.lower(), headers.get(name, "<none>"))


@server.tool()
def mixed() -> list[TextContent | ImageContent | EmbeddedResource]:
    """Return one text, one image and one embedded resource."""
    return [
        TextContent(text="some text"),
        ImageContent(data=PIXEL, mime_type="image/png"),
        EmbeddedResource(resource=TextResourceContents(uri="file:///notes.txt", text="notes", mime_type="text/plain")),
    ]


class Stop(BaseModel):
    city: str = Field(description="where to stop")
    nights: int = 1


class TripOptions(BaseModel):
    travel_mode: Literal["car", "train", "ferry"]
    budget_eur: float | None = None


@server.tool()
def plan_trip(stops: list[Stop], options: TripOptions, tags: list[str] | None = None) -> str:
    """Plan a trip through the stops; answers with the plan as JSON."""
    return json.dumps(
        {"stops": [s.model_dump() for s in stops], "options": options.model_dump(), "tags": tags}, ensure_ascii=False
    )


def main(argv: list[str]) -> None:
    transport = argv[1] if len(argv) > 1 else "stdio"
    print(f"echo server starting ({transport})", file=sys.stderr, flush=True)
    if transport == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(argv[2]))
    elif transport == "sse":
        server.run("sse", host="127.0.0.1", port=int(argv[2]))
    else:
        server.run()


if __name__ == "__main__":
    main(sys.argv)
