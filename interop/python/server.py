"""A small MCP server on the official Python SDK (`mcp`, pinned in requirements.lock).

Used by `tests/interop_python.rs`. `FastMCP` is called `MCPServer` since mcp 2.

    python server.py stdio
    python server.py streamable-http [PORT]     # PORT defaults to $PORT, then 8000

Streamable HTTP binds 127.0.0.1 only and serves the endpoint at /mcp.
"""

from __future__ import annotations

import asyncio
import os
import sys

from pydantic import BaseModel

from mcp.server.mcpserver import MCPServer

mcp = MCPServer("smthrs-interop-python")


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
        mcp.run("streamable-http", host="127.0.0.1", port=port, streamable_http_path="/mcp")
    else:
        sys.exit(f"usage: {argv[0]} stdio | streamable-http [PORT]")


if __name__ == "__main__":
    main(sys.argv)
