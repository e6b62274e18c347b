"""The one worker runner: runs a core job on the thread pool and reports through signals."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from core.cancel import CancelToken
from core.errors import Cancelled, SluiceError
from core.events import Progress


class JobSignals(QObject):
    """Signals: progress(Progress), log(str), finished(object), failed(str), cancelled()."""

    progress = Signal(object)
    log = Signal(str)
    finished = Signal(object)
    failed = Signal(str)
    cancelled = Signal()

    def __init__(self) -> None:
        super().__init__()
        self.error: BaseException | None = None  # set before `failed`, for callers that act on its kind


JobFn = Callable[[Callable[[Progress], None], Callable[[str], None], CancelToken], Any]


class _Runnable(QRunnable):
    def __init__(self, fn: JobFn, signals: JobSignals, cancel: CancelToken) -> None:
        super().__init__()
        self.fn, self.signals, self.cancel = fn, signals, cancel
        self.setAutoDelete(True)

    def run(self) -> None:
        s = self.signals
        try:
            result = self.fn(s.progress.emit, s.log.emit, self.cancel)
        except Cancelled:
            s.cancelled.emit()
        except SluiceError as exc:
            s.error = exc
            s.failed.emit(str(exc))
        except Exception as exc:  # noqa: BLE001 - a bug: shown, logged, never a crash
            s.log.emit(traceback.format_exc())
            s.failed.emit(f"unexpected error: {type(exc).__name__}: {exc}")
        else:
            s.finished.emit(result)


class Job:
    """A handle on one background job; its signals arrive on the GUI thread."""

    def __init__(self, fn: JobFn) -> None:
        self.signals = JobSignals()
        self.cancel_token = CancelToken()
        self._runnable = _Runnable(fn, self.signals, self.cancel_token)

    def start(self, pool: QThreadPool | None = None) -> Job:
        (pool or QThreadPool.globalInstance()).start(self._runnable)
        return self

    def cancel(self) -> None:
        self.cancel_token.cancel()
