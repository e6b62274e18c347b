"""Memory a finished load leaves behind, given back (glibc only; elsewhere these do nothing).

A load runs on threads (the worker, the pipeline's stages, parallel-copy's streams), and glibc
gives each new thread an arena of its own, up to eight per core, and keeps what a load freed in
them for later. A window that ran many loads grew by tens of MB each time and never shrank
(345 to 760 MB after eight stopped 3M-row loads). With the arenas capped and trimmed after each
run, an idle window stays where it was before its first load (bench/window_memory.py).
"""

from __future__ import annotations

import ctypes
import os
import re
import sys
import tempfile
from typing import Any

M_ARENA_MAX = -8  # mallopt's parameter for the number of arenas (malloc.h)
ARENAS = 4  # enough that a load's few threads rarely wait on one another's malloc


def _libc() -> Any | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return None  # musl or another C library: nothing to tune
    return libc if all(hasattr(libc, f) for f in ("mallopt", "malloc_trim", "malloc_info")) else None


def limit_arenas(arenas: int = ARENAS) -> bool:
    """Cap glibc's arenas for threads started from now on (True when it took)."""
    libc = _libc()
    return bool(libc is not None and libc.mallopt(M_ARENA_MAX, arenas) == 1)


def release() -> bool:
    """After a run: hand glibc's free pages back to the system (a few ms).

    No gc.collect() here: it took 200-300 ms of the GUI thread in a window with its libraries
    loaded, and a run leaves no cycles that hold its data (ui/worker.py drops a failure's traceback).
    """
    libc = _libc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True


def arena_count() -> int | None:
    """How many arenas glibc has made so far (malloc_info's heaps); None where unknown."""
    libc = _libc()
    if libc is None:
        return None
    fd, path = tempfile.mkstemp(prefix="malloc-info-", suffix=".xml")
    os.close(fd)
    try:
        libc.fopen.restype = ctypes.c_void_p
        libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        libc.fclose.argtypes = [ctypes.c_void_p]
        libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
        stream = libc.fopen(path.encode(), b"w")
        if not stream:
            return None
        libc.malloc_info(0, stream)
        libc.fclose(stream)
        with open(path, encoding="utf-8") as f:
            return len(re.findall(r'<heap nr="\d+">', f.read()))
    finally:
        os.unlink(path)
