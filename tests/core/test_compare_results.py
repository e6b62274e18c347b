"""The compare lab reports each run as it finishes, and runs row-by-row strategies once."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from app.cli import main
from core.lab.compare import CompareResult, CompareSpec, combinations, describe, rank, run_compare
from core.spec import LoadSpec, SourceOptions, TargetSpec
from core.strategies.catalogue import all_strategies


def _spec(strategies: list[str], **kw: Any) -> CompareSpec:
    base = LoadSpec(SourceOptions("unused.csv"), TargetSpec("t"))
    return CompareSpec(base, strategies, **kw)


def test_strategies_without_a_batch_size_run_once_on_one_connection() -> None:
    spec = _spec(["row-transaction", "connection-per-row", "row-autocommit", "unnest", "parallel-copy"],
                 batch_rows=[100, 5000, 1000], workers=[2, 4])
    got = {(r.strategy, r.batch_rows, r.workers, r.batch_sized) for r in combinations(spec)}
    assert got == {
        # row by row: once, reads sized by the largest batch asked, one connection at a time
        ("row-transaction", 5000, 1, False), ("connection-per-row", 5000, 1, False),
        ("row-autocommit", 5000, 1, False),
        ("unnest", 100, 1, True), ("unnest", 5000, 1, True), ("unnest", 1000, 1, True),
        *{("parallel-copy", b, w, True) for b in (100, 5000, 1000) for w in (2, 4)},
    }
    # The rule is the strategies' own capability, so a script replayed statement by statement runs once too.
    script = combinations(_spec(["script-transaction", "script-do-block"], batch_rows=[10, 20]), is_sql=True)
    assert [(r.strategy, r.batch_rows) for r in script] == [
        ("script-transaction", 20), ("script-do-block", 10), ("script-do-block", 20)]
    for cls in all_strategies():
        assert cls.takes_workers == (cls.id == "parallel-copy")  # the catalogue as it stands today


def test_labels_and_ranking() -> None:
    fast = CompareResult("parallel-copy", 10_000, 4, runs=[4000.0])
    slow = CompareResult("row-transaction", 10_000, 1, runs=[1000.0, 3000.0], batch_sized=False)
    broken = CompareResult("unnest", 500, 1, error="boom")
    rank([fast, slow, broken])
    assert (fast.ratio_to_fastest, slow.ratio_to_fastest, broken.ratio_to_fastest) == (1.0, 0.5, 0.0)
    assert [describe(r) for r in (fast, slow, broken)] == ["parallel-copy ×4 · 10,000", "row-transaction",
                                                           "unnest · 500"]
    assert slow.to_json()["batch_sized"] is False


def test_each_run_is_reported_as_it_finishes(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    src = tmp_path / "r.csv"
    src.write_text("id,name\n" + "".join(f"{i},n{i}\n" for i in range(1500)), encoding="utf-8")
    table = table_name("cmpres")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, name text)").format(sql.Identifier(table)))
    scratch_seen: list[int] = []

    def scratch_tables() -> int:
        row = conn.execute("SELECT count(*) FROM pg_class WHERE relname LIKE '\\_sluice\\_cmp\\_%'").fetchone()
        assert row is not None
        return int(row[0])

    reported: list[CompareResult] = []

    def on_result(r: CompareResult) -> None:
        reported.append(r)
        scratch_seen.append(scratch_tables())  # the comparison is still under way

    spec = CompareSpec(LoadSpec(SourceOptions(str(src)), TargetSpec(table), dsn=dsn),
                       ["row-transaction", "executemany", "parallel-copy"], batch_rows=[100, 1000],
                       workers=[2], repeat=2)
    report = run_compare(spec, on_result=on_result)

    keys = [r.key for r in report.results]
    assert keys == [("row-transaction", 1000, 1), ("executemany", 100, 1), ("executemany", 1000, 1),
                    ("parallel-copy", 100, 2), ("parallel-copy", 1000, 2)]
    # one report per run, interleaved: every combination's first run, then every second run
    assert [r.key for r in reported] == keys + keys
    assert [len(r.runs) for r in reported] == [1] * 5 + [2] * 5
    assert all(n >= 1 for n in scratch_seen)
    assert scratch_tables() == 0
    # snapshots: the first report still holds one run after the comparison went on
    assert reported[0].runs == report.results[0].runs[:1]
    for final, last in zip(report.results, reported[5:]):
        assert final.runs == last.runs and final.rows == 1500 and final.error is None
    assert report.results[0].batch_sized is False and report.results[3].workers == 2


def test_cli_prints_round_trip_sample_and_no_batch_for_row_by_row(
    dsn: str, table_name: Callable[[str], str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "c.csv"
    src.write_text("id\n" + "".join(f"{i}\n" for i in range(300)), encoding="utf-8")
    code = main(["compare", str(src), "--table", table_name("cli"), "--dsn", dsn, "--strategies",
                 "row-transaction,unnest", "--batch-rows", "100,200", "--repeat", "1", "--sample-rows", "250",
                 "--json"])
    assert code == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("round trip: as the connection is") and "first 250 rows" in out[0]
    row_line = next(line for line in out if line.startswith("row-transaction"))
    assert row_line.split()[1] == "—"
    got = json.loads(out[-1])
    assert [(r["strategy"], r["batch_rows"], r["batch_sized"]) for r in got["results"]] == [
        ("row-transaction", 200, False), ("unnest", 100, True), ("unnest", 200, True)]
    assert got["sample_rows"] == 250 and got["rtt_ms"] == 0


def test_a_failed_run_names_the_users_file_not_the_labs_copy(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """The lab loads a copy of the first rows from a temporary folder; its errors once named that copy."""
    src = tmp_path / "mine.csv"
    src.write_text("id,flag\n1,true\n2,maybe\n", encoding="utf-8")
    table = table_name("cmpbad")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, flag bool)").format(sql.Identifier(table)))
    spec = CompareSpec(LoadSpec(SourceOptions(str(src)), TargetSpec(table), dsn=dsn), ["executemany"],
                       batch_rows=[100], repeat=1, sample_rows=10)
    (result,) = run_compare(spec).results
    assert result.error is not None
    assert "sluice-" not in result.error and "mine.csv (rows the lab copied), row 2" in result.error, result.error
