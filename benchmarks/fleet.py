"""A replicated `chatagent mcp` on loopback, as a deployment runs one: replicas
(`chatagent mcp --http`, stateless) behind HAProxy (Debian's package, its
configuration written here), sharing one Playwright browser server
(`benchmarks.server.playwright_browser_server`).

    async with replica(token, browser_ws=ws) as a, replica(token, browser_ws=ws) as b, \\
            haproxy([a.port, b.port]) as lb:
        ...  # MCP clients at lb.url; lb.served() says how many requests each replica got

The replicas and HAProxy are the tests' and the load benchmark's (`benchmarks.scale`).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from chatagent.testing.ports import free_port

ROOT = Path(__file__).resolve().parents[1]

NO_HAPROXY = "HAProxy is not installed (Debian: `apt-get install haproxy`)"


def haproxy_path() -> str | None:
    """HAProxy's executable: on the PATH, or where Debian puts it (/usr/sbin, off a user's PATH)."""
    return shutil.which("haproxy") or shutil.which("haproxy", path="/usr/sbin")


@dataclass
class Replica:
    proc: asyncio.subprocess.Process
    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def stop(self) -> None:
        """SIGTERM: it drains (finishes the calls it holds, takes no new ones), then exits 143."""
        self.proc.send_signal(signal.SIGTERM)


@asynccontextmanager
async def replica(token: str, *, browser_ws: str | None = None, env: dict[str, str] | None = None,
                  log: Path | None = None) -> AsyncIterator[Replica]:
    """`chatagent mcp --http 127.0.0.1:PORT --stateless` with the bearer `token`, browsing
    through `browser_ws` (else launching its own Chromium); yields once it
    listens. Stopped (SIGTERM, then SIGKILL) afterwards if it still runs."""
    port = free_port()
    extra = {"CHATAGENT_BROWSER_WS": browser_ws} if browser_ws else {}
    with (log.open("ab") if log else open(os.devnull, "wb")) as errlog:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "chatagent", "mcp", "--http", f"127.0.0.1:{port}", "--stateless", cwd=str(ROOT),
            env={**os.environ, "PYTHONPATH": str(ROOT), "CHATAGENT_MCP_TOKEN": token, **extra, **(env or {})},
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=errlog,
        )
        try:
            await _until_listening(port, proc)
            yield Replica(proc, port)
        finally:
            if proc.returncode is None:
                proc.terminate()
                try:
                    await asyncio.wait_for(proc.wait(), 30)
                except TimeoutError:
                    proc.kill()
                    await proc.wait()


async def _until_listening(port: int, proc: asyncio.subprocess.Process | None = None, bound_s: float = 120) -> None:
    for _ in range(int(bound_s * 10)):
        if proc is not None and proc.returncode is not None:
            raise RuntimeError(f"the process on port {port} exited ({proc.returncode}) before listening")
        if accepts(port):
            return
        await asyncio.sleep(0.1)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {bound_s:g} s")


def accepts(port: int) -> bool:
    """Whether 127.0.0.1:PORT accepts a connection now."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return True
    except OSError:
        return False


@dataclass
class Balancer:
    port: int
    stats: Path
    names: list[str]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    async def served(self) -> dict[str, int]:
        """HTTP requests each replica has answered (HAProxy's `show stat`, hrsp_* summed), by replica port."""
        reader, writer = await asyncio.open_unix_connection(str(self.stats))
        writer.write(b"show stat\n")
        await writer.drain()
        csv = (await reader.read()).decode()
        writer.close()
        header = csv.splitlines()[0].lstrip("# ").split(",")
        out: dict[str, int] = {}
        for line in csv.splitlines()[1:]:
            row = dict(zip(header, line.split(","), strict=False))
            if row.get("pxname") == "replicas" and row.get("svname") in self.names:
                out[row["svname"]] = sum(int(row.get(f"hrsp_{k}xx") or 0) for k in range(1, 6))
        return out


# Requests go to the replica with the fewest in progress (calls last seconds); a
# replica that stops listening (drained) is skipped at once: a refused or reset
# connection is retried on another (read_pages and ask_pages are read-only), and
# its health check (a connect, every 0.5 s) takes it out.
HAPROXY_CONFIG = """\
global
    maxconn 4096
    stats socket {stats} mode 600 level user
defaults
    mode http
    timeout connect 2s
    timeout client 600s
    timeout server 600s
    retries 3
    option redispatch 1
    retry-on conn-failure empty-response
frontend mcp
    bind 127.0.0.1:{port}
    default_backend replicas
backend replicas
    balance leastconn
    default-server check inter 500ms fall 1 rise 2
{servers}
"""


@asynccontextmanager
async def haproxy(replica_ports: list[int]) -> AsyncIterator[Balancer]:
    """HAProxy on a free loopback port in front of the replicas, with a
    configuration written for it; stopped afterwards."""
    exe = haproxy_path()
    if exe is None:
        raise RuntimeError(NO_HAPROXY)
    port = free_port()
    names = [f"r{p}" for p in replica_ports]
    with tempfile.TemporaryDirectory() as tmp:
        stats = Path(tmp) / "stats.sock"
        config = Path(tmp) / "haproxy.cfg"
        servers = "\n".join(f"    server {n} 127.0.0.1:{p}" for n, p in zip(names, replica_ports, strict=True))
        config.write_text(HAPROXY_CONFIG.format(stats=stats, port=port, servers=servers))
        proc = await asyncio.create_subprocess_exec(
            exe, "-db", "-f", str(config), stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        )
        try:
            await _until_listening(port, proc, bound_s=30)
            while not stats.exists():
                await asyncio.sleep(0.05)
            yield Balancer(port, stats, names)
        finally:
            proc.terminate()
            await proc.wait()
