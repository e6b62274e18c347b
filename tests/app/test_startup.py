"""A headless load imports only what its path needs: the raw CSV path never loads polars,
numpy or pyarrow (together about 0.35 s here), and the binary path not numpy.ma or
pyarrow.compute (16 and 50 ms, before its first batch could go)."""

from __future__ import annotations

import json
import os
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
print("numpy.ma:", "loaded" if "numpy.ma" in sys.modules else "absent")
print("pyarrow.compute:", "loaded" if "pyarrow.compute" in sys.modules else "absent")
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


def test_a_binary_load_of_dates_and_timestamps_skips_numpy_ma_and_pyarrow_compute(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
) -> None:
    path = tmp_path / "times.csv"
    path.write_text("d,ts\n2024-02-29,2024-02-29 10:00:00.5\n,\n1999-12-31,1999-12-31 23:59:59.0\n",
                    encoding="utf-8")
    table = table_name("times")
    conn.execute(sql.SQL("CREATE TABLE {} (d date, ts timestamp)").format(sql.Identifier(table)))
    run = subprocess.run(
        [sys.executable, "-c", _PROBE, "load", str(path), "--table", table, "--dsn", dsn, "--strategy", "copy-binary"],
        capture_output=True, text=True, cwd=Path(__file__).parents[2], timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "pyarrow: loaded" in run.stdout  # the binary path ran
    assert "numpy.ma: absent" in run.stdout and "pyarrow.compute: absent" in run.stdout
    got = conn.execute(sql.SQL("SELECT d::text, ts::text FROM {} ORDER BY d NULLS LAST").format(
        sql.Identifier(table))).fetchall()
    assert got == [("1999-12-31", "1999-12-31 23:59:59"), ("2024-02-29", "2024-02-29 10:00:00.5"), (None, None)]


def test_a_raw_csv_load_into_a_date_column_stays_without_polars(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
) -> None:
    """The file's bytes are looked at for relative date words (core.relative_dates) in Python
    when small: a one-row raw load does not import polars for it."""
    path = tmp_path / "day.csv"
    path.write_text("a,d\n1,2024-01-05\n", encoding="utf-8")
    table = table_name("day")
    conn.execute(sql.SQL("CREATE TABLE {} (a int, d date)").format(sql.Identifier(table)))
    run = subprocess.run(
        [sys.executable, "-c", _PROBE, "load", str(path), "--table", table, "--dsn", dsn, "--strategy", "copy-csv"],
        capture_output=True, text=True, cwd=Path(__file__).parents[2], timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "polars: deferred" in run.stdout
    assert conn.execute(sql.SQL("SELECT a, d::text FROM {}").format(sql.Identifier(table))).fetchall() == [
        (1, "2024-01-05")]


def test_a_headless_command_pauses_the_collector_for_its_imports_then_resumes() -> None:
    import gc

    from app.__main__ import _pause_collection

    try:
        timer = _pause_collection(0.05)
        assert not gc.isenabled()
        timer.join()
        assert gc.isenabled()
        assert gc.get_freeze_count() > 0  # what the imports made is left out of later passes
    finally:
        gc.unfreeze()
        gc.enable()


def test_a_headless_command_leaves_with_its_code_its_output_and_its_exit_handlers(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
) -> None:
    """`python -m app` leaves a headless command by os._exit (no interpreter teardown): what it
    printed still arrives whole through a pipe, its exit code is kept, and the exit handlers
    (logging's, the embedded server's handle list) still run. `site` is the hook that lets the
    probe register one of its own before the command starts."""
    hook = tmp_path / "hook"
    hook.mkdir()
    marker = tmp_path / "handlers_ran"
    (hook / "sitecustomize.py").write_text(
        "import atexit, pathlib\n"
        f"atexit.register(pathlib.Path({str(marker)!r}).write_text, 'yes')\n", encoding="utf-8")
    path = tmp_path / "rows.csv"
    path.write_text("id,name\n" + "".join(f"{i},name {i}\n" for i in range(2_000)), encoding="utf-8")
    table = table_name("leave")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, name text)").format(sql.Identifier(table)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hook), os.environ.get("PYTHONPATH", "")])}

    def app(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, text=True, env=env,
                              cwd=Path(__file__).parents[2], timeout=120)

    run = app("load", str(path), "--table", table, "--dsn", dsn, "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout.splitlines()[-1])["rows_loaded"] == 2_000
    assert "loaded 2,000 of 2,000 rows" in run.stderr
    assert marker.read_text(encoding="utf-8") == "yes"
    marker.unlink()
    bad = tmp_path / "bad.csv"
    bad.write_text("id,name\nx,y\n", encoding="utf-8")
    failed = app("load", str(bad), "--table", table, "--dsn", dsn, "--json")
    assert failed.returncode == 1 and "error:" in failed.stderr and '"error"' in failed.stdout
    assert marker.read_text(encoding="utf-8") == "yes"
    listed = app("strategies")
    assert listed.returncode == 0 and "copy-binary" in listed.stdout and listed.stdout.endswith("\n")
