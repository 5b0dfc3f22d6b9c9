"""A small MCP server on the official Python SDK (`mcp`, pinned in requirements.lock).

Used by `tests/interop_python.rs`. `FastMCP` is called `MCPServer` since mcp 2.

Offers, as server_legacy.py and ../typescript/server.mjs do: the tools `echo {text}`,
`add {a, b}` (structured `{sum}`), `slow {seconds}`; the resources `demo://greeting`
(text/plain) and `demo://pixel` (image/png, 8 bytes); the template `demo://item/{id}`
(completion for `id`); the prompts `greet {name}` (completion for `name`) and `hello`.

Change events on demand (tests/interop_python.rs subscribes, then calls them): the
tools `touch {uri}` (`notifications/resources/updated` for `uri`) and `change {list}`
(`notifications/<list>/list_changed`, `list` one of tools, prompts, resources; the
lists themselves stay as they are), published with `Context.notify_*` on the server's
subscription bus, which feeds the `subscriptions/listen` streams (2026-07-28).

    python server.py stdio
    python server.py streamable-http [PORT]     # PORT defaults to $PORT, then 8000

Streamable HTTP binds 127.0.0.1 only and serves the endpoint at /mcp.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Literal

from pydantic import BaseModel

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import Completion, PromptReference, ResourceTemplateReference

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


@mcp.tool()
async def touch(uri: str, ctx: Context) -> str:
    """Reports the resource at `uri` as updated (notifications/resources/updated)."""
    await ctx.notify_resource_updated(uri)
    return f"touched {uri}"


@mcp.tool()
async def change(list: Literal["tools", "prompts", "resources"], ctx: Context) -> str:
    """Reports a list as changed (notifications/<list>/list_changed)."""
    notify = {
        "tools": ctx.notify_tools_changed,
        "prompts": ctx.notify_prompts_changed,
        "resources": ctx.notify_resources_changed,
    }[list]
    await notify()
    return f"changed {list}"


# Resources, a resource template, prompts and completions, the same in server.py,
# server_legacy.py and ../typescript/server.mjs (the shared checks are in
# tests/support/interop.rs).

GREETING = "Hello from the interop server."
# The 8-byte PNG signature: a small binary body whose base64 ends in padding.
PIXEL = bytes([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
ITEM_IDS = ["apple", "apricot", "banana"]
NAMES = ["Alice", "Alicia", "Bob"]


@mcp.resource("demo://greeting", mime_type="text/plain")
def greeting() -> str:
    """A fixed text."""
    return GREETING


@mcp.resource("demo://pixel", mime_type="image/png")
def pixel() -> bytes:
    """A few binary bytes."""
    return PIXEL


@mcp.resource("demo://item/{id}", mime_type="text/plain")
def item(id: str) -> str:
    """One item by id."""
    return f"item {id}"


@mcp.prompt()
def greet(name: str) -> str:
    """Greets someone by name."""
    return f"Hello, {name}!"


@mcp.prompt()
def hello() -> str:
    """A greeting without arguments."""
    return "Hello!"


@mcp.completion()
async def complete(ref, argument, context):
    """Completes the template's `id` and the `name` argument of `greet` by prefix."""
    if isinstance(ref, ResourceTemplateReference) and ref.uri == "demo://item/{id}" and argument.name == "id":
        choices = ITEM_IDS
    elif isinstance(ref, PromptReference) and ref.name == "greet" and argument.name == "name":
        choices = NAMES
    else:
        return None
    return Completion(values=[c for c in choices if c.startswith(argument.value)])


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
