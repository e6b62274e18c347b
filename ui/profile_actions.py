"""Profile actions: open and save profiles, export the history, recent lists, and the file dialogs.

A profile opened is handed on as its LoadSpec (profile_opened); the window's _connect applies it
to the panels. A recent file picked is handed on as its path (file_chosen).
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QFileDialog, QMenu, QTreeView, QWidget

from core import profile
from core.spec import LoadSpec
from ui.history_model import HistoryModel

if TYPE_CHECKING:
    from ui.settings import Settings


class CompareSettings(Protocol):
    """The Compare tab's set-up, saved in a profile's [compare] section (ui.compare.tab.CompareTab)."""

    def compare_settings(self) -> dict[str, Any]: ...
    def apply_compare_settings(self, settings: dict[str, Any]) -> None: ...


def table_name_for(path: str) -> str:
    """A table name from a file's name: lower case, anything but letters and digits as _."""
    stem = Path(path).stem.lower()
    return "".join(c if c.isalnum() else "_" for c in stem).strip("_") or "imported"


class ProfileActions(QObject):
    """File > Open/Save profile, Export history, the recent lists; dialogs open in the last folder used.

    Signals: profile_opened(object LoadSpec), file_chosen(str) (in Recent files), said(str) (a line for the
    run log), failed(str) (an error for the user).
    """

    profile_opened = Signal(object)
    file_chosen = Signal(str)
    said = Signal(str)
    failed = Signal(str)

    def __init__(self, settings: Settings, history: HistoryModel, compare: CompareSettings, parent: QWidget, *,
                 spec: Callable[[], LoadSpec], table_name: Callable[[], str]) -> None:
        super().__init__(parent)
        self.settings = settings
        self._history = history
        self._compare = compare
        self._parent = parent  # where its dialogs show
        self._spec = spec  # the set-up as the panels say it now
        self._table_name = table_name
        self.recent_menu: QMenu | None = None  # File > Recent files and Recent profiles (set_recent_menus)
        self.recent_profiles_menu: QMenu | None = None

    def set_recent_menus(self, files: QMenu, profiles: QMenu) -> None:
        self.recent_menu, self.recent_profiles_menu = files, profiles
        self.refresh_recent()

    # -- dialogs --------------------------------------------------------------------------------

    def start_folder(self) -> str:
        """The last folder a file was opened from or saved to, else home."""
        folder = self.settings.last_folder
        return folder if folder and Path(folder).is_dir() else str(Path.home())

    def remember_opened(self, path: str) -> None:
        """Recent files and the last folder: only files that opened (a mistyped path is not kept)."""
        self.settings.remember("recent_files", path)
        self.remember_folder(path)
        self.refresh_recent()

    def remember_folder(self, path: str) -> None:
        self.settings.last_folder = str(Path(path).parent)
        self.settings.save()

    def file_dialog(self, title: str, filters: str, *, save: bool = False, name: str = "", many: bool = False,
                    folder: bool = False) -> str:
        """A file picked in Qt's own dialog (the same everywhere), or ''; its folder is remembered.
        `many`: one file or several (several come back as one source path, core.sources.many);
        `folder`: a folder."""
        dlg = QFileDialog(self._parent, title, self.start_folder(), filters)
        dlg.setAcceptMode(QFileDialog.AcceptMode.AcceptSave if save else QFileDialog.AcceptMode.AcceptOpen)
        mode = QFileDialog.FileMode
        dlg.setFileMode(mode.AnyFile if save else mode.Directory if folder else
                        mode.ExistingFiles if many else mode.ExistingFile)
        dlg.setViewMode(QFileDialog.ViewMode.Detail)
        if save and "*." in filters:
            dlg.setDefaultSuffix(filters.split("*.")[1].split(")")[0].split()[0])  # and asks before overwriting
        if name:
            dlg.selectFile(name)
        dlg.setOption(QFileDialog.Option.DontUseNativeDialog, True)
        dlg.resize(960, 560)
        for view in dlg.findChildren(QTreeView):
            # Readable columns: names not cut at 150 px, sizes and dates not elided ("629...tes").
            for col, width in enumerate((330, 90, 110, 170)):
                view.header().resizeSection(col, width)
        if not dlg.exec() or not dlg.selectedFiles():
            return ""
        path = dlg.selectedFiles()[0]
        self.remember_folder(str(Path(path) / "x") if folder else path)
        if many:
            from core.sources.many import join_paths

            return join_paths(dlg.selectedFiles())
        return path

    # -- profiles -------------------------------------------------------------------------------

    def on_open_profile(self) -> None:
        path = self.file_dialog("Open profile", "Profiles (*.toml)")
        if path:
            self.open_profile(path)

    def open_profile(self, path: str) -> None:
        try:
            spec, rest = profile.load(path)
            compare = profile.compare_section(rest)
        except Exception as exc:  # noqa: BLE001 - ConfigError and OS errors alike
            self.failed.emit(str(exc))
            return
        self.settings.remember("recent_profiles", path)
        self.settings.save()
        self.refresh_recent()
        if compare is not None:
            self._compare.apply_compare_settings(compare)
        self.profile_opened.emit(spec)

    def on_save_profile(self) -> None:
        name = table_name_for(self._table_name() or "profile") + ".toml"
        path = self.file_dialog("Save profile", "Profiles (*.toml)", save=True, name=name)
        if path:
            self.save_profile(path)

    def save_profile(self, path: str) -> str:
        """Save the set-up as a profile; `.toml` is added when the name has no extension. Returns the path."""
        if not Path(path).suffix:
            path += ".toml"
        profile.save(self._spec(), path, extra={"compare": self._compare.compare_settings()})
        self.settings.remember("recent_profiles", path)
        self.settings.save()
        self.refresh_recent()
        self.said.emit(f"saved profile {path}")
        return path

    # -- history and recent lists ---------------------------------------------------------------

    def on_export_history(self) -> None:
        path = self.file_dialog("Export history", "CSV (*.csv)", save=True, name="sluice-history.csv")
        if path:
            self.export_history(path)

    def export_history(self, path: str) -> None:
        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(HistoryModel.HEADERS)
            w.writerows(self._history.rows)

    def refresh_recent(self) -> None:
        menus: tuple[tuple[QMenu | None, list[str], Callable[[str], object]], ...] = (
            (self.recent_menu, self.settings.recent_files, self.file_chosen.emit),
            (self.recent_profiles_menu, self.settings.recent_profiles, self.open_profile),
        )
        for menu, items, opener in menus:
            if menu is None:
                continue  # before the menu bar is built
            menu.clear()
            for path in items:
                act = menu.addAction(path)
                act.triggered.connect(lambda _=False, p=path, o=opener: o(p))
            menu.setEnabled(bool(items))
