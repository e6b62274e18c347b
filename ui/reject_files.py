"""Where the window's reject files go, and the buttons that open, show and copy them.

Every run under On error = skip writes a new reject file into one folder: the user's choice
(kept in the settings), else `rejects` in the data directory. Nothing lands beside the data
file unless the user picks that folder.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QUrl
from PySide6.QtGui import QDesktopServices, QGuiApplication
from PySide6.QtWidgets import QFileDialog, QMessageBox

from core.embedded import data_dir
from core.spec import LoadSpec

if TYPE_CHECKING:
    from PySide6.QtWidgets import QWidget

    from ui.panels.run import RunPanel
    from ui.panels.strategy import StrategyPanel
    from ui.settings import Settings


CHECKS_KEPT = 20  # reject files of the newest checks kept in the data directory


def default_folder() -> Path:
    return data_dir() / "rejects"


def check_file(spec: LoadSpec) -> str:
    """A new file for a check's rejected rows in the data directory, which keeps the newest CHECKS_KEPT."""
    folder = data_dir() / "checks"
    folder.mkdir(exist_ok=True)
    for old in sorted(folder.glob("*.csv"), key=lambda p: p.stat().st_mtime)[:-(CHECKS_KEPT - 1)]:
        old.unlink(missing_ok=True)
    return str(folder / f"{Path(spec.source.path).stem}-{dt.datetime.now():%Y%m%d-%H%M%S-%f}.csv")


class RejectFiles(QObject):
    """The reject folder and each run's file in it; the strategy panel's folder field and buttons, and the
    Rejected rows tab's Open, Show in folder and Copy path. It knows those panels and the settings, not the
    window (`parent` is where its messages show)."""

    def __init__(self, form: StrategyPanel, run: RunPanel, settings: Settings, parent: QWidget) -> None:
        super().__init__(parent)
        self.form, self.run, self.settings, self.parent_widget = form, run, settings, parent
        self._last: dict[tuple[str, str], str] = {}  # (file, table) -> reject file of its last run
        g, p = form, run
        g.reject_folder_edit.setText(settings.reject_folder)
        g.reject_folder_edit.setPlaceholderText(f"{default_folder()}")
        g.reject_folder_edit.editingFinished.connect(self._on_folder_edited)
        g.reject_browse_btn.clicked.connect(self._on_browse_clicked)
        g.reject_open_btn.clicked.connect(self._on_open_folder_clicked)
        p.open_rejects_btn.clicked.connect(self._on_open_clicked)
        p.show_rejects_btn.clicked.connect(self._on_show_clicked)
        p.copy_rejects_btn.clicked.connect(self._on_copy_clicked)

    # -- the folder -------------------------------------------------------------------------------

    def folder(self) -> Path:
        text = self.form.reject_folder_edit.text().strip()
        return Path(text).expanduser() if text else default_folder()

    def set_folder(self, path: str) -> None:
        """The user's folder for reject files ('' for the default), kept for the next session."""
        self.form.reject_folder_edit.setText(path)
        self._on_folder_edited()

    def _on_folder_edited(self) -> None:
        text = self.form.reject_folder_edit.text().strip()
        if text != self.settings.reject_folder:
            self.settings.reject_folder = text
            self.settings.save()

    def _on_browse_clicked(self) -> None:
        dlg = QFileDialog(self.parent_widget, "Folder for reject files", str(self.folder()))
        dlg.setFileMode(QFileDialog.FileMode.Directory)
        dlg.setOption(QFileDialog.Option.ShowDirsOnly, True)
        dlg.setOption(QFileDialog.Option.DontUseNativeDialog, True)
        if dlg.exec() and dlg.selectedFiles():
            self.set_folder(dlg.selectedFiles()[0])

    def _on_open_folder_clicked(self) -> None:
        folder = self.folder()
        folder.mkdir(parents=True, exist_ok=True)
        self._open(folder, f"No file manager opened the reject folder. It is:\n\n{folder}")

    # -- a run's file -------------------------------------------------------------------------------

    def file_for(self, spec: LoadSpec, resume: bool) -> str:
        """A new reject file per run in the folder (never overwriting one); a resumed run goes on in its own."""
        key = (spec.source.path, spec.target.table)
        if resume and key in self._last:
            return self._last[key]
        folder = self.folder()
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            self.run.log_line(f"note: cannot use the reject folder {folder} ({exc.strerror}); "
                                      f"reject files go to {default_folder()}")
            folder = default_folder()
            folder.mkdir(parents=True, exist_ok=True)
        # many files (a glob, a list): no pattern characters in the file's name
        name = "".join("_" if c in "*?[]:;" else c for c in Path(spec.source.path).name)
        stamp = f"{dt.datetime.now():%Y%m%d-%H%M%S}"
        path = folder / f"{name}.rejects-{stamp}.csv"
        n = 2
        while path.exists():
            path = folder / f"{name}.rejects-{stamp}-{n}.csv"
            n += 1
        self._last[key] = str(path)
        return str(path)

    # -- the Rejected rows tab's buttons ------------------------------------------------------------

    def _shown(self) -> Path | None:
        path = self.run.rejects.path
        return Path(path) if path else None

    def _on_open_clicked(self) -> None:
        path = self._shown()
        if path is not None:
            self._open(path, f"No application opened the reject file (none may be set for .csv files). "
                             f"It is:\n\n{path}\n\nShow in folder opens its folder; Copy path copies its path.")

    def _on_show_clicked(self) -> None:
        path = self._shown()
        if path is not None:
            self._open(path.parent, f"No file manager opened the folder. The reject file is:\n\n{path}\n\n"
                                    "Copy path copies its path.")

    def _on_copy_clicked(self) -> None:
        path = self._shown()
        if path is not None:
            QGuiApplication.clipboard().setText(str(path))
            self.run.log_line(f"copied the reject file's path: {path}")

    def _open(self, path: Path, failed: str) -> None:
        if not QDesktopServices.openUrl(QUrl.fromLocalFile(str(path))):
            self.run.log_line(failed.replace("\n\n", " "))
            QMessageBox.information(self.parent_widget, "Sluice", failed)
