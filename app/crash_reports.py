"""Crash reports for hard crashes (segfaults, aborts) that Python's own excepthook never sees.

`arm()` points `faulthandler` at a new file in the data directory and keeps it open for
the life of the process; a clean exit calls `disarm()`, which deletes it. A file that
is still there at the next start, and holds more than its header, is the report of a
crashed run: `pending()` finds it, and `mark_seen()` files it away once offered. No Qt
here, so the window and the tests can use it alike.
"""

from __future__ import annotations

import datetime as dt
import faulthandler
import os
import platform
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import IO

PREFIX = "crash-"
HEADER_END = "--- faulthandler report follows ---\n"
KEEP_SEEN = 5  # older reports already offered are deleted

_armed: CrashLog | None = None


def reports_dir(root: Path | None = None) -> Path:
    if root is None:
        from core.embedded import data_dir

        root = data_dir()
    d = root / "crashes"
    d.mkdir(parents=True, exist_ok=True)
    return d


@dataclass
class CrashLog:
    path: Path
    file: IO[str]


def _header(versions: dict[str, str]) -> str:
    lines = [f"Sluice started {dt.datetime.now().astimezone():%Y-%m-%d %H:%M:%S %z}, pid {os.getpid()}",
             f"Python {sys.version.split()[0]} on {platform.platform()}"]
    lines += [f"{name} {version}" for name, version in versions.items()]
    return "\n".join(lines) + "\n" + HEADER_END


def arm(root: Path | None = None, versions: dict[str, str] | None = None) -> CrashLog:
    """Start writing fatal-error tracebacks of every thread to a fresh report file."""
    global _armed
    if _armed is not None:
        return _armed
    d = reports_dir(root)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = d / f"{PREFIX}{stamp}-{os.getpid()}.log"
    f = open(path, "w", encoding="utf-8")  # noqa: SIM115 - must stay open until the process ends
    f.write(_header(versions or {}))
    f.flush()
    faulthandler.enable(file=f, all_threads=True)
    _armed = CrashLog(path, f)
    return _armed


def disarm() -> None:
    """A clean exit: stop the handler and delete this run's (empty) report."""
    global _armed
    log, _armed = _armed, None
    if log is None:
        return
    faulthandler.disable()
    log.file.close()
    log.path.unlink(missing_ok=True)


def _has_report(path: Path) -> bool:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    head, sep, tail = text.partition(HEADER_END)
    return bool(tail.strip()) if sep else bool(head.strip())


def _pid_of(path: Path) -> int | None:
    try:
        return int(path.stem.rsplit("-", 1)[1])
    except (IndexError, ValueError):
        return None


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    if os.name != "posix":
        return True  # no cheap, safe probe here (os.kill would terminate): keep the file
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def pending(root: Path | None = None) -> list[Path]:
    """Reports of earlier runs that crashed, newest first; tidies files of runs that left nothing."""
    found: list[Path] = []
    for path in reports_dir(root).glob(f"{PREFIX}*.log"):
        if _armed is not None and path == _armed.path:
            continue
        if _has_report(path):
            found.append(path)
        else:
            pid = _pid_of(path)
            if pid is not None and not _alive(pid):
                path.unlink(missing_ok=True)  # killed without a traceback (SIGKILL, power cut)
    return sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)


def mark_seen(paths: list[Path]) -> None:
    """Keep offered reports as `.seen` (newest few only) so they are not offered twice."""
    for path in paths:
        path.replace(path.with_suffix(".seen"))
    if paths:
        seen = sorted(paths[0].parent.glob(f"{PREFIX}*.seen"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in seen[KEEP_SEEN:]:
            old.unlink(missing_ok=True)
