#!/usr/bin/env python3
"""Raw wire probes of the real interop peers (no smthrs-mcp code involved).

For every peer and transport it records, each on a fresh server process:

  A. `server/discover` sent first (before any `initialize`), with the full 2026-07-28
     `_meta` (and on HTTP the headers MCP-Protocol-Version, Mcp-Method, Accept,
     Content-Type): the exact reply, or silence, or the process exiting; the HTTP
     status and body; the round-trip time. Then, on the same process / endpoint, a
     legacy `initialize` proposing 2025-06-18 (+ `notifications/initialized` and a
     `tools/list`): is it still served?
  B. a legacy `initialize` proposing 2025-06-18 sent first: the reply.
  C. on modern-capable peers: a modern `tools/list` (per-request `_meta`, headers)
     right after the discover: is it served?

Run from the repository root, peers installed (`(cd interop && npm ci)`,
`bash interop/python/setup.sh`, `cargo build --example rmcp_server`):

    python3 interop/servers/probe.py [--runs N] [--silence-ms MS] [--json OUT]

It writes the generated tables between the `probes:begin`/`probes:end` markers of
interop/servers/PROBES.md and prints them. Only the standard library is used.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import queue
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MODERN = "2026-07-28"
LEGACY = "2025-06-18"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "smithers", "version": "0.1.0"},
}
DISCOVER = {
    "jsonrpc": "2.0",
    "id": "server-discover-probe-1",
    "method": "server/discover",
    "params": {"_meta": META},
}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": LEGACY,
        "capabilities": {},
        "clientInfo": {"name": "smithers", "version": "0.1.0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
MODERN_TOOLS_LIST = {
    "jsonrpc": "2.0",
    "id": 3,
    "method": "tools/list",
    "params": {"_meta": META},
}


@dataclass
class Peer:
    key: str
    name: str
    stdio: list[str] | None
    # argv for HTTP given the port, plus extra env
    http: object | None
    modern: bool  # expected to speak 2026-07-28
    env: dict = field(default_factory=dict)


def peers() -> list[Peer]:
    everything = REPO / "interop/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
    ts = REPO / "interop/typescript/server.mjs"
    py = REPO / "interop/python"
    rmcp = REPO / "target/debug/examples/rmcp_server"
    return [
        Peer("everything", "server-everything 2026.8.31", ["node", str(everything), "stdio"],
             lambda port: (["node", str(everything), "streamableHttp"], {"PORT": str(port)}), False),
        Peer("python", "Python mcp 2.3.0", [str(py / ".venv/bin/python"), str(py / "server.py"), "stdio"],
             lambda port: ([str(py / ".venv/bin/python"), str(py / "server.py"), "streamable-http", str(port)], {}), True),
        Peer("python-legacy", "Python mcp 1.30.0",
             [str(py / ".venv-legacy/bin/python"), str(py / "server_legacy.py"), "stdio"],
             lambda port: ([str(py / ".venv-legacy/bin/python"), str(py / "server_legacy.py"), "streamable-http", str(port)], {}),
             False),
        Peer("rmcp", "rmcp 3.11 (default: all versions)", [str(rmcp), "stdio"],
             lambda port: ([str(rmcp), "http", str(port)], {}), True),
        Peer("rmcp-legacy", "rmcp 3.11 `--legacy-only`", [str(rmcp), "stdio", "--legacy-only"],
             lambda port: ([str(rmcp), "http", str(port), "--legacy-only"], {}), False),
        Peer("typescript", "TypeScript `@modelcontextprotocol/server` 2.4.0", ["node", str(ts), "stdio"],
             lambda port: (["node", str(ts), "http", str(port)], {}), True),
    ]


# Seconds between spawning a stdio peer and the first line sent, so the cold RTT is not
# mostly interpreter start-up (set by --settle-ms).
SETTLE = 2.5


def discover_again(n: int) -> dict:
    return {**DISCOVER, "id": f"server-discover-probe-{n}"}


def ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


# ---------------------------------------------------------------- stdio


class StdioPeer:
    def __init__(self, argv: list[str]):
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO
        )
        self.lines: queue.Queue = queue.Queue()
        self.stderr: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.decode("utf-8", "replace").rstrip("\n"))
        self.lines.put(None)

    def _read_err(self):
        for line in self.proc.stderr:
            self.stderr.append(line.decode("utf-8", "replace").rstrip("\n"))

    def send(self, message: dict) -> bool:
        try:
            self.proc.stdin.write((json.dumps(message) + "\n").encode())
            self.proc.stdin.flush()
            return True
        except (BrokenPipeError, OSError):
            return False

    def wait_reply(self, msg_id, timeout: float):
        """(kind, payload, seconds): kind is reply | exit | silence."""
        start = time.monotonic()
        deadline = start + timeout
        others = []
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return "silence", others, time.monotonic() - start
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                code = self.proc.wait()
                return "exit", code, time.monotonic() - start
            try:
                message = json.loads(line)
            except ValueError:
                others.append(line)
                continue
            if isinstance(message, dict) and message.get("id") == msg_id and "method" not in message:
                return "reply", message, time.monotonic() - start
            others.append(message)

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def ready_stdio(argv):
    """Spawned and given a moment so the first RTT does not include interpreter start-up."""
    peer = StdioPeer(argv)
    time.sleep(SETTLE)
    return peer


def stdio_probe(peer: Peer, silence: float) -> dict:
    out: dict = {}
    # A: discover first, then initialize on the same process.
    p = ready_stdio(peer.stdio)
    sent = p.send(DISCOVER)
    kind, payload, took = p.wait_reply(DISCOVER["id"], silence) if sent else ("exit", p.proc.wait(), 0.0)
    out["discover"] = {"kind": kind, "payload": payload, "ms": ms(took)}
    if kind == "reply":
        again = discover_again(2)
        p.send(again)
        k2, _, t2 = p.wait_reply(again["id"], silence)
        out["discover_warm"] = {"kind": k2, "ms": ms(t2)}
    if kind == "exit" or p.proc.poll() is not None:
        out["after"] = {"kind": "exited", "code": p.proc.poll()}
    else:
        if p.send(INITIALIZE):
            kind2, payload2, took2 = p.wait_reply(1, silence)
        else:
            kind2, payload2, took2 = "exit", p.proc.wait(), 0.0
        after = {"kind": kind2, "payload": payload2, "ms": ms(took2)}
        if kind2 == "reply" and "result" in payload2:
            p.send(INITIALIZED)
            p.send(TOOLS_LIST)
            kind3, payload3, _ = p.wait_reply(2, silence)
            after["tools"] = len(payload3.get("result", {}).get("tools", [])) if kind3 == "reply" else kind3
        out["after"] = after
    if peer.modern and out["discover"]["kind"] == "reply" and "result" in out["discover"]["payload"]:
        q = ready_stdio(peer.stdio)
        q.send(DISCOVER)
        q.wait_reply(DISCOVER["id"], silence)
        q.send(MODERN_TOOLS_LIST)
        k, pl, t = q.wait_reply(3, silence)
        out["modern_tools"] = {"kind": k, "payload": pl, "ms": ms(t)}
        q.close()
    out["stderr"] = p.stderr[-3:]
    p.close()
    # B: initialize first.
    p = ready_stdio(peer.stdio)
    p.send(INITIALIZE)
    kind, payload, took = p.wait_reply(1, silence)
    out["initialize"] = {"kind": kind, "payload": payload, "ms": ms(took)}
    p.close()
    return out


# ---------------------------------------------------------------- HTTP


class HttpServer:
    def __init__(self, make, port: int):
        argv, env = make(port)
        self.port = port
        self.log = open(os.devnull, "w")
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log, cwd=REPO,
            env={**os.environ, **env},
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        time.sleep(0.3)

    def close(self):
        self.proc.kill()
        self.proc.wait()
        self.log.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(port: int, message: dict, headers: dict, timeout: float) -> dict:
    """One POST; reads a JSON body or the SSE stream up to the message with our id."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    body = json.dumps(message).encode()
    start = time.monotonic()
    try:
        conn.request("POST", "/mcp", body=body, headers=headers)
        resp = conn.getresponse()
        ctype = resp.getheader("content-type") or ""
        out = {
            "status": resp.status,
            "content_type": ctype,
            "session": resp.getheader("mcp-session-id"),
        }
        if ctype.startswith("text/event-stream"):
            found = None
            raw = []
            while True:
                line = resp.readline()
                if not line:
                    break
                line = line.decode("utf-8", "replace").rstrip("\r\n")
                raw.append(line)
                if line.startswith("data:"):
                    data = line[5:].strip()
                    if data:
                        try:
                            msg = json.loads(data)
                        except ValueError:
                            continue
                        if isinstance(msg, dict) and msg.get("id") == message.get("id") and "method" not in msg:
                            found = msg
                            break
            out["ms"] = ms(time.monotonic() - start)
            out["body"] = found if found is not None else "\n".join(raw)[:300]
        else:
            data = resp.read()
            out["ms"] = ms(time.monotonic() - start)
            text = data.decode("utf-8", "replace")
            try:
                out["body"] = json.loads(text) if text else ""
            except ValueError:
                out["body"] = text[:300]
        return out
    except (socket.timeout, TimeoutError):
        return {"status": "timeout", "ms": ms(time.monotonic() - start)}
    finally:
        conn.close()


