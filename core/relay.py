"""A local TCP relay that delays traffic both ways: a remote server's round trips, simulated.

Each chunk read at time t is written at t + rtt/2 whatever else is in flight, so it
adds latency without limiting bandwidth (a COPY stream flows at full speed, shifted).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from types import TracebackType

from psycopg.conninfo import conninfo_to_dict, make_conninfo


class LatencyRelay:
    """Listens on 127.0.0.1:<ephemeral>; forwards to a TCP host:port or a Unix socket."""

    host = "127.0.0.1"

    def __init__(
        self, *, upstream_host: str | None = None, upstream_port: int | None = None,
        upstream_unix: str | None = None, rtt_ms: float,
    ) -> None:
        if upstream_unix is None and (upstream_host is None or upstream_port is None):
            raise ValueError("give upstream_unix, or upstream_host and upstream_port")
        self.upstream_host, self.upstream_port, self.upstream_unix = upstream_host, upstream_port, upstream_unix
        self.delay = max(0.0, rtt_ms) / 2000.0
        self.bytes_up = 0
        self.bytes_down = 0
        self._port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._ready = threading.Event()

    @property
    def port(self) -> int:
        return self._port

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="sluice-relay", daemon=True)
        self._thread.start()
        self._ready.wait(10)

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        self._server = loop.run_until_complete(asyncio.start_server(self._on_client, self.host, 0))
        self._port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            for task in list(self._tasks):
                task.cancel()
            loop.run_until_complete(asyncio.gather(*self._tasks, return_exceptions=True))
            loop.close()

    async def _on_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            if self.upstream_unix:
                up_r, up_w = await asyncio.open_unix_connection(self.upstream_unix)
            else:
                up_r, up_w = await asyncio.open_connection(self.upstream_host, self.upstream_port)
        except OSError:
            writer.close()
            self._tasks.discard(task)
            return
        try:
            await asyncio.gather(self._pipe(reader, up_w, True), self._pipe(up_r, writer, False))
        except (OSError, asyncio.CancelledError):
            pass
        finally:
            for w in (writer, up_w):
                with contextlib.suppress(Exception):
                    w.close()
            self._tasks.discard(task)

    async def _pipe(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter, up: bool) -> None:
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def read() -> None:
            while True:
                data = await src.read(1 << 16)
                await queue.put((time.monotonic() + self.delay, data))
                if not data:
                    return

        async def write() -> None:
            while True:
                due, data = await queue.get()
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                if not data:
                    with contextlib.suppress(OSError):
                        dst.write_eof()
                    return
                dst.write(data)
                await dst.drain()
                if up:
                    self.bytes_up += len(data)
                else:
                    self.bytes_down += len(data)

        await asyncio.gather(read(), write())

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        if self._server is not None:
            loop.call_soon_threadsafe(self._server.close)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)
        self._loop = self._thread = None

    def __enter__(self) -> LatencyRelay:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


def upstream_of(dsn: str) -> tuple[str | None, int | None, str | None]:
    params = conninfo_to_dict(dsn)
    host = str(params.get("host") or "localhost").split(",")[0]
    port = int(str(params.get("port") or 5432).split(",")[0])
    if host.startswith("/"):
        return None, None, f"{host}/.s.PGSQL.{port}"
    return host, port, None


def relay_dsn(dsn: str, relay: LatencyRelay) -> str:
    params = {k: v for k, v in conninfo_to_dict(dsn).items() if v is not None and k != "hostaddr"}
    params.update(host=relay.host, port=str(relay.port))
    params.setdefault("sslmode", "disable")
    return make_conninfo("", **params)
