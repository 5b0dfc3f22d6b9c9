"""A small MCP server on the last 1.x release of the official Python SDK (`mcp` 1.30.0,
pinned in requirements-legacy.lock, installed into .venv-legacy): a legacy-only peer
(the `initialize` handshake; it knows nothing of 2026-07-28 or `server/discover`).

Used by `tests/interop_python_legacy.rs`. The same tools, resources, resource
template, prompts and completions as server.py, on `FastMCP`:

    python server_legacy.py stdio
    python server_legacy.py streamable-http [PORT]     # PORT defaults to $PORT, then 8000

Streamable HTTP binds 127.0.0.1 only and serves the endpoint at /mcp (stateful: the
server hands out an `Mcp-Session-Id`).

Change events on demand, as in server.py: the tools `touch {uri}`
(`notifications/resources/updated` for `uri`) and `change {list}`
(`notifications/<list>/list_changed`, `list` one of tools, prompts, resources), sent
with the 1.x session API (`ctx.session.send_resource_updated`,
`send_*_list_changed`). FastMCP 1.30 declares neither `listChanged` (it builds its
initialization options with the default `NotificationOptions`, all false) nor
`resources.subscribe` (the low-level `get_capabilities` always says false), so these
notifications go to a client that was never told to expect them.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Literal

from pydantic import AnyUrl, BaseModel

from mcp.server.fastmcp import Context, FastMCP
from mcp.types import Completion, PromptReference, ResourceTemplateReference

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


@mcp.tool()
async def touch(uri: str, ctx: Context) -> str:
    """Reports the resource at `uri` as updated (notifications/resources/updated)."""
    await ctx.session.send_resource_updated(AnyUrl(uri))
    return f"touched {uri}"


@mcp.tool()
async def change(list: Literal["tools", "prompts", "resources"], ctx: Context) -> str:
    """Reports a list as changed (notifications/<list>/list_changed)."""
    notify = {
        "tools": ctx.session.send_tool_list_changed,
        "prompts": ctx.session.send_prompt_list_changed,
        "resources": ctx.session.send_resource_list_changed,
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
        mcp.settings.host = "127.0.0.1"
        mcp.settings.port = port
        mcp.settings.streamable_http_path = "/mcp"
        mcp.run("streamable-http")
    else:
        sys.exit(f"usage: {argv[0]} stdio | streamable-http [PORT]")


if __name__ == "__main__":
    main(sys.argv)