BASE_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
DISCOVER_HEADERS = {**BASE_HEADERS, "MCP-Protocol-Version": MODERN, "Mcp-Method": "server/discover"}
MODERN_LIST_HEADERS = {**BASE_HEADERS, "MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/list"}


def legacy_handshake(port: int, timeout: float) -> dict:
    init = post(port, INITIALIZE, BASE_HEADERS, timeout)
    out = {"initialize": init}
    if init.get("status") == 200 and isinstance(init.get("body"), dict) and "result" in init["body"]:
        version = init["body"]["result"].get("protocolVersion", LEGACY)
        headers = {**BASE_HEADERS, "MCP-Protocol-Version": version}
        if init.get("session"):
            headers["Mcp-Session-Id"] = init["session"]
        out["initialized"] = post(port, INITIALIZED, headers, timeout).get("status")
        tools = post(port, TOOLS_LIST, headers, timeout)
        body = tools.get("body")
        out["tools"] = len(body["result"]["tools"]) if isinstance(body, dict) and "result" in body else tools
    return out


def http_probe(peer: Peer, timeout: float) -> dict:
    out: dict = {}
    server = HttpServer(peer.http, free_port())
    try:
        out["discover"] = post(server.port, DISCOVER, DISCOVER_HEADERS, timeout)
        out["discover_warm"] = post(server.port, discover_again(2), DISCOVER_HEADERS, timeout)
        out["after"] = legacy_handshake(server.port, timeout)
        if peer.modern:
            out["modern_tools"] = post(server.port, MODERN_TOOLS_LIST, MODERN_LIST_HEADERS, timeout)
        out["alive"] = server.proc.poll() is None
    finally:
        server.close()
    server = HttpServer(peer.http, free_port())
    try:
        out["initialize"] = post(server.port, INITIALIZE, BASE_HEADERS, timeout)
    finally:
        server.close()
    return out


