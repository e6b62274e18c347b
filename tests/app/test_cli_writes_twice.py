"""parallel-copy through a staging table writes every row twice: said before the run, in the log,
the plan line and `--json` (issue 27, item 4); where each row is written once, nothing says twice."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from app.cli import main
from core.events import Phase, Progress
from core.load.job import LoadJob
from core.server import TWICE
from core.spec import LoadMode, LoadSpec, SourceOptions, TargetSpec


def _csv(path: Path, rows: int) -> Path:
    path.write_text("id,s\n" + "".join(f"{i},row {i}\n" for i in range(rows)), encoding="utf-8")
    return path


def _two_phase(conn: psycopg.Connection[Any]) -> bool:
    return conn.execute("SHOW max_prepared_transactions").fetchone() != ("0",)


@pytest.mark.parametrize("mode", ["append", "truncate", "create"])
def test_the_cli_says_twice_before_the_run_and_in_json(
    mode: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = _csv(tmp_path / "p.csv", 3_000)
    table = table_name("twice")
    if mode != "create":
        conn.execute(sql.SQL("CREATE TABLE {} (id int, s text)").format(sql.Identifier(table)))
    # Append goes through a staging table only without two-phase commit (the machine's PG15:
    # max_prepared_transactions = 0); truncate always does; create renames a new table into place.
    twice = mode == "truncate" or (mode == "append" and not _two_phase(conn))
    code = main(["load", str(path), "--table", table, "--dsn", dsn, "--strategy", "parallel-copy", "--workers", "2",
                 "--mode", mode, "--json"])
    assert code == 0
    out, err = capsys.readouterr()
    result = json.loads(out.strip().splitlines()[-1])
    assert result["rows_loaded"] == 3_000 and result["writes_twice"] is twice
    assert (TWICE in result["reason"]) is twice
    assert (TWICE in err) is twice, err
    if twice:
        assert err.index(TWICE) < err.index("loaded 3,000 of 3,000 rows")  # the log said it before the end
        assert "Written once instead: " in err and "--commit per-batch" in err
    if mode == "append" and twice:
        assert "max_prepared_transactions > 0" in err and "--mode create" in err


def test_the_log_says_twice_before_the_first_row_and_the_plan_line_says_it(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
) -> None:
    path = _csv(tmp_path / "t.csv", 3_000)
    table = table_name("twiceplan")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, s text)").format(sql.Identifier(table)))
    spec = LoadSpec(SourceOptions(str(path)), TargetSpec(table, mode=LoadMode.TRUNCATE), strategy="parallel-copy",
                    workers=2, dsn=dsn)
    plan = LoadJob(spec).foresee()
    assert plan.writes_twice and plan.protocol == "staged"
    assert "every row written twice" in plan.describe() and TWICE in plan.describe()  # the window's plan line
    logs: list[str] = []
    first_row: list[int] = []

    def progress(p: Progress) -> None:
        if p.phase is Phase.LOADING and not first_row:  # rows start going out
            first_row.append(len(logs))

    result = LoadJob(spec, on_log=logs.append, on_progress=progress).run()
    said = next(i for i, line in enumerate(logs) if TWICE in line)
    assert first_row and said < first_row[0]
    assert result.writes_twice and result.to_json()["writes_twice"] is True


def test_create_mode_writes_once_and_says_nothing_of_twice(
    dsn: str, table_name: Callable[[str], str], tmp_path: Path,
) -> None:
    path = _csv(tmp_path / "c.csv", 2_000)
    spec = LoadSpec(SourceOptions(str(path)), TargetSpec(table_name("once"), mode=LoadMode.CREATE),
                    strategy="parallel-copy", workers=2, dsn=dsn)
    plan = LoadJob(spec).foresee()
    assert not plan.writes_twice and "twice" not in plan.describe()
    logs: list[str] = []
    result = LoadJob(spec, on_log=logs.append).run()
    assert not result.writes_twice and not any("twice" in line for line in logs)
