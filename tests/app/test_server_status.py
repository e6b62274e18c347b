"""`python -m app server status` tells how to reach the embedded server: a DSN and a psql command that work."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from app.cli import main
from core.embedded import connection_help


def test_connection_help_gives_a_working_psql_command(embedded_dsn: str) -> None:
    dsn_line, psql_line = connection_help(embedded_dsn)
    assert dsn_line.startswith("DSN: ") and "password" not in dsn_line
    cmd = shlex.split(psql_line.removeprefix("psql: ")) + ["-tAc", "select 40 + 2"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "42"


def test_status_of_a_stopped_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("SLUICE_DATA_DIR", str(tmp_path))
    assert main(["server", "status"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("stopped:") and "server start" in out
