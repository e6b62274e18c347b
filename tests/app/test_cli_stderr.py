"""What the headless command writes to stderr under the skip policy: a few lines, not one per reject."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("strategy", ["auto", "pipeline"])
def test_skip_keeps_stderr_short(strategy: str, dsn: str, conn: psycopg.Connection[Any],
                                 table_name: Callable[[str], str], tmp_path: Path) -> None:
    """18 rejected rows: psycopg's "error ignored terminating <Pipeline>: pipeline aborted" warning
    came three times for each (55 lines); the load says what happened once."""
    src = tmp_path / "bad.csv"
    src.write_text("id,n\n" + "".join(f"{i},{'x' if i % 111 == 5 else i}\n" for i in range(2000)), encoding="utf-8")
    table = table_name("quiet")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, n int)").format(sql.Identifier(table)))
    out = subprocess.run(
        [sys.executable, "-m", "app", "load", str(src), "--table", table, "--dsn", dsn, "--on-error", "skip",
         "--strategy", strategy, "--reject-file", str(tmp_path / "rejects.csv")],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stderr.splitlines()
    assert not [line for line in lines if "pipeline aborted" in line]
    assert len(lines) <= 6, out.stderr
    assert "18 rejected rows" in out.stderr
    assert conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone() == (1982,)
