"""The lab's verdicts (issue 24, item 22): `auto` as a contestant saying its pick, and ties."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from core.lab.compare import CompareResult, CompareSpec, combinations, describe, rank, run_compare, verdict
from core.spec import LoadMode, LoadSpec, SourceOptions, TargetSpec


def test_a_winner_whose_range_overlaps_the_runner_up_is_a_tie() -> None:
    a = CompareResult("copy-csv", 10_000, 1, runs=[900.0, 1000.0, 1200.0])
    b = CompareResult("copy-binary", 10_000, 1, runs=[700.0, 950.0, 980.0])  # its best beats a's worst
    c = CompareResult("executemany", 10_000, 1, runs=[100.0, 110.0])
    rank([a, b, c])
    assert (a.tie, b.tie, c.tie) == (True, True, False)
    assert verdict([a, b, c]) == ("tie: copy-csv · 10,000 and copy-binary · 10,000 "
                                  "(medians within 10% of the fastest, or min–max ranges that overlap)")
    assert a.to_json()["tie"] is True
    b.runs = [700.0, 800.0, 850.0]  # apart now: a's slowest run beats b's fastest
    rank([a, b, c])
    assert not a.tie and not b.tie and verdict([a, b, c]) == "copy-csv · 10,000 wins"
    assert verdict([CompareResult("unnest", 10, 1, error="boom")]) == ""


def test_auto_is_a_contestant_once_and_says_what_it_picked() -> None:
    base = LoadSpec(SourceOptions("unused.csv"), TargetSpec("t"))
    got = combinations(CompareSpec(base, ["auto", "copy-csv"], batch_rows=[100, 1000], workers=[2, 4]))
    assert [(r.strategy, r.batch_sized) for r in got] == [("auto", False), ("copy-csv", True), ("copy-csv", True)]
    auto = got[0]
    assert describe(auto) == "auto"
    auto.picked = "copy-csv · 100,000"
    assert describe(auto) == "auto → copy-csv · 100,000" and auto.to_json()["picked"] == "copy-csv · 100,000"


def test_auto_runs_in_the_lab_and_its_pick_is_reported(
    dsn: str, table_name: Callable[[str], str], tmp_path: Path
) -> None:
    src = tmp_path / "a.csv"
    src.write_text("id,name\n" + "".join(f"{i},n{i}\n" for i in range(500)), encoding="utf-8")
    base = LoadSpec(SourceOptions(str(src)), TargetSpec(table_name("cmpauto"), mode=LoadMode.CREATE), dsn=dsn)
    report = run_compare(CompareSpec(base, ["auto", "executemany"], batch_rows=[500], repeat=2))
    auto = next(r for r in report.results if r.strategy == "auto")
    assert auto.error is None and len(auto.runs) == 2 and auto.rows == 500
    assert auto.picked.startswith("copy-") and describe(auto).startswith("auto → copy-")
    assert report.to_json()["results"][0]["picked"] == auto.picked
    json_ties = [r["tie"] for r in report.to_json()["results"]]
    assert all(isinstance(t, bool) for t in json_ties)
