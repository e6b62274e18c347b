"""What the command line says of a file before and after a load: the NULL marker (where it read
as NULL, where it stayed text, how to change that) and the value formats (--column-format)."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from app.cli import main
from core import profile


def _last_json(out: str) -> dict[str, Any]:
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _flights(path: Path, rows: int, seed: int) -> tuple[Path, int, int]:
    """Like R's nycflights13: NA among numbers (NULL) and as a tail number (text). Returns the NA counts."""
    rng = random.Random(seed)
    lines = ["year,dep_time,tailnum,carrier"]
    dep_na = tail_na = 0
    for _ in range(rows):
        dep = "NA" if rng.random() < 0.05 else str(rng.randrange(2400))
        tail = "NA" if rng.random() < 0.1 else f"N{rng.randrange(999)}{rng.choice('ABC')}"
        dep_na += dep == "NA"
        tail_na += tail == "NA"
        lines.append(f"2013,{dep},{tail},UA")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, dep_na, tail_na


@pytest.mark.parametrize("seed", [1, 2])
def test_a_sniffed_marker_is_said_in_the_log_and_json(
    seed: int, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path, dep_na, tail_na = _flights(tmp_path / "flights.csv", 2000, seed)
    table = table_name("fl")
    assert main(["load", str(path), "--table", table, "--dsn", dsn, "--mode", "create", "--json"]) == 0
    out, err = capsys.readouterr()
    got = _last_json(out)["null_marker"]
    assert got["marker"] == "NA"
    assert got["applied_to"] == ["year", "dep_time"] and got["kept_as_text_in"] == ["tailnum", "carrier"]
    assert got["counts"] == {"dep_time": dep_na, "tailnum": tail_na} and got["counted_whole_file"]
    lines = err.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("NULL marker"))
    assert first <= 3  # among the log's first lines, before the load's own
    assert f"read as NULL in year, dep_time ({dep_na:,}×)" in lines[first]
    assert f"kept as text in tailnum ({tail_na:,}×), carrier" in lines[first + 1]
    assert "--null NA (the window: NULL everywhere) reads it as NULL in every column" in lines[first + 1]
    stored = conn.execute(sql.SQL("SELECT count(*) FILTER (WHERE dep_time IS NULL), "
                                  "count(*) FILTER (WHERE tailnum = 'NA') FROM {}").format(
        sql.Identifier(table))).fetchone()
    assert stored == (dep_na, tail_na)


def test_a_named_marker_applies_everywhere_and_says_so(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path, _dep_na, tail_na = _flights(tmp_path / "flights.csv", 500, 3)
    table = table_name("fl")
    assert main(["load", str(path), "--table", table, "--dsn", dsn, "--mode", "create", "--json", "--null", "NA"]) == 0
    out, err = capsys.readouterr()
    got = _last_json(out)["null_marker"]
    assert got["kept_as_text_in"] == [] and got["applied_to"] == ["year", "dep_time", "tailnum", "carrier"]
    assert "NULL marker 'NA' (given)" in err and "kept as text" not in err
    nulls = conn.execute(sql.SQL("SELECT count(*) FILTER (WHERE tailnum IS NULL) FROM {}").format(
        sql.Identifier(table))).fetchone()
    assert nulls == (tail_na,)


def test_no_marker_no_word(dsn: str, table_name: Callable[[str], str], tmp_path: Path,
                           capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "plain.csv"
    path.write_text("a,b\n1,x\n,y\n", encoding="utf-8")
    assert main(["load", str(path), "--table", table_name("pl"), "--dsn", dsn, "--mode", "create", "--json"]) == 0
    out, err = capsys.readouterr()
    assert _last_json(out)["null_marker"] is None and "NULL marker" not in err


def test_column_format_on_the_command_line_and_in_the_saved_profile(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "orders.csv"
    path.write_text("order_date,total\n03/04/2024,\"1,234.50\"\n05/06/2024,\"12.00\"\n", encoding="utf-8")
    table = table_name("ord")
    prof = tmp_path / "p.toml"
    code = main(["load", str(path), "--table", table, "--dsn", dsn, "--mode", "create", "--json",
                 "--column-format", "order_date=DD/MM/YYYY", "--save-profile", str(prof)])
    assert code == 0
    out, err = capsys.readouterr()
    assert _last_json(out)["value_formats"] == {"order_date": "DD/MM/YYYY", "total": "1,234.56"}
    assert "value formats: order_date DD/MM/YYYY, total 1,234.56" in err
    rows = conn.execute(sql.SQL("SELECT order_date::text, total::text FROM {} ORDER BY 1").format(
        sql.Identifier(table))).fetchall()
    assert rows == [("2024-04-03", "1234.50"), ("2024-06-05", "12.00")]
    spec, _ = profile.load(prof)
    assert spec.source.column_formats == {"order_date": "DD/MM/YYYY"}


@pytest.mark.parametrize(("arg", "said"), [
    ("order_date", "takes COLUMN=FORMAT"), ("order_date=DD/MM/YY", "not a value format"),
    ("nope=DD/MM/YYYY", "names nope, which the file does not have"),
])
def test_a_bad_column_format_is_a_usage_error(
    arg: str, said: str, dsn: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "orders.csv"
    path.write_text("order_date\n03/04/2024\n", encoding="utf-8")
    assert main(["load", str(path), "--table", "never_made", "--dsn", dsn, "--column-format", arg]) == 2
    assert said in capsys.readouterr().err


def test_a_column_format_for_a_sql_script_is_refused(dsn: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.sql"
    path.write_text("INSERT INTO t (a, d) VALUES (1, '15.03.2024');\n", encoding="utf-8")
    assert main(["load", str(path), "--table", "never_made", "--dsn", dsn, "--column-format", "d=DD.MM.YYYY"]) == 2
    assert "a SQL script's literals are read as PostgreSQL reads them" in capsys.readouterr().err
