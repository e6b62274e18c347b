"""Overlapped stages: a reader thread runs ahead of the sender through a bounded queue.

Reading and parsing (polars, file reads) and encoding (polars casts) release the GIL, so
they run while the main thread sends the previous batch and the server digests it. The
queue is bounded, so memory stays at a few batches whatever the file's size.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Generic, TypeVar

T = TypeVar("T")

_DONE = object()


class Prefetch(Generic[T]):
    """Iterate `items` on a worker thread, `depth` items ahead of the consumer.

    The producer's exceptions reach the consumer at the item where they happened. Leaving
    the loop early (break, cancel, an error while sending) stops and joins the thread:
    use it as a context manager.
    """

    def __init__(self, items: Iterator[T], depth: int = 2, name: str = "sluice-reader") -> None:
        self._items = items
        self._queue: queue.Queue[object] = queue.Queue(maxsize=max(1, depth))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def __enter__(self) -> Prefetch[T]:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _put(self, item: object) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _run(self) -> None:
        try:
            for item in self._items:
                if not self._put(item):
                    return
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, raised there
            self._put(_Raised(exc))
            return
        self._put(_DONE)

    def __iter__(self) -> Iterator[T]:
        while True:
            item = self._queue.get()
            if item is _DONE:
                return
            if isinstance(item, _Raised):
                raise item.exc
            yield item  # type: ignore[misc]

    def close(self) -> None:
        self._stop.set()
        while True:  # unblock a producer waiting on a full queue
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()
        close = getattr(self._items, "close", None)
        if close is not None and not self._thread.is_alive():
            try:
                close()  # finish the generator (closes its file) on this side
            except (RuntimeError, ValueError):
                pass


class _Raised:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc
