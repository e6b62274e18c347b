"""The strategy panel: the strategy with its seed's lesson, batch size, workers, commit mode and policy."""

from __future__ import annotations

from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QWidget,
)

from core.auto import AUTO
from core.spec import CommitMode, ErrorPolicy
from core.strategies.base import Strategy
from core.strategies.catalogue import all_strategies

BATCH_TIP = ("Rows per batch (per statement, COPY chunk or commit).\n"
             "default: the strategy's own size, settled when the load starts (the plan line says it): "
             "about 8 MB of a CSV, TSV or SQL file's rows for the COPY strategies (a quarter of that for "
             "copy-binary), 10,000 rows for the others")
DEFAULT_TEXT = "default"  # the batch box at its minimum: no number, the strategy sizes its batches
WORKERS_TIP = "Connections for strategies that load over several at once"
REJECT_LIMIT_TIP = ("On error = skip: stop and roll back once more rows than this are rejected "
                    "(no limit: load every good row, however many are rejected). As --reject-limit on the "
                    "command line; saved in profiles.")
REJECT_FOLDER_TIP = ("On error = skip: where each run's reject file goes (a new file per run, named after the data "
                     "file and the time). Empty: the rejects folder in Sluice's data directory.")
AUTO_HELP = ("<b>auto picks the strategy, batch size and workers</b> from the file, the target and the "
             "server; the plan above the log says which, and why, before the run.")
AUTO_TIP = "auto picks it from the file, the target and the server (batches of about 8 MB); pick a strategy to set it"


