"""Says what the next run will do before it starts: auto's pick, batch size, workers, protocol, and why.

Each change of the source, target, mapping or strategy settings asks the engine again
(LoadJob.foresee, on a worker: it reads the source's head and the catalog, and writes
nothing), a moment after the last change, so typing a table name asks once. An answer
older than the newest question is dropped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QTimer, Signal

from core.db import TableRef
from core.spec import LoadMode
from ui.mapping_controller import left_out_text
from ui.run_guard import exists_text

if TYPE_CHECKING:
    from ui.main_window import MainWindow

DELAY_MS = 300


class Foresight(QObject):
    """updated(text): the plan line shown under the strategy, once it is known."""

    updated = Signal(str)

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.w = window
        self._gen = 0
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(DELAY_MS)
        self._timer.timeout.connect(self._ask)
        g, t = window.strategy_panel, window.target_panel
        for signal in (g.strategy_combo.currentIndexChanged, g.commit_combo.currentIndexChanged,
                       g.policy_combo.currentIndexChanged, g.batch_spin.valueChanged, g.workers_spin.valueChanged,
                       t.mode_combo.currentIndexChanged, t.table_combo.currentTextChanged,
                       t.schema_combo.currentTextChanged, t.conn_combo.currentTextChanged,
                       window.mapping.modelReset, window.mapping.dataChanged):
            signal.connect(self.schedule)
        # What auto chose for the last run is stale once the user changes the settings, the table or the
        # server (not the mapping or mode a create run switches by itself: the note stays after that run).
        for signal in (g.commit_combo.currentIndexChanged, g.policy_combo.currentIndexChanged,
                       g.batch_spin.valueChanged, g.workers_spin.valueChanged, t.table_combo.currentTextChanged,
                       t.schema_combo.currentTextChanged, t.conn_combo.currentTextChanged):
            signal.connect(self._on_setup_changed)
        # A plan belongs to one server: a switch clears it at once, and the new server's table list asks again.
        t.conn_combo.currentTextChanged.connect(self._on_connection_changed)
        window.database_ready.connect(self.schedule)
        # A run started before the plan was said (a profile run at once, Ctrl+R right after
        # picking) left the line empty: once it ends, say the plan for the next one.
        window.run_ended.connect(self.schedule)

    def schedule(self, *_args: Any) -> None:
        self._gen += 1  # an answer on its way is stale from now on
        self._timer.start()

    def _on_setup_changed(self, *_args: Any) -> None:
        if self.w.runs.job is None:
            self.w.strategy_panel.forget_choice()

    def _on_connection_changed(self, _text: str) -> None:
        if self.w.runs.job is None:
            self.w.run_panel.clear_plan("Plan: connecting to the server to work out the plan…")

    def stop(self) -> None:
        self._timer.stop()
        self._gen += 1

    def _ask(self) -> None:
        w = self.w
        if w.runs.job is not None:
            return  # a run is on (it says its own choice)
        if w.source_info is None or not w.table_combo.currentText().strip():
            w.run_panel.clear_plan()  # nothing to say yet, and an earlier plan no longer holds
            return
        # No DSN is the embedded server: the engine starts it (on the worker) like a run would.
        spec = w.current_spec()
        gen = self._gen
        if spec.target.mode is LoadMode.CREATE and w.table_exists():
            ref = TableRef(spec.target.table, spec.target.schema or "public")
            self._answer(gen, "cannot run: " + exists_text(ref))  # known here, no need to ask the engine
            return
        missing = w.missing_script_tables()
        if missing:  # several tables load into tables that exist; the engine's plan does not look
            self._answer(gen, f"cannot run: {', '.join(missing)} {'does' if len(missing) == 1 else 'do'} not "
                              "exist; the script fills tables, it does not create them: create them first")
            return
        w.run_panel.show_plan("working out what the run will do…")

        def foresee(*_a: Any) -> str:
            from core.many_files import make_job

            return make_job(spec).foresee().describe()

        left = w.maps.left_out() if spec.target.mode is LoadMode.CREATE else []
        # A create that leaves out columns of the file says which (unticks made for another table carry over).
        # First, so a short plan line shows it too.
        note = f"creates the table without the file's {left_out_text(left)}; " if left else ""
        w.background(foresee, lambda text: self._answer(gen, note + text),
                     lambda msg: self._answer(gen, f"cannot run: {msg}"))

    def _answer(self, gen: int, text: str) -> None:
        if gen != self._gen:
            return
        self.w.run_panel.show_plan(text)
        self.updated.emit(text)
