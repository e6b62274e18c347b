"""How many rows the source panel and the questions say a file holds: exact where it is cheap."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from core import preview
from core.preview import inspect_source
from core.spec import SourceOptions


def _frame(rows: int) -> pl.DataFrame:
    return pl.DataFrame({"id": range(rows), "name": [f"name {i}" for i in range(rows)],
                         "note": ["a, quoted\nnote" if i % 7 == 0 else "" for i in range(rows)]})


@pytest.mark.parametrize(("fmt", "suffix"), [("csv", "csv"), ("excel", "xlsx"), ("parquet", "parquet"),
                                            ("ndjson", "ndjson"), ("json", "json"), ("arrow", "arrow")])
def test_a_small_file_is_counted_exactly(fmt: str, suffix: str, tmp_path: Path) -> None:
    """"about 2,128 rows" for a 2,000-row CSV and "about 423" for a 500-row sheet were estimates
    from the first 200 rows' bytes; each format here is counted (its metadata, its sheet in memory,
    or the whole small file read through)."""
    rows = 500 if fmt == "excel" else 2000
    path = tmp_path / f"data.{suffix}"
    df = _frame(rows)
    {"csv": df.write_csv, "excel": df.write_excel, "parquet": df.write_parquet, "ndjson": df.write_ndjson,
     "json": df.write_json, "arrow": df.write_ipc}[fmt](path)
    info = inspect_source(SourceOptions(str(path)))
    assert info.sample.height == 200
    assert (info.rows, info.rows_exact, info.rows_text()) == (rows, True, f"{rows:,} rows")


def test_malformed_records_count_as_rows_as_in_a_load(tmp_path: Path) -> None:
    path = tmp_path / "ragged.csv"
    path.write_text("a,b\n" + "".join("1\n" if i % 100 == 3 else f"{i},x\n" for i in range(1000)), encoding="utf-8")
    info = inspect_source(SourceOptions(str(path)))
    assert (info.rows, info.rows_exact) == (1000, True)


def test_a_big_text_file_is_estimated_then_counted_by_a_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preview, "EXACT_FILE_BYTES", 1000)  # as if the file were over the size read through
    path = tmp_path / "big.csv"
    _frame(2000).write_csv(path)
    info = inspect_source(SourceOptions(str(path)))
    assert not info.rows_exact and info.rows_text().startswith("about ")
    assert abs(info.rows - 2000) <= 100  # from the bytes per record, quotes and quoted newlines counted
    counted = info.counted(2000)  # what a run or a check that read it through counted
    assert counted.rows_text() == "2,000 rows" and counted.sample is info.sample
