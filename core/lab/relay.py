"""A local TCP relay that delays traffic both ways: a remote server's round trips, simulated.

Each chunk read at time t is written at t + rtt/2 whatever else is in flight, so the relay
adds latency without limiting bandwidth (a COPY stream flows at full speed, just shifted).
It runs one asyncio event loop in one daemon thread; stop() ends every connection.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import math
import os
import socket
import threading
import weakref
from collections.abc import Callable
from types import TracebackType

from psycopg.conninfo import conninfo_to_dict, make_conninfo

log = logging.getLogger(__name__)

_RUNNING: weakref.WeakSet[LatencyRelay] = weakref.WeakSet()  # started and not yet stopped


def running() -> list[LatencyRelay]:
    """Relays started and not stopped (a test fails when one outlives it)."""
    return list(_RUNNING)

_LOOPBACK = "127.0.0.1"
_CHUNK = 256 * 1024
# StreamReader buffer: pauses the socket past 2x this, so reads stay large on fast streams.
_STREAM_LIMIT = 1024 * 1024
# Bytes queued per direction before we stop reading (backpressure). Caps throughput at
# _MAX_IN_FLIGHT / (rtt/2), e.g. 200 MiB/s at 320 ms RTT: well above what a load needs.
_MAX_IN_FLIGHT = 32 * 1024 * 1024
_CONNECT_TIMEOUT_S = 10.0
_START_TIMEOUT_S = 10.0
_STOP_TIMEOUT_S = 2.0
# Part of the stop budget spent waiting for cancelled connections to unwind.
_UNWIND_TIMEOUT_S = 1.0

# A queued chunk: (due loop time, data). b"" marks EOF, None a reset of the source.
_Item = tuple[float, bytes | None]


class _Budget:
    """Bytes read but not yet written, for one direction; the reader waits while it is full."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self._space = asyncio.Event()

    async def acquire(self, n: int) -> None:
        # One chunk may overshoot the limit, so a chunk larger than the limit still passes.
        while self.used >= self.limit:
            self._space.clear()
            await self._space.wait()
        self.used += n

    def release(self, n: int) -> None:
        self.used -= n
        self._space.set()


