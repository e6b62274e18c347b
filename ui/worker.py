"""The one worker runner: runs a core job on the thread pool and reports through signals."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any, Protocol

import shiboken6
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
        except Cancelled as exc:
            _let_go(exc)
            s.error = exc  # a stop can say what stays (per-file commits: the files before it)
            s.cancelled.emit()
        except SluiceError as exc:
            _let_go(exc)
            s.error = exc  # its kind and fields for the caller; its frames are emptied
            s.failed.emit(str(exc))
        except Exception as exc:  # noqa: BLE001 - a bug: shown, logged, never a crash
            s.log.emit(traceback.format_exc())
            _let_go(exc)
            s.failed.emit(f"unexpected error: {type(exc).__name__}: {exc}")
        else:
            s.finished.emit(result)


def _let_go(exc: BaseException) -> None:
    """Empty the frames of a run's error and of the errors it was raised from.

    Their locals are the run's job, its connections and its batches; an error kept (the signals'
    `error`, a driver error inside a WriteFailed) would keep all that alive in a cycle until the
    garbage collector's next full pass, long after the run ended.
    """
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        traceback.clear_frames(e.__traceback__)  # the frame still running (ours) is skipped
        todo += [e.__context__, e.__cause__, *(v for v in vars(e).values() if isinstance(v, BaseException))]


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


class InBackground(Protocol):
    """Starts `fn` on a worker; `on_done(result)` / `on_fail(message)` come on the GUI thread while the
    owner lives (Background.start: what a controller is given instead of the window)."""

    def __call__(self, fn: JobFn, on_done: Callable[[Any], None],
                 on_fail: Callable[[str], None] | None = None) -> Job: ...


class Background:
    """Short background jobs of one owner (previews, catalog reads): results for a deleted owner are dropped."""

    def __init__(self, owner: QObject, on_fail: Callable[[str], None]) -> None:
        self._owner = owner
        self._on_fail = on_fail
        self.jobs: set[Job] = set()  # running; each leaves when it ends

    def start(self, fn: JobFn, on_done: Callable[[Any], None],
              on_fail: Callable[[str], None] | None = None) -> Job:
        job = Job(fn)
        self.jobs.add(job)
        job.signals.finished.connect(self._while_alive(on_done))
        job.signals.failed.connect(self._while_alive(on_fail or self._on_fail))
        for sig in (job.signals.finished, job.signals.failed, job.signals.cancelled):
            sig.connect(lambda *_a, j=job: self.jobs.discard(j))
        return job.start()

    def _while_alive(self, fn: Callable[..., None]) -> Callable[..., None]:
        """A result may arrive after the owner is gone (closed, or a test ended): drop it then."""

        def call(*args: Any) -> None:
            if shiboken6.isValid(self._owner):
                fn(*args)

        return call
