"""A headless load imports only what its path needs: the raw CSV path never loads polars,
numpy or pyarrow (together about 0.35 s here)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

_PROBE = """
import sys
from app.__main__ import main
code = main(sys.argv[1:])
mod = sys.modules.get("polars")
print("polars:", "absent" if mod is None else "deferred" if type(mod).__name__ == "_Deferred" else "loaded")
print("numpy:", "loaded" if "numpy" in sys.modules else "absent")
print("pyarrow:", "loaded" if "pyarrow" in sys.modules else "absent")
sys.exit(code)
"""


@pytest.mark.parametrize(("strategy", "polars_state"),
                         [("copy-csv", "deferred"), ("auto", "deferred"), ("executemany", "loaded")])
def test_a_raw_csv_load_never_imports_polars(
    strategy: str, polars_state: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str],
    tmp_path: Path,
) -> None:
    path = tmp_path / "one.csv"
    path.write_text('a,b\n1,"x, y"\n', encoding="utf-8")
    table = table_name("one")
    conn.execute(sql.SQL("CREATE TABLE {} (a int, b text)").format(sql.Identifier(table)))
    run = subprocess.run(
        [sys.executable, "-c", _PROBE, "load", str(path), "--table", table, "--dsn", dsn, "--strategy", strategy],
        capture_output=True, text=True, cwd=Path(__file__).parents[2], timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert f"polars: {polars_state}" in run.stdout
    if polars_state == "deferred":
        assert "numpy: absent" in run.stdout and "pyarrow: absent" in run.stdout
    assert conn.execute(sql.SQL("SELECT a, b FROM {}").format(sql.Identifier(table))).fetchall() == [(1, "x, y")]