class LatencyRelay:
    """Listens on 127.0.0.1:<ephemeral port>; each accepted client connection is forwarded to the upstream,
    a TCP (host, port) or a Unix-domain socket path. Every byte is delivered unchanged, in order, in both
    directions, each chunk delayed by rtt_ms/2 one way (so a request+response round trip gains >= rtt_ms)."""

    def __init__(
        self, *, upstream_host: str | None = None, upstream_port: int | None = None,
        upstream_unix: str | None = None, rtt_ms: float,
    ) -> None:
        if upstream_unix is None and (upstream_host is None or upstream_port is None):
            raise ValueError("give upstream_unix, or upstream_host and upstream_port")
        if upstream_unix is not None and (upstream_host is not None or upstream_port is not None):
            raise ValueError("give upstream_unix or upstream_host/upstream_port, not both")
        if not math.isfinite(rtt_ms) or rtt_ms < 0:
            raise ValueError(f"rtt_ms must be a finite number >= 0, not {rtt_ms!r}")
        self.upstream_host = upstream_host
        self.upstream_port = upstream_port
        self.upstream_unix = upstream_unix
        self.rtt_ms = float(rtt_ms)
        self._delay = self.rtt_ms / 2000.0  # one way, in seconds
        self.bytes_up = 0  # client -> upstream, counted once written
        self.bytes_down = 0  # upstream -> client
        self._port = 0
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_event: asyncio.Event | None = None
        self._addrs: list[tuple[int, tuple[object, ...]]] = []
        self._conns: set[asyncio.Task[None]] = set()
        self._closing = False

    @property
    def host(self) -> str:
        return _LOOPBACK

    @property
    def port(self) -> int:
        if not self._port:
            raise RuntimeError("the relay has not been started")
        return self._port

    def start(self) -> None:
        """Bind and serve from a daemon thread; returns once listening. Raises if the upstream host
        cannot be resolved or the port cannot be bound."""
        with self._lock:
            if self._thread is not None:
                raise RuntimeError("the relay is already running")
            if self.upstream_unix is None:
                # Resolve here, in the caller's thread: a bad host fails now with a clear error, and
                # the loop never needs the executor threads asyncio would use for getaddrinfo.
                infos = socket.getaddrinfo(self.upstream_host, self.upstream_port, type=socket.SOCK_STREAM)
                self._addrs = [(family, tuple(addr)) for family, _t, _p, _c, addr in infos]
            self._closing = False
            started: concurrent.futures.Future[int] = concurrent.futures.Future()
            thread = threading.Thread(target=self._run, args=(started,), name="sluice-relay", daemon=True)
            thread.start()
            try:
                self._port = started.result(timeout=_START_TIMEOUT_S)
            except BaseException:
                self._closing = True
                loop, event = self._loop, self._stop_event
                if loop is not None and event is not None:
                    _call_soon(loop, event.set)
                thread.join(_STOP_TIMEOUT_S)
                raise
            self._thread = thread
            _RUNNING.add(self)

    def stop(self) -> None:
        """Close the listener and every connection, then join the thread (at most ~2 s). Idempotent."""
        with self._lock:
            thread, loop, event = self._thread, self._loop, self._stop_event
            self._thread = None
            if thread is None:
                return
            _RUNNING.discard(self)
            self._closing = True
            if loop is not None and event is not None:
                _call_soon(loop, event.set)
            thread.join(_STOP_TIMEOUT_S)
            if thread.is_alive():
                log.warning("latency relay thread did not stop within %.1f s", _STOP_TIMEOUT_S)

    def __enter__(self) -> LatencyRelay:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    # --- the event loop thread -------------------------------------------------------------

    def _run(self, started: concurrent.futures.Future[int]) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._main(started))
        except BaseException as exc:  # noqa: BLE001 - a failed bind is reported to start(), not raised here
            if not started.done():
                started.set_exception(exc)
            else:
                log.warning("latency relay failed", exc_info=True)
        finally:
            try:
                # Anything still pending (it should not be) is cancelled so the loop closes cleanly.
                rest = asyncio.all_tasks(loop)
                for task in rest:
                    task.cancel()
                if rest:
                    loop.run_until_complete(asyncio.wait(rest, timeout=0.2))
            finally:
                loop.close()
                self._loop = None
                self._stop_event = None

    async def _main(self, started: concurrent.futures.Future[int]) -> None:
        self._stop_event = asyncio.Event()
        server = await asyncio.start_server(self._serve, _LOOPBACK, 0, limit=_STREAM_LIMIT)
        try:
            started.set_result(int(server.sockets[0].getsockname()[1]))
            await self._stop_event.wait()
        finally:
            self._closing = True
            server.close()
            for task in list(self._conns):
                task.cancel()
            # Handlers accepted but not yet running see _closing and drop their connection at once.
            others = asyncio.all_tasks() - {asyncio.current_task()}
            if others:
                await asyncio.wait(others, timeout=_UNWIND_TIMEOUT_S)
            try:
                await asyncio.wait_for(server.wait_closed(), timeout=0.2)
            except (TimeoutError, OSError):
                pass

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if self._closing or task is None:
            client_w.transport.abort()
            return
        self._conns.add(task)
        upstream_w: asyncio.StreamWriter | None = None
        clean = False
        try:
            try:
                upstream_r, writer = await asyncio.wait_for(self._connect(), _CONNECT_TIMEOUT_S)
            except (TimeoutError, OSError) as exc:
                # The client sees the connection close, as it would if the server were down.
                log.debug("relay: cannot reach upstream: %s", exc)
                return
            upstream_w = writer
            pipes = [
                asyncio.create_task(self._pipe(client_r, writer, up=True)),
                asyncio.create_task(self._pipe(upstream_r, client_w, up=False)),
            ]
            try:
                await asyncio.gather(*pipes)
                clean = True
            finally:
                for pipe in pipes:
                    pipe.cancel()
                await asyncio.wait(pipes)
        except asyncio.CancelledError:
            # stop() cancelled us. asyncio logs a handler task that ends cancelled as an error,
            # so end normally: this task is the top of its connection and nothing awaits it.
            pass
        except Exception:  # noqa: BLE001 - a bug here must not kill the loop; resets never get this far
            log.warning("relay connection failed", exc_info=True)
        finally:
            for w in (client_w, upstream_w):
                if w is None:
                    continue
                if clean:
                    w.close()  # both ways finished: let buffered bytes flush, then close
                else:
                    w.transport.abort()
            self._conns.discard(task)

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self.upstream_unix is not None:
            return await asyncio.open_unix_connection(self.upstream_unix, limit=_STREAM_LIMIT)
        loop = asyncio.get_running_loop()
        error: OSError = OSError(f"no address for {self.upstream_host}")
        for family, addr in self._addrs:  # in getaddrinfo's order, like libpq
            sock = socket.socket(family, socket.SOCK_STREAM)
            try:
                sock.setblocking(False)
                await loop.sock_connect(sock, addr)
            except OSError as exc:
                sock.close()
                error = exc
                continue
            except BaseException:
                sock.close()
                raise
            return await asyncio.open_connection(sock=sock, limit=_STREAM_LIMIT)
        raise error

    async def _pipe(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter, *, up: bool) -> None:
        """Copy src to dst until EOF or reset, then pass that on to dst."""
        if self._delay == 0:
            # No RTT: straight through, no queue and no timers.
            reset = False
            try:
                while data := await src.read(_CHUNK):
                    if not await self._deliver(dst, data, up):
                        return
            except OSError as exc:
                log.debug("relay: %s side reset: %s", "client" if up else "upstream", exc)
                reset = True
            _finish(dst, reset=reset)
            return
        queue: asyncio.Queue[_Item] = asyncio.Queue()
        budget = _Budget(_MAX_IN_FLIGHT)
        reader = asyncio.create_task(self._read(src, queue, budget, up))
        try:
            await self._write(queue, dst, budget, up)
        finally:
            # The writer is done (EOF passed on, or dst is gone): nothing more to read for.
            reader.cancel()
            await asyncio.wait([reader])

    async def _read(self, src: asyncio.StreamReader, queue: asyncio.Queue[_Item], budget: _Budget, up: bool) -> None:
        loop = asyncio.get_running_loop()
        end: bytes | None = b""
        try:
            while True:
                data = await src.read(_CHUNK)
                due = loop.time() + self._delay  # stamped on arrival, whatever is queued ahead
                if not data:
                    break
                await budget.acquire(len(data))
                queue.put_nowait((due, data))
        except OSError as exc:
            log.debug("relay: %s side reset: %s", "client" if up else "upstream", exc)
            end = None
        queue.put_nowait((loop.time() + self._delay, end))

    async def _write(self, queue: asyncio.Queue[_Item], dst: asyncio.StreamWriter, budget: _Budget, up: bool) -> None:
        loop = asyncio.get_running_loop()
        while True:
            due, data = await queue.get()
            # Loop: the timer may fire a hair early, and the round trip must gain at least rtt.
            while (wait := due - loop.time()) > 0:
                await asyncio.sleep(wait)
            if not data:
                _finish(dst, reset=data is None)
                return
            budget.release(len(data))
            if not await self._deliver(dst, data, up):
                return

    async def _deliver(self, dst: asyncio.StreamWriter, data: bytes, up: bool) -> bool:
        """Write and drain; False when dst is gone (then it is aborted, which ends the other direction)."""
        if dst.transport.is_closing():
            return False
        try:
            dst.write(data)
            await dst.drain()
        except OSError as exc:
            log.debug("relay: %s side gone: %s", "upstream" if up else "client", exc)
            dst.transport.abort()
            return False
        if up:
            self.bytes_up += len(data)
        else:
            self.bytes_down += len(data)
        return True


