"""Says what the next run will do before it starts: auto's pick, batch size, workers, protocol, and why.

Each change of the source, target, mapping or strategy settings asks the engine again
(LoadJob.foresee, on a worker: it reads the source's head and the catalog, and writes
nothing), a moment after the last change, so typing a table name asks once. An answer
older than the newest question is dropped. What makes the plan stale is wired in MainWindow._connect:
the panels' fields and the mapping, and the shared state's changes (LoadState: the source read, the
connection, the server's tables, the target's size, a run's end).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from PySide6.QtCore import QObject, QTimer, Signal

from core.db import TableRef
from core.spec import LoadMode, LoadSpec
from ui.mapping_controller import left_out_text
from ui.run_guard import exists_text

if TYPE_CHECKING:
    from ui.panels.run import RunPanel
    from ui.panels.strategy import StrategyPanel
    from ui.panels.target import TargetPanel
    from ui.state import LoadState
    from ui.worker import InBackground

DELAY_MS = 300


class PlanQueries(Protocol):
    """What the plan line asks of the mapping (ui.mapping_controller.MappingController)."""

    def table_exists(self) -> bool: ...
    def missing_script_tables(self) -> list[str]: ...
    def left_out(self) -> list[str]: ...


class Foresight(QObject):
    """updated(text): the plan line shown under the strategy, once it is known."""

    updated = Signal(str)

    def __init__(self, state: LoadState, target_panel: TargetPanel, strategy_panel: StrategyPanel,
                 run_panel: RunPanel, parent: QObject, *, spec: Callable[[], LoadSpec], mapping: PlanQueries,
                 background: InBackground) -> None:
        super().__init__(parent)
        self.state = state
        self.t, self.g, self.p = target_panel, strategy_panel, run_panel
        self._spec = spec  # the set-up as the panels say it now
        self._maps = mapping
        self._background = background
        self._gen = 0
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(DELAY_MS)
        self._timer.timeout.connect(self._ask)

    def schedule(self, *_args: Any) -> None:
        """Ask again a moment after the last change."""
        self._gen += 1  # an answer on its way is stale from now on
        self._timer.start()

    def on_setup_changed(self, *_args: Any) -> None:
        """What auto chose for the last run is stale once the settings, the table or the server change."""
        if self.state.job is None:
            self.g.forget_choice()

    def on_connection_changed(self, _dsn: object) -> None:
        """A plan belongs to one server: a switch (LoadState.connection_changed) clears it at once."""
        if self.state.job is None:
            self.p.clear_plan("Plan: connecting to the server to work out the plan…")

    def on_job_changed(self, job: object) -> None:
        """A run that ended (LoadState.job_changed to None) leaves the plan for the next one to say: a run
        started before the plan was said (a profile run at once, Ctrl+R right after picking) left it empty."""
        if job is None:
            self.schedule()

    def stop(self) -> None:
        self._timer.stop()
        self._gen += 1

    def _ask(self) -> None:
        if self.state.job is not None:
            return  # a run is on (it says its own choice)
        if self.state.source_info is None or not self.t.table_name():
            self.p.clear_plan()  # nothing to say yet, and an earlier plan no longer holds
            return
        # No DSN is the embedded server: the engine starts it (on the worker) like a run would.
        spec = self._spec()
        gen = self._gen
        if spec.target.mode is LoadMode.CREATE and self._maps.table_exists():
            ref = TableRef(spec.target.table, spec.target.schema or "public")
            self._answer(gen, "cannot run: " + exists_text(ref))  # known here, no need to ask the engine
            return
        missing = self._maps.missing_script_tables()
        if missing:  # several tables load into tables that exist; the engine's plan does not look
            self._answer(gen, f"cannot run: {', '.join(missing)} {'does' if len(missing) == 1 else 'do'} not "
                              "exist; the script fills tables, it does not create them: create them first")
            return
        self.p.show_plan("working out what the run will do…")

        def foresee(*_a: Any) -> str:
            from core.many_files import make_job

            return make_job(spec).foresee().describe()

        left = self._maps.left_out() if spec.target.mode is LoadMode.CREATE else []
        # A create that leaves out columns of the file says which (unticks made for another table carry over).
        # First, so a short plan line shows it too.
        note = f"creates the table without the file's {left_out_text(left)}; " if left else ""
        self._background(foresee, lambda text: self._answer(gen, note + text),
                         lambda msg: self._answer(gen, f"cannot run: {msg}"))

    def _answer(self, gen: int, text: str) -> None:
        if gen != self._gen:
            return
        self.p.show_plan(text)
        self.updated.emit(text)