class AutoSpin(QSpinBox):
    """A spin box that reads "auto" while auto decides its number; value() keeps the user's number for later.

    With `default_text`, its minimum stands for no number at all (Qt's special value): number() is None there.
    """

    _auto = False

    def __init__(self, default_text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._default_text = default_text
        self.setSpecialValueText(default_text)

    def number(self) -> int | None:
        """The number shown; None at the minimum when the minimum means "default"."""
        return None if self._default_text and self.value() == self.minimum() else self.value()

    def set_number(self, value: int | None) -> None:
        self.setValue(self.minimum() if value is None else value)

    def set_auto(self, on: bool, tip: str) -> None:
        self._auto = on
        self.setEnabled(not on)
        self.setToolTip(AUTO_TIP if on else tip)
        # Qt shows the special value text at the minimum without asking textFromValue, so auto's word goes
        # there too; setting it also repaints the text now, not on the next step.
        self.setSpecialValueText("auto" if on else self._default_text)

    def textFromValue(self, value: int) -> str:  # noqa: N802 - Qt's name
        return "auto" if self._auto else super().textFromValue(value)


class StrategyPanel(QGroupBox):
    """Widgets and the strategy list; the help text follows the choice."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Strategy", parent)
        form = QFormLayout(self)
        self.strategy_combo = QComboBox()
        # Long titles must not widen the window: the list shows them whole when it opens.
        self.strategy_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.strategy_combo.setMinimumContentsLength(18)
        # None stands for `auto`, first and the default: the engine picks when the run starts.
        self.strategies: list[type[Strategy] | None] = [None, *all_strategies()]
        for cls in self.strategies:
            if cls is None:
                self.strategy_combo.addItem(f"{AUTO} — picked from the file and the target", AUTO)
            else:
                self.strategy_combo.addItem(f"{cls.id} — {cls.title}", cls.id)
        self.strategy_combo.setCurrentIndex(0)
        self.strategy_combo.currentIndexChanged.connect(self._on_strategy_changed)
        form.addRow("Strategy", self.strategy_combo)
        self.strategy_help = QLabel()
        self.strategy_help.setWordWrap(True)
        form.addRow("", self.strategy_help)
        # 0 reads "default" (LoadSpec.batch_rows None): the strategy's own size, settled when the load starts.
        self.batch_spin = AutoSpin(DEFAULT_TEXT)
        self.batch_spin.setRange(0, 10_000_000)
        self.batch_spin.setValue(0)
        self.batch_spin.setSingleStep(1000)
        self.workers_spin = AutoSpin()
        self.workers_spin.setRange(1, 32)
        self.workers_spin.setValue(2)
        row = QHBoxLayout()
        row.addWidget(QLabel("Batch rows"))
        row.addWidget(self.batch_spin)
        row.addWidget(QLabel("Workers"))
        row.addWidget(self.workers_spin)
        form.addRow(row)
        self.commit_combo = QComboBox()
        self.commit_combo.addItems([m.value for m in CommitMode])
        self.commit_combo.setToolTip(
            "single: all or nothing, in one transaction (all the files, when there are several)\n"
            "per-batch: each batch commits with a checkpoint; Resume goes on where it stopped\n"
            "per-file: several files, each committed on its own; a bad file rolls back alone")
        self.policy_combo = QComboBox()
        self.policy_combo.addItems([m.value for m in ErrorPolicy])
        row2 = QHBoxLayout()
        row2.addWidget(QLabel("Commit"))
        row2.addWidget(self.commit_combo)
        row2.addWidget(QLabel("On error"))
        row2.addWidget(self.policy_combo)
        form.addRow(row2)
        self._build_rejects(form)
        self._on_strategy_changed()

    def _build_rejects(self, form: QFormLayout) -> None:
        """Reject limit and folder: they apply with On error = skip."""
        self.reject_limit_spin = QSpinBox()
        self.reject_limit_spin.setRange(-1, 1_000_000_000)
        self.reject_limit_spin.setSpecialValueText("no limit")  # -1: LoadSpec.reject_limit None
        self.reject_limit_spin.setValue(-1)
        self.reject_limit_spin.setToolTip(REJECT_LIMIT_TIP)
        self.reject_folder_edit = QLineEdit()
        self.reject_folder_edit.setToolTip(REJECT_FOLDER_TIP)
        self.reject_browse_btn = QPushButton("…")
        self.reject_browse_btn.setToolTip("Pick the folder for reject files")
        self.reject_browse_btn.setFixedWidth(self.reject_browse_btn.fontMetrics().horizontalAdvance("…") + 24)
        self.reject_open_btn = QPushButton("Open")
        self.reject_open_btn.setToolTip("Open the reject folder in the file manager")
        limit = QHBoxLayout()
        limit.addWidget(self.reject_limit_spin, 1)
        # A profile's percentage limit (reject_limit_pct: no flag, no box of its own): shown and kept.
        self.reject_pct_label = QLabel()
        self.reject_pct_label.setVisible(False)
        limit.addWidget(self.reject_pct_label)
        limit.addStretch(1)
        form.addRow("Reject limit", limit)
        folder = QHBoxLayout()
        folder.addWidget(self.reject_folder_edit, 1)
        folder.addWidget(self.reject_browse_btn)
        folder.addWidget(self.reject_open_btn)
        form.addRow("Reject files", folder)
        self.policy_combo.currentTextChanged.connect(self._on_policy_changed)
        self._on_policy_changed()

    def _on_policy_changed(self, *_args: object) -> None:
        skip = self.policy_combo.currentText() == ErrorPolicy.SKIP.value
        for w in (self.reject_limit_spin, self.reject_pct_label, self.reject_folder_edit, self.reject_browse_btn):
            w.setEnabled(skip)

    def reject_limit(self) -> int | None:
        value = self.reject_limit_spin.value()
        return None if value < 0 else value

    _reject_pct: float | None = None

    def reject_limit_pct(self) -> float | None:
        return self._reject_pct

    def set_reject_limit(self, limit: int | None, pct: float | None = None) -> None:
        """A profile's limits: a count in the box; a percentage said beside it and kept for the run and the save."""
        self.reject_limit_spin.setValue(-1 if limit is None else limit)
        self._reject_pct = pct
        self.reject_pct_label.setText("" if pct is None else f"or over {pct:g}% of rows (profile)")
        self.reject_pct_label.setToolTip("The profile's reject_limit_pct: the run stops once more than this share "
                                         "of the rows read is rejected")
        self.reject_pct_label.setVisible(pct is not None)

    def focus_order(self) -> list[QWidget]:
        """The panel's controls in reading order, for the window's Tab chain."""
        return [self.strategy_combo, self.batch_spin, self.workers_spin, self.commit_combo, self.policy_combo,
                self.reject_limit_spin, self.reject_folder_edit, self.reject_browse_btn, self.reject_open_btn]

    def current(self) -> type[Strategy] | None:
        """The chosen strategy class; None for `auto`."""
        return self.strategies[self.strategy_combo.currentIndex()]

    def _on_strategy_changed(self, *_args: object) -> None:
        cls = self.current()
        if cls is None:
            self.strategy_help.setText(AUTO_HELP)
            self.batch_spin.set_auto(True, BATCH_TIP)
            self.workers_spin.set_auto(True, WORKERS_TIP)
            return
        self.strategy_help.setText(f"<b>{cls.summary}.</b><br><i>{cls.lesson}</i>")
        self.batch_spin.set_auto(False, BATCH_TIP)
        self.workers_spin.set_auto(False, WORKERS_TIP)
        self.workers_spin.setEnabled(cls.multi_connection)

    def show_choice(self, strategy_id: str, batch_rows: int, reason: str) -> None:
        """What auto picked for the last run, under the list (auto stays selected)."""
        if self.current() is None:
            self.strategy_help.setText(f"<b>auto chose {strategy_id}</b> (batches of {batch_rows:,} rows) for the "
                                       f"last run: {reason}")

    def forget_choice(self) -> None:
        """The set-up changed or another run began: what auto chose for the last run no longer holds."""
        if self.current() is None:
            self.strategy_help.setText(AUTO_HELP)

    def set_strategy(self, strategy_id: str, batch_rows: int | None = None, workers: int | None = None) -> None:
        """Pick a strategy; a batch size or workers given are set too (None leaves the box as it is)."""
        ids = [AUTO if c is None else c.id for c in self.strategies]
        if strategy_id in ids:
            self.strategy_combo.setCurrentIndex(ids.index(strategy_id))
        if batch_rows:
            self.batch_spin.setValue(batch_rows)
        if workers:
            self.workers_spin.setValue(workers)

    def batch_rows(self) -> int | None:
        """The batch size for the spec: None at "default" (the strategy's own size)."""
        return self.batch_spin.number()

    def set_batch_rows(self, batch_rows: int | None) -> None:
        """A number, or None for "default" (a profile without batch_rows)."""
        self.batch_spin.set_number(batch_rows)

    def allow_scripts(self, is_sql: bool) -> None:
        """Script strategies only for SQL scripts."""
        for i, cls in enumerate(self.strategies):
            item = self.strategy_combo.model().item(i)  # type: ignore[attr-defined]
            item.setEnabled(is_sql or cls is None or not cls.script_only)
