"""The headless commands as a user runs them: exit codes, --json, profiles without secrets."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from app.cli import main
from core import profile

ROOT = Path(__file__).resolve().parents[2]


def _last_json(out: str) -> dict[str, Any]:
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_strategies_lists_every_id(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["strategies"]) == 0
    out = capsys.readouterr().out
    for sid in ("connection-per-row", "copy-csv", "parallel-copy", "script-do-block"):
        assert sid in out


def test_load_json_and_profile_round_trip(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    src = tmp_path / "d.csv"
    # NA stands among numbers (a NULL marker there) and among words (a value there).
    src.write_text("id;name;score\n1;a;1.5\n2;NA;NA\n3;c;3\n", encoding="utf-8")
    table = table_name("cli")
    prof = tmp_path / "p.toml"
    secret_dsn = make_conninfo(dsn, password="hunter2")  # trust auth ignores it; it must not be stored
    code = main(["load", str(src), "--table", table, "--dsn", secret_dsn, "--mode", "create", "--json",
                 "--save-profile", str(prof), "--strategy", "unnest"])
    assert code == 0
    got = _last_json(capsys.readouterr().out)
    assert {k: got[k] for k in ("strategy", "rows_read", "rows_loaded", "rows_rejected")} == {
        "strategy": "unnest", "rows_read": 3, "rows_loaded": 3, "rows_rejected": 0}
    assert {"seconds", "rows_per_s", "bytes", "reject_file"} <= set(got)
    assert conn.execute(sql.SQL("SELECT count(*), count(name), count(score) FROM {}").format(
        sql.Identifier(table))).fetchone() == (3, 3, 2)
    text = prof.read_text()
    assert "hunter2" not in text and "password" not in text
    spec, _ = profile.load(prof)
    assert (spec.strategy, spec.target.table, spec.source.path) == ("unnest", table, str(src))
    # The profile runs again headless (as append now that the table exists).
    spec.target.mode = spec.target.mode.APPEND
    profile.save(spec, prof)
    assert main(["run", str(prof), "--dsn", dsn, "--json"]) == 0
    assert _last_json(capsys.readouterr().out)["rows_loaded"] == 3


def test_exit_codes(dsn: str, table_name: Callable[[str], str], tmp_path: Path, conn: psycopg.Connection[Any],
                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["load", str(tmp_path / "missing.csv"), "--table", "x", "--dsn", dsn]) == 2
    assert "file not found" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text("n\n1\nx\n", encoding="utf-8")
    table = table_name("codes")
    conn.execute(sql.SQL("CREATE TABLE {} (n int)").format(sql.Identifier(table)))
    assert main(["load", str(bad), "--table", table, "--dsn", dsn, "--json"]) == 1
    captured = capsys.readouterr()
    assert "line 3" in captured.err and "'n'" in captured.err
    assert "error" in _last_json(captured.out)
    assert main(["load", str(bad), "--table", table, "--dsn", dsn, "--strategy", "nope"]) == 2
    with pytest.raises(SystemExit) as exit_info:
        main(["load"])
    assert exit_info.value.code == 2


def test_python_dash_m_app_runs_as_a_process(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "app", "strategies"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and "copy-binary" in out.stdout


@pytest.mark.parametrize(("extra", "says"), [
    (["--delimiter", "ab"], "delimiter must be one character"),
    (["--quote", "xx"], "quote must be one character"),
    (["--sheet", "S"], "is for Excel files"),
    (["--on-error", "skip", "--reject-file", "/nonexistent/folder/r.csv"], "does not exist"),
    (["--mode", "upsert", "--key", "nope"], "upsert key nope"),
    (["--dsn", "foo"], "not a valid connection string"),
])
def test_settings_that_cannot_work_are_refused_before_anything_is_sent(
    extra: list[str], says: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str],
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """Found by a QA pass: each of these once ended in a Python traceback or a server refusal."""
    src = tmp_path / "d.csv"
    src.write_text("a,b\n1,2\n", encoding="utf-8")
    table = table_name("refused")
    conn.execute(sql.SQL("CREATE TABLE {} (a int PRIMARY KEY, b int)").format(sql.Identifier(table)))
    args = ["load", str(src), "--table", table, "--dsn", dsn, "--json", *extra]
    assert main(args) == 2
    captured = capsys.readouterr()
    assert says in captured.err and "Traceback" not in captured.err
    assert _last_json(captured.out)["kind"] == "ConfigError"
    assert conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone() == (0,)


@pytest.mark.parametrize("extra", [["--workers", "0"], ["--workers", "99"], ["--batch-rows", "0"],
                                   ["--batch-rows", "-5"], ["--reject-limit", "-1"]])
def test_numbers_out_of_range_are_usage_errors(extra: list[str], tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["load", str(tmp_path / "d.csv"), "--table", "t", *extra])
    assert exit_info.value.code == 2
    assert "out of range" in capsys.readouterr().err


def test_columns_the_table_does_not_take_are_named(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    src = tmp_path / "extra.csv"
    src.write_text("a,a,b,zz\n1,2,3,important\n", encoding="utf-8")
    table = table_name("extra")
    conn.execute(sql.SQL("CREATE TABLE {} (a int, b int)").format(sql.Identifier(table)))
    assert main(["load", str(src), "--table", table, "--dsn", dsn, "--json"]) == 0
    captured = capsys.readouterr()
    assert "not loaded: 2 columns of the file (a_2, zz)" in captured.err
    assert _last_json(captured.out)["columns_not_loaded"] == ["a_2", "zz"]


def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """`python -m app strategies | head -1`: the reader leaves early; no BrokenPipeError traceback."""
    shell = f"{sys.executable} -m app strategies | head -1"
    out = subprocess.run(["bash", "-o", "pipefail", "-c", shell], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr and out.stdout.startswith("auto")


@pytest.mark.parametrize("name", ["dump.sql.gz", "data.csv"])
def test_a_compressed_file_says_so(name: str, dsn: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A gzipped dump once got "--table is required" (its name does not end in .sql)."""
    import gzip

    path = tmp_path / name
    path.write_bytes(gzip.compress(b"a,b\n1,2\n"))
    assert main(["load", str(path), "--dsn", dsn]) == 2
    assert f"gzip-compressed: expand it first (gunzip {name})" in capsys.readouterr().err
