"""A cancel token checked between batches that can also cancel in-flight statements."""

from __future__ import annotations

import threading
from collections.abc import Callable

from core.errors import Cancelled


class CancelToken:
    """Thread-safe. `cancel()` may be called from any thread (e.g. the GUI's)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._hooks: list[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self) -> None:
        self._event.set()
        with self._lock:
            hooks = list(self._hooks)
        for hook in hooks:
            try:
                hook()
            except Exception:  # noqa: BLE001 - best effort: the token still says cancelled
                pass

    def wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`, waking at once on cancel; True when cancelled."""
        return self._event.wait(seconds)

    def check(self) -> None:
        if self._event.is_set():
            raise Cancelled()

    def add_hook(self, hook: Callable[[], None]) -> Callable[[], None]:
        """Run `hook` on cancel (e.g. `conn.cancel_safe`); returns a remover."""
        with self._lock:
            self._hooks.append(hook)

        def remove() -> None:
            with self._lock:
                if hook in self._hooks:
                    self._hooks.remove(hook)

        return remove
