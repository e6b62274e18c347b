"""The CLI with many files (issue 26 item 6): a quoted glob, a folder, a shell's expanded list;
--commit per-file; a profile that holds the glob; the help says how per-file commits are chosen."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from app.cli import build_parser, main
from core import profile


def _exports(folder: Path, months: int, rows: int) -> None:
    folder.mkdir()
    for m in range(1, months + 1):
        body = "".join(f"{m * 1000 + i};{m}.{i:02d};\"x;{i}\"\n" for i in range(rows))
        (folder / f"sales-{m:02d}.csv").write_text("id;price;note\n" + body, encoding="utf-8")


def _count(conn: psycopg.Connection[Any], table: str) -> int:
    row = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone()
    return int(row[0]) if row else -1


def test_a_glob_per_file_with_json_files_and_a_profile_that_holds_the_glob(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    _exports(tmp_path / "exports", 3, 25)
    monkeypatch.chdir(tmp_path)
    table = table_name("clim")
    prof = tmp_path / "profiles" / "p.toml"
    prof.parent.mkdir()
    code = main(["load", "exports/*.csv", "--table", table, "--dsn", dsn, "--mode", "create", "--commit",
                 "per-file", "--json", "--save-profile", str(prof)])
    out, err = capsys.readouterr()
    assert code == 0, err
    got = json.loads(out.strip().splitlines()[-1])
    assert [(Path(f["file"]).name, f["rows_read"], f["rows_loaded"], f["rows_rejected"]) for f in got["files"]] == [
        (f"sales-0{m}.csv", 25, 25, 0) for m in (1, 2, 3)]
    assert "sales-02.csv: 25 rows read, 25 loaded" in err and "from 3 files" in err
    assert _count(conn, table) == 75
    # the profile keeps the glob (rewritten from its own folder) and runs it again, from anywhere
    spec, _ = profile.load(prof)
    assert spec.source.path == str((tmp_path / "exports" / "*.csv").resolve())
    spec.target.mode = spec.target.mode.APPEND
    profile.save(spec, prof)
    monkeypatch.chdir(prof.parent)
    assert main(["run", str(prof), "--dsn", dsn, "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out.strip().splitlines()[-1])["files"]) == 3
    assert _count(conn, table) == 150


def test_a_shells_expanded_glob_and_a_folder_in_one_transaction(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _exports(tmp_path / "e", 2, 10)
    table = table_name("clis")
    files = [str(p) for p in sorted((tmp_path / "e").iterdir())]
    assert main(["load", *files, "--table", table, "--dsn", dsn, "--mode", "create", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out.strip().splitlines()[-1])["files"]) == 2
    (tmp_path / "e" / "sales-03.csv").write_text("id;price\n1;2\n", encoding="utf-8")
    assert main(["load", str(tmp_path / "e"), "--table", table, "--dsn", dsn, "--json"]) == 2
    out, err = capsys.readouterr()
    assert "sales-03.csv" in err and "lacks 'note'" in err and "nothing was sent" in err
    assert _count(conn, table) == 20


def test_the_help_says_how_per_file_commits_are_chosen(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["load", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "a folder, a quoted glob" in text and "--commit per-file" in text and "per-file: with several files" in text


def test_a_per_file_profile_that_stopped_at_a_bad_file_resumes_with_run(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _exports(tmp_path / "x", 3, 12)
    bad = tmp_path / "x" / "sales-02.csv"
    good = bad.read_text()
    bad.write_text(good.replace("2005;2.05", "2005;two"))
    table = table_name("cliresume")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, price numeric, note text)").format(sql.Identifier(table)))
    prof = tmp_path / "monthly.toml"
    code = main(["load", str(tmp_path / "x" / "*.csv"), "--table", table, "--dsn", dsn, "--commit", "per-file",
                 "--save-profile", str(prof), "--json"])
    out, err = capsys.readouterr()
    assert code == 1  # the data, not the arguments
    assert "sales-02.csv, line 7, column 'price'" in err and "the 1 file before it stay loaded (12 rows)" in err
    assert json.loads(out.strip().splitlines()[-1])["kind"] == "BadRowError"
    assert _count(conn, table) == 12
    assert main(["run", str(prof), "--dsn", dsn]) == 2  # unfinished: resume or restart, said
    assert "--resume" in capsys.readouterr().err
    bad.write_text(good)
    assert main(["run", str(prof), "--dsn", dsn, "--resume", "--json"]) == 0
    out, err = capsys.readouterr()
    files = json.loads(out.strip().splitlines()[-1])["files"]
    assert [f.get("skipped", False) for f in files] == [True, False, False]
    assert _count(conn, table) == 36
