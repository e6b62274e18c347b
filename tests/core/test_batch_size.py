"""A load that names no batch size gets its strategy's own: bytes for a COPY stream, 10,000 rows
for the others; a size the user names is kept."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from core.batch_size import DEFAULT_BATCH_ROWS, byte_sized, row_width
from core.errors import ConfigError
from core.load.job import LoadJob
from core.profile import from_toml, to_toml
from core.spec import LoadMode, LoadSpec, SourceOptions, TargetSpec


def test_byte_sized_batches_hold_about_8_mb() -> None:
    assert byte_sized(100) == (8 << 20) // 100
    assert byte_sized(100, stages=4) == (8 << 20) // 100 // 4
    assert byte_sized(10) == 100_000 and byte_sized(10, stages=4) == 25_000  # at most 100,000 rows
    assert byte_sized(50_000) == 1_000 and byte_sized(50_000, stages=4) == 1_000  # at least 1,000
    assert byte_sized(0) == byte_sized(100)  # unknown width: taken as 100 bytes


@pytest.mark.parametrize(("strategy", "stages"), [("copy-csv", 1), ("copy-binary", 4), ("copy-text", 1),
                                                  ("executemany", 0), ("unnest", 0)])
def test_a_load_without_a_batch_size_takes_its_strategys_own(
    strategy: str, stages: int, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str],
    tmp_path: Path,
) -> None:
    path = tmp_path / "rows.csv"
    path.write_text("a,b\n" + "".join(f"{i},{'x' * (i % 300)}\n" for i in range(3000)), encoding="utf-8")
    t = table_name("sized")
    conn.execute(sql.SQL("CREATE TABLE {} (a int, b text)").format(sql.Identifier(t)))
    logs: list[str] = []
    job = LoadJob(LoadSpec(SourceOptions(str(path)), TargetSpec(t, mode=LoadMode.APPEND), strategy=strategy, dsn=dsn),
                  on_log=logs.append)
    assert job.spec.batch_rows is None
    result = job.run()
    width = row_width(path, path.stat().st_size)
    assert 150 < width < 160  # the rows' average, header included
    expected = byte_sized(width, stages) if stages else DEFAULT_BATCH_ROWS
    assert job.spec.batch_rows == expected
    assert any(f"with {strategy} (batches of {expected:,} rows)" in m for m in logs)
    assert result.rows_loaded == 3000
    got = conn.execute(sql.SQL("SELECT count(*), sum(a), sum(length(b)) FROM {}").format(sql.Identifier(t))).fetchone()
    assert got == (3000, sum(range(3000)), sum(i % 300 for i in range(3000)))


def test_a_batch_size_the_user_names_is_kept(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    path = tmp_path / "rows.csv"
    path.write_text("a\n" + "".join(f"{i}\n" for i in range(100)), encoding="utf-8")
    t = table_name("sized")
    conn.execute(sql.SQL("CREATE TABLE {} (a int)").format(sql.Identifier(t)))
    job = LoadJob(LoadSpec(SourceOptions(str(path)), TargetSpec(t, mode=LoadMode.APPEND), strategy="copy-binary",
                           batch_rows=7, dsn=dsn))
    assert job.run().rows_loaded == 100
    assert job.spec.batch_rows == 7


def test_a_profile_without_a_batch_size_leaves_it_to_the_strategy(tmp_path: Path) -> None:
    spec = LoadSpec(SourceOptions(str(tmp_path / "a.csv")), TargetSpec("t"), strategy="copy-binary")
    text = to_toml(spec)
    assert "batch_rows" not in text
    assert from_toml(text)[0].batch_rows is None
    assert from_toml(to_toml(LoadSpec(SourceOptions("a.csv"), TargetSpec("t"), batch_rows=500)))[0].batch_rows == 500
    with pytest.raises(ConfigError, match="batch_rows must be a whole number"):
        from_toml(text.replace('strategy = "copy-binary"', 'strategy = "copy-binary"\nbatch_rows = "lots"'))
