"""The bench's round-by-round ratios (bench/corpus_bench.py): pure arithmetic on the times it
measured; and its Python floor (bench/floor_client.py), a whole command against the real server."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from bench.corpus_bench import FLOOR, L0, paired, round_ratios


def test_a_ratio_compares_the_runs_of_one_round() -> None:
    times = {"auto": [1.0, 2.0, 4.0], "psql \\copy": [1.5, 2.0, 2.0]}
    assert round_ratios(times, "auto", "psql \\copy") == [1.5, 1.0, 0.5]
    assert round_ratios(times, "auto", "missing") == []


def test_the_table_gives_each_round_and_the_median_for_the_criteria_of_each_shape() -> None:
    results = {
        "narrow": {"psql \\copy": [0.5, 0.6, 0.4], "auto": [0.6, 0.5, 0.5], "copy-csv": [0.7, 0.7, 0.7],
                   FLOOR: [0.5, 0.5, 0.5]},
        "mixed5m": {"psql \\copy": [20.0, 18.0], "auto": [10.0, 10.0], L0: [9.0, 8.0],
                    "parallel-copy per-batch": [14.0, 12.0]},
    }
    lines = paired(results)
    assert "| narrow | auto against psql | 0.83, 1.20, 0.80 | 0.83 |" in lines
    assert "| narrow | Python floor against psql | 1.00, 1.20, 0.80 | 1.00 |" in lines
    assert "| mixed5m | auto against psql | 2.00, 1.80 | 1.90 |" in lines
    assert "| mixed5m | auto against L0 (its pace as a share of L0's) | 0.90, 0.80 | 0.85 |" in lines
    assert "| mixed5m | parallel-copy per-batch against psql | 1.43, 1.50 | 1.46 |" in lines
    assert not any("narrow | auto against L0" in line for line in lines)  # (the 1M shapes: against psql only)
    assert not any("mixed5m | Python floor" in line for line in lines)  # (no floor times: no line)


def test_the_floor_client_loads_a_binary_export_as_it_was(
    conn: psycopg.Connection[Any], dsn: str, table_name: Callable[[str], str], tmp_path: Path
) -> None:
    table = table_name("floor")
    ident = sql.Identifier(table)
    conn.execute(sql.SQL("CREATE TABLE {} (id bigint, name text, at timestamptz)").format(ident))
    conn.execute(sql.SQL("INSERT INTO {} SELECT i, 'n' || i, '2024-01-05 10:00+00'::timestamptz + i * interval '1 s' "
                         "FROM generate_series(1, 2000) i").format(ident))
    export = tmp_path / "rows.bin"
    with conn.cursor().copy(sql.SQL("COPY {} TO STDOUT (FORMAT binary)").format(ident)) as copy, \
            export.open("wb") as f:
        for block in copy:
            f.write(block)
    before = conn.execute(sql.SQL("SELECT * FROM {} ORDER BY id").format(ident)).fetchall()
    conn.execute(sql.SQL("TRUNCATE {}").format(ident))
    subprocess.run([sys.executable, "-m", "bench.floor_client", str(export), table, dsn], check=True,
                   cwd=Path(__file__).resolve().parents[1])
    assert conn.execute(sql.SQL("SELECT * FROM {} ORDER BY id").format(ident)).fetchall() == before