# ---------------------------------------------------------------- rendering


def short(value, limit=400) -> str:
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    text = text.replace("|", "\\|").replace("\n", " ⏎ ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def discover_summary(msg) -> str:
    if not isinstance(msg, dict):
        return short(msg)
    if "error" in msg:
        return "error " + short(msg["error"])
    result = msg.get("result", {})
    info_body = result.get("serverInfo")
    info_meta = (result.get("_meta") or {}).get("io.modelcontextprotocol/serverInfo")
    parts = [
        f"`supportedVersions` {short(result.get('supportedVersions'))}",
        f"`capabilities` {short(result.get('capabilities'))}",
        f"`resultType` {short(result.get('resultType'))}",
        f"`ttlMs` {short(result.get('ttlMs'))}, `cacheScope` {short(result.get('cacheScope'))}",
        "serverInfo in " + ("`_meta` " + short(info_meta) if info_meta else "")
        + (" and " if info_meta and info_body else "")
        + ("the body " + short(info_body) if info_body else "")
        + ("nowhere" if not (info_meta or info_body) else ""),
    ]
    return "; ".join(parts)


def init_summary(msg) -> str:
    if not isinstance(msg, dict):
        return short(msg)
    if "error" in msg:
        return "error " + short(msg["error"])
    r = msg.get("result", {})
    return f"`protocolVersion` {short(r.get('protocolVersion'))}, serverInfo {short(r.get('serverInfo'))}"


def median_range(values):
    values = [v for v in values if isinstance(v, (int, float))]
    if not values:
        return "—"
    if len(values) == 1:
        return f"{values[0]} ms"
    return f"{statistics.median(values)} ms ({min(values)}–{max(values)})"


def render(results: dict, runs: int, silence_ms: int) -> str:
    rows_stdio = ["| peer | `server/discover` first: reply | RTT cold; warm (median, range of %d) | same process: `initialize` 2025-06-18 after it | fresh process: `initialize` 2025-06-18 first | probe's extra connect cost |" % runs,
                  "| --- | --- | --- | --- | --- | --- |"]
    rows_http = ["| peer | `server/discover` first: HTTP status, content type, body | RTT cold; warm (median, range of %d) | same endpoint: `initialize` 2025-06-18 after it | fresh server: `initialize` 2025-06-18 first | probe's extra connect cost |" % runs,
                 "| --- | --- | --- | --- | --- | --- |"]
    rows_modern = ["| peer | transport | `server/discover` result | modern `tools/list` (per-request `_meta`) right after |",
                   "| --- | --- | --- | --- |"]
    for key, entry in results.items():
        name = entry["name"]
        if "stdio" in entry:
            first = entry["stdio"][0]
            d = first["discover"]
            if d["kind"] == "reply":
                reply = discover_summary(d["payload"]) if "result" in d["payload"] else "`" + short(d["payload"]) + "`"
            elif d["kind"] == "exit":
                reply = f"**exits** (status {d['payload']}) without a reply"
            else:
                reply = f"**silence** for {silence_ms} ms" + (f"; other output: {short(d['payload'])}" if d["payload"] else "")
            rtts = [r["discover"]["ms"] for r in entry["stdio"] if r["discover"]["kind"] == "reply"]
            warm = [r["discover_warm"]["ms"] for r in entry["stdio"] if r.get("discover_warm", {}).get("kind") == "reply"]
            rtt = (median_range(rtts) + "; " + median_range(warm)) if rtts else (
                "— (exit after %s ms)" % d["ms"] if d["kind"] == "exit" else "—")
            a = first["after"]
            if a["kind"] == "exited":
                after = "— (the process is gone: respawn)"
            elif a["kind"] == "reply":
                after = ("served: " + init_summary(a["payload"]) + f", then `tools/list` → {a.get('tools')} tools"
                         if "result" in a["payload"] else init_summary(a["payload"]))
                after += f" ({a['ms']} ms)"
            else:
                after = a["kind"]
            i = first["initialize"]
            init = init_summary(i["payload"]) + f" ({i['ms']} ms)" if i["kind"] == "reply" else i["kind"]
            extra = []
            for r in entry["stdio"]:
                if (r["discover"]["kind"] == "reply" and r["after"].get("kind") == "reply"
                        and "result" in r["after"]["payload"] and r["initialize"]["kind"] == "reply"):
                    extra.append(round(r["discover"]["ms"] + r["after"]["ms"] - r["initialize"]["ms"], 1))
            cost = median_range(extra) if extra else "n/a (no fallback)"
            rows_stdio.append(f"| {name} | {reply} | {rtt} | {after} | {init} | {cost} |")
            if "modern_tools" in first:
                m = first["modern_tools"]
                tools = m["payload"].get("result", {}).get("tools") if m["kind"] == "reply" and isinstance(m["payload"], dict) else None
                desc = (f"served: {len(tools)} tools, `resultType` {short(m['payload']['result'].get('resultType'))}, "
                        f"`ttlMs` {short(m['payload']['result'].get('ttlMs'))}, `cacheScope` {short(m['payload']['result'].get('cacheScope'))}"
                        if tools is not None else short(m["payload"]))
                rows_modern.append(f"| {name} | stdio | {discover_summary(d['payload'])} | {desc} |")
        if "http" in entry:
            first = entry["http"][0]
            d = first["discover"]
            body = d.get("body")
            if isinstance(body, dict) and "result" in body:
                body_text = discover_summary(body)
            else:
                body_text = "`" + short(body if body not in (None, "") else "(empty)") + "`"
            reply = f"**{d.get('status')}** `{d.get('content_type') or '(none)'}` {body_text}"
            rtt = (median_range([r["discover"].get("ms") for r in entry["http"]]) + "; "
                   + median_range([r["discover_warm"].get("ms") for r in entry["http"]]))
            a = first["after"]
            ai = a["initialize"]
            if ai.get("status") == 200 and isinstance(ai.get("body"), dict) and "result" in ai["body"]:
                after = (f"served: {ai['status']}, " + init_summary(ai["body"])
                         + (", `Mcp-Session-Id` set" if ai.get("session") else ", no session id")
                         + f", `initialized` → {a.get('initialized')}, `tools/list` → {a.get('tools')} tools ({ai.get('ms')} ms)")
            else:
                after = f"{ai.get('status')} `{short(ai.get('body'))}`"
            i = first["initialize"]
            init = (f"{i.get('status')}, " + init_summary(i.get("body"))
                    + (", `Mcp-Session-Id` set" if i.get("session") else ", no session id")
                    + f" ({i.get('ms')} ms)")
            extra = []
            for r in entry["http"]:
                ri, rf = r["after"]["initialize"], r["initialize"]
                if all(isinstance(x.get("ms"), (int, float)) for x in (r["discover"], ri, rf)) and ri.get("status") == 200:
                    extra.append(round(r["discover"]["ms"] + ri["ms"] - rf["ms"], 1))
            cost = median_range(extra) if extra else "—"
            rows_http.append(f"| {name} | {reply} | {rtt} | {after} | {init} | {cost} |")
            if "modern_tools" in first and isinstance(body, dict) and "result" in body:
                m = first["modern_tools"]
                mb = m.get("body")
                if isinstance(mb, dict) and "result" in mb:
                    r = mb["result"]
                    desc = (f"{m.get('status')}: {len(r.get('tools', []))} tools, `resultType` {short(r.get('resultType'))}, "
                            f"`ttlMs` {short(r.get('ttlMs'))}, `cacheScope` {short(r.get('cacheScope'))}")
                else:
                    desc = f"{m.get('status')} `{short(mb)}`"
                rows_modern.append(f"| {name} | Streamable HTTP | {discover_summary(body)} | {desc} |")
    return "\n".join([
        "### stdio (probe sent as the first line; silence = no reply within %d ms)" % silence_ms,
        "",
        *rows_stdio,
        "",
        "### Streamable HTTP (POST /mcp, no session id)",
        "",
        *rows_http,
        "",
        "### Modern-capable peers: the discover result and a modern request",
        "",
        *rows_modern,
    ])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--silence-ms", type=int, default=5000)
    ap.add_argument("--json", default=None)
    ap.add_argument("--only", default=None, help="comma-separated peer keys")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--settle-ms", type=int, default=2500)
    ap.add_argument("--from-json", default=None, help="render a saved --json file instead of probing")
    a = ap.parse_args()
    global SETTLE
    SETTLE = a.settle_ms / 1000
    silence = a.silence_ms / 1000
    results: dict = json.loads(Path(a.from_json).read_text()) if a.from_json else {}
    for peer in [] if a.from_json else peers():
        if a.only and peer.key not in a.only.split(","):
            continue
        entry = {"name": peer.name}
        if peer.stdio:
            entry["stdio"] = [stdio_probe(peer, silence) for _ in range(a.runs)]
        if peer.http:
            entry["http"] = [http_probe(peer, silence) for _ in range(a.runs)]
        results[peer.key] = entry
        print(f"probed {peer.name}", file=sys.stderr)
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=2))
    tables = render(results, a.runs, a.silence_ms)
    print(tables)
    if not a.no_write:
        path = REPO / "interop/servers/PROBES.md"
        if path.exists():
            text = path.read_text()
            pattern = re.compile(r"(<!-- probes:begin[^\n]*-->\n)(?:.*?\n)?(<!-- probes:end -->)", re.S)
            if pattern.search(text):
                path.write_text(pattern.sub(lambda m: m.group(1) + tables + "\n" + m.group(2), text))


if __name__ == "__main__":
    main()
