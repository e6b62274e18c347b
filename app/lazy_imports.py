"""Defer importing a heavy module until it is first used.

polars takes about 0.25 s to import, as long as a one-row load's whole work, and the raw
CSV path never touches it. importlib's LazyLoader cannot help on Python 3.11: every later
`import polars` reads the module's `__spec__`, which loads it. This module object answers
the import system's questions (`__spec__`, `__name__`) itself and loads the real module,
in place, on the first other attribute anyone asks for. Threads may ask at once (the
reader and copy-binary's warm-up): the first loads it, the others wait until it is whole.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
import types
from typing import Any

_OWN = frozenset({"__spec__", "__name__", "__class__", "__dict__", "__loader__"})
_LOADING = threading.RLock()
_loader: dict[int, int] = {}  # module id -> the thread running its code


class _Deferred(types.ModuleType):
    def __getattribute__(self, attr: str) -> Any:
        if attr in _OWN or _loader.get(id(self)) == threading.get_ident():
            return super().__getattribute__(attr)  # (the module's own code, as it runs)
        with _LOADING:
            # Another thread's half-run module would lack names (a race found twice): the
            # class changes only once the module's code has run.
            if type(self) is _Deferred:
                spec = super().__getattribute__("__spec__")
                _loader[id(self)] = threading.get_ident()
                try:
                    spec.loader.exec_module(self)
                finally:
                    del _loader[id(self)]
                object.__setattr__(self, "__class__", types.ModuleType)  # from now on, a plain module
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