def _finish(dst: asyncio.StreamWriter, *, reset: bool) -> None:
    """Pass the source's end on: a half-close stays a half-close, a reset becomes an abort."""
    if reset:
        dst.transport.abort()
        return
    try:
        if dst.can_write_eof():
            dst.write_eof()
        else:
            dst.close()
    except OSError as exc:
        log.debug("relay: write_eof failed: %s", exc)
        dst.transport.abort()


def _call_soon(loop: asyncio.AbstractEventLoop, callback: Callable[[], object]) -> None:
    try:
        loop.call_soon_threadsafe(callback)
    except RuntimeError:
        pass  # the loop already closed: nothing left to stop


def upstream_of(dsn: str) -> tuple[str | None, int | None, str | None]:
    """From a DSN, the upstream the relay must target: (host, port, None) for TCP, or
    (None, None, socket_path) when host is a directory: path = f"{host}/.s.PGSQL.{port or 5432}".
    Takes the first host of a list; hostaddr, when given, is where libpq really connects.
    PGHOST/PGPORT apply when the DSN leaves them out, as in libpq."""
    params = conninfo_to_dict(dsn)
    host = str(params.get("host") or os.environ.get("PGHOST") or "localhost").split(",")[0].strip()
    port_text = str(params.get("port") or os.environ.get("PGPORT") or "5432").split(",")[0].strip()
    port = int(port_text) if port_text else 5432
    hostaddr = str(params.get("hostaddr") or "").split(",")[0].strip()
    if hostaddr:
        return hostaddr, port, None
    if host.startswith("/"):
        return None, None, f"{host.rstrip('/')}/.s.PGSQL.{port}"
    return host, port, None


def relay_dsn(dsn: str, relay: LatencyRelay) -> str:
    """`dsn` (URI or key=value) pointed at the relay: host=127.0.0.1, port=relay.port, hostaddr dropped,
    everything else kept; sslmode=disable added only when no sslmode was given (a Unix socket never used SSL)."""
    params = {k: v for k, v in conninfo_to_dict(dsn).items() if v is not None and k != "hostaddr"}
    params["host"] = relay.host
    params["port"] = str(relay.port)
    if "sslmode" not in params and not os.environ.get("PGSSLMODE"):
        params["sslmode"] = "disable"
    return make_conninfo("", **params)
