"""A small MCP server on the last 1.x release of the official Python SDK (`mcp` 1.30.0,
pinned in requirements-legacy.lock, installed into .venv-legacy): a legacy-only peer
(the `initialize` handshake; it knows nothing of 2026-07-28 or `server/discover`).

Used by `tests/interop_python_legacy.rs`. The same tools as server.py, on `FastMCP`:

    python server_legacy.py stdio
    python server_legacy.py streamable-http [PORT]     # PORT defaults to $PORT, then 8000

Streamable HTTP binds 127.0.0.1 only and serves the endpoint at /mcp (stateful: the
server hands out an `Mcp-Session-Id`).
"""

from __future__ import annotations

import asyncio
import os
import sys

from pydantic import BaseModel

from mcp.server.fastmcp import FastMCP

mcp = FastMCP("smthrs-interop-python-legacy")


class Sum(BaseModel):
    sum: float


@mcp.tool()
def echo(text: str) -> str:
    """Returns the text unchanged."""
    return text


@mcp.tool()
def add(a: float, b: float) -> Sum:
    """Adds two numbers; the sum also comes back as structured content."""
    return Sum(sum=a + b)


@mcp.tool()
async def slow(seconds: float) -> str:
    """Sleeps for `seconds`, then says so."""
    await asyncio.sleep(seconds)
    return f"slept {seconds} s"


def main(argv: list[str]) -> None:
    transport = argv[1] if len(argv) > 1 else "stdio"
    if transport == "stdio":
        mcp.run("stdio")
    elif transport == "streamable-http":
        port = int(argv[2] if len(argv) > 2 else os.environ.get("PORT", "8000"))
        mcp.settings.host = "127.0.0.1"
        mcp.settings.port = port
        mcp.settings.streamable_http_path = "/mcp"
        mcp.run("streamable-http")
    else:
        sys.exit(f"usage: {argv[0]} stdio | streamable-http [PORT]")


if __name__ == "__main__":
    main(sys.argv)
