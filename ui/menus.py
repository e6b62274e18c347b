"""The window's menu bar: File, Mapping, Run and Server, with their shortcuts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtGui import QAction, QKeySequence

if TYPE_CHECKING:
    from ui.main_window import MainWindow


def build_menus(w: MainWindow) -> None:
    """The menus; `w.recent_menu` and `w.recent_profiles_menu` are filled by the profile actions."""
    p = w.profiles
    file_menu = w.menuBar().addMenu("&File")
    add_action(w, file_menu, "&Open file…", QKeySequence.StandardKey.Open, w._on_open_clicked)
    add_action(w, file_menu, "Open &folder…", None, w._on_open_folder_clicked)
    w.recent_menu = file_menu.addMenu("Recent files")
    file_menu.addSeparator()
    add_action(w, file_menu, "Open &profile…", "Ctrl+Shift+O", p.on_open_profile)
    add_action(w, file_menu, "&Save profile…", QKeySequence.StandardKey.Save, p.on_save_profile)
    w.recent_profiles_menu = file_menu.addMenu("Recent profiles")
    add_action(w, file_menu, "Export &history as CSV…", None, p.on_export_history)
    add_action(w, file_menu, "C&lear history…", None, w.runs.clear_history)
    file_menu.addSeparator()
    add_action(w, file_menu, "&Quit", QKeySequence.StandardKey.Quit, w.close)
    map_menu = w.menuBar().addMenu("&Mapping")
    add_action(w, map_menu, "&Reset mapping", None, w.reset_mapping)
    run_menu = w.menuBar().addMenu("&Run")
    add_action(w, run_menu, "&Run load", "Ctrl+R", w.start_run)
    w.addAction(add_action(w, run_menu, "Run (F5)", "F5", w.start_run))
    add_action(w, run_menu, "&Check before loading (rolled back)", "Ctrl+K", w.check_run)
    add_action(w, run_menu, "&Stop", "Esc", w.stop_run)
    add_action(w, run_menu, "Show &table", "Ctrl+T", w.targets.show_table)
    server_menu = w.menuBar().addMenu("&Server")
    add_action(w, server_menu, "&Connection details (DSN, psql)…", None, w.targets.show_server_info)
    p.refresh_recent()


def add_action(owner: Any, menu: Any, text: str, shortcut: Any, slot: Any) -> QAction:
    act = QAction(text, owner)
    if shortcut is not None:
        act.setShortcut(QKeySequence(shortcut))
    act.triggered.connect(lambda _checked=False: slot())
    menu.addAction(act)
    return act
