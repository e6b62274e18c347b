"""The Qt binding itself: a known-bad release must fail here in milliseconds, not after 50 loads."""

from __future__ import annotations

import sys
from typing import Any

from PySide6.QtCore import QSize
from PySide6.QtWidgets import QWidget


class _Overridden(QWidget):
    calls = 0

    def resizeEvent(self, event: Any) -> None:  # noqa: N802 - a Python override of a C++ virtual
        _Overridden.calls += 1


def test_python_overrides_of_virtuals_keep_none_alive(qtbot: Any) -> None:
    """PySide6 6.12.0 dropped one reference to None per such call; CPython 3.11 then aborts ("none_dealloc").

    On CPython 3.12+ None is immortal, its count never moves, and this passes whatever the binding does.
    """
    w = _Overridden()
    qtbot.addWidget(w)
    w.show()
    before = sys.getrefcount(None)
    for i in range(500):
        w.resize(QSize(200 + i % 7, 100 + i % 5))  # a shown widget gets its resizeEvent at once
    after = sys.getrefcount(None)
    assert _Overridden.calls >= 400
    assert after > before - 100, f"None lost {before - after} references in {_Overridden.calls} calls"
