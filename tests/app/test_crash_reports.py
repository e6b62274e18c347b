"""Hard crashes leave a report in the data directory; a clean exit leaves nothing."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from app import crash_reports

ROOT = Path(__file__).resolve().parents[2]


def _child(data: Path, body: str) -> subprocess.CompletedProcess[str]:
    code = textwrap.dedent(f"""
        from pathlib import Path
        from app import crash_reports
        crash_reports.arm(Path({str(data)!r}), versions={{"PySide6": "test"}})
    """) + textwrap.dedent(body)
    env = {**os.environ, "SLUICE_DATA_DIR": str(data)}
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=60)


def test_a_segfault_leaves_a_report_that_is_offered_once(tmp_path: Path) -> None:
    r = _child(tmp_path, "import faulthandler\nfaulthandler._sigsegv()\n")
    assert r.returncode != 0
    reports = crash_reports.pending(tmp_path)
    assert len(reports) == 1
    text = reports[0].read_text()
    assert "PySide6 test" in text and "Segmentation fault" in text and "<string>" in text
    crash_reports.mark_seen(reports)
    assert crash_reports.pending(tmp_path) == []
    assert reports[0].with_suffix(".seen").exists()


def test_a_clean_exit_leaves_nothing(tmp_path: Path) -> None:
    r = _child(tmp_path, "crash_reports.disarm()\n")
    assert r.returncode == 0, r.stderr
    assert list(crash_reports.reports_dir(tmp_path).iterdir()) == []


@pytest.mark.skipif(os.name != "posix", reason="dead processes are told apart by pid on POSIX only")
def test_a_kill_without_traceback_is_tidied_not_offered(tmp_path: Path) -> None:
    r = _child(tmp_path, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    assert r.returncode == -9
    assert len(list(crash_reports.reports_dir(tmp_path).glob("crash-*.log"))) == 1  # header only
    assert crash_reports.pending(tmp_path) == []
    assert list(crash_reports.reports_dir(tmp_path).iterdir()) == []


def test_only_the_newest_seen_reports_are_kept(tmp_path: Path) -> None:
    d = crash_reports.reports_dir(tmp_path)
    for i in range(crash_reports.KEEP_SEEN + 3):
        path = d / f"crash-2026010{i}-000000-{10_000_000 + i}.log"
        path.write_text(f"header\n{crash_reports.HEADER_END}Fatal Python error: {i}\n")
        os.utime(path, (1_000_000 + i, 1_000_000 + i))
    found = crash_reports.pending(tmp_path)
    assert len(found) == crash_reports.KEEP_SEEN + 3 and "error: 7" in found[0].read_text()
    crash_reports.mark_seen(found)
    assert len(list(d.glob("*.seen"))) == crash_reports.KEEP_SEEN
