"""Defer importing a heavy module until it is first used.

polars takes about 0.25 s to import, as long as a one-row load's whole work, and the raw
CSV path never touches it. importlib's LazyLoader cannot help on Python 3.11: every later
`import polars` reads the module's `__spec__`, which loads it. This module object answers
the import system's questions (`__spec__`, `__name__`) itself and loads the real module,
in place, on the first other attribute anyone asks for.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from typing import Any

_OWN = frozenset({"__spec__", "__name__", "__class__", "__dict__", "__loader__"})


class _Deferred(types.ModuleType):
    def __getattribute__(self, attr: str) -> Any:
        if attr in _OWN:
            return super().__getattribute__(attr)
        spec = super().__getattribute__("__spec__")
        object.__setattr__(self, "__class__", types.ModuleType)  # from now on, a plain module
        spec.loader.exec_module(self)
        return getattr(self, attr)


def import_lazily(name: str) -> None:
    """Register `name` so that importing it costs nothing until it is used."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    module.__class__ = _Deferred
    sys.modules[name] = module
