"""The window's menu bar: File, Mapping, Run and Server, with their shortcuts."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMainWindow, QMenu

Slot = Callable[[], object]


@dataclass(frozen=True)
class MenuSlots:
    """What each menu entry does (the window's _connect gives the controllers' slots)."""

    open_file: Slot
    open_folder: Slot
    open_profile: Slot
    save_profile: Slot
    export_history: Slot
    clear_history: Slot
    reset_mapping: Slot
    start_run: Slot
    check_run: Slot
    stop_run: Slot
    show_table: Slot
    server_info: Slot


def build_menus(w: QMainWindow, do: MenuSlots) -> tuple[QMenu, QMenu]:
    """The menus; returns File > Recent files and Recent profiles, for the profile actions to fill."""
    file_menu = w.menuBar().addMenu("&File")
    add_action(w, file_menu, "&Open file…", QKeySequence.StandardKey.Open, do.open_file)
    add_action(w, file_menu, "Open &folder…", None, do.open_folder)
    recent_menu = file_menu.addMenu("Recent files")
    file_menu.addSeparator()
    add_action(w, file_menu, "Open &profile…", "Ctrl+Shift+O", do.open_profile)
    add_action(w, file_menu, "&Save profile…", QKeySequence.StandardKey.Save, do.save_profile)
    recent_profiles_menu = file_menu.addMenu("Recent profiles")
    add_action(w, file_menu, "Export &history as CSV…", None, do.export_history)
    add_action(w, file_menu, "C&lear history…", None, do.clear_history)
    file_menu.addSeparator()
    add_action(w, file_menu, "&Quit", QKeySequence.StandardKey.Quit, w.close)
    map_menu = w.menuBar().addMenu("&Mapping")
    add_action(w, map_menu, "&Reset mapping", None, do.reset_mapping)
    run_menu = w.menuBar().addMenu("&Run")
    add_action(w, run_menu, "&Run load", "Ctrl+R", do.start_run)
    w.addAction(add_action(w, run_menu, "Run (F5)", "F5", do.start_run))
    add_action(w, run_menu, "&Check before loading (rolled back)", "Ctrl+K", do.check_run)
    add_action(w, run_menu, "&Stop", "Esc", do.stop_run)
    add_action(w, run_menu, "Show &table", "Ctrl+T", do.show_table)
    server_menu = w.menuBar().addMenu("&Server")
    add_action(w, server_menu, "&Connection details (DSN, psql)…", None, do.server_info)
    return recent_menu, recent_profiles_menu


def add_action(owner: Any, menu: Any, text: str, shortcut: Any, slot: Any) -> QAction:
    act = QAction(text, owner)
    if shortcut is not None:
        act.setShortcut(QKeySequence(shortcut))
    act.triggered.connect(lambda _checked=False: slot())
    menu.addAction(act)
    return act
