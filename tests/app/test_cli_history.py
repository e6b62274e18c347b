"""Headless runs go into the history the window shows; `python -m app history` lists and clears it."""

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

from app.cli import main
from core.history import History

ROOT = Path(__file__).resolve().parents[2]


def test_headless_loads_are_kept_failed_ones_with_autos_pick(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("SLUICE_DATA_DIR", str(tmp_path / "data"))
    table = table_name("kept")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, name text)").format(sql.Identifier(table)))
    good, bad = tmp_path / "good.csv", tmp_path / "bad.csv"
    good.write_text("id,name\n1,a\n2,b\n", encoding="utf-8")
    bad.write_text("id,name\n3,c\nx9,d\n", encoding="utf-8")
    assert main(["load", str(good), "--table", table, "--dsn", dsn]) == 0
    assert main(["load", str(bad), "--table", table, "--dsn", dsn]) == 1
    first, second = History(tmp_path / "data" / "history.sqlite3").entries()
    assert (first.origin, first.kind, first.mode, first.outcome, first.rows_loaded) == ("cli", "load", "append",
                                                                                        "loaded", 2)
    assert first.target == f"public.{table}" and first.source == str(good)
    assert first.strategy.startswith("auto → ") and first.strategy != "auto → auto"
    assert (second.outcome, second.rows_loaded) == ("failed", 0) and "x9" in second.note
    assert second.strategy.startswith("auto → ")  # the pick was made before the row was refused
    capsys.readouterr()
    assert main(["history"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3 and out[0].startswith("time") and "loaded" in out[1] and "failed" in out[2]
    assert "good.csv" in out[1] and "auto → " in out[2]
    assert main(["history", "--clear"]) == 0
    assert "2 runs forgotten" in capsys.readouterr().err
    assert History(tmp_path / "data" / "history.sqlite3").entries() == []


def test_python_m_app_history_lists_a_load_of_another_process(
    dsn: str, table_name: Callable[[str], str], tmp_path: Path
) -> None:
    env = {**os.environ, "SLUICE_DATA_DIR": str(tmp_path / "data")}
    src = tmp_path / "p.csv"
    src.write_text("id\n1\n2\n3\n", encoding="utf-8")
    table = table_name("proc")

    def app(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, text=True, cwd=ROOT,
                              env=env, timeout=120)

    assert app("load", str(src), "--table", table, "--mode", "create", "--dsn", dsn).returncode == 0
    run = app("history", "--json")
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert (got["origin"], got["mode"], got["rows_loaded"], got["target"]) == ("cli", "create", 3, f"public.{table}")
