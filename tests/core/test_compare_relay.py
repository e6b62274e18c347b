"""The latency relay and the compare lab, against a real server."""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from app.cli import main
from core.lab.compare import CompareSpec, run_compare
from core.lab.relay import LatencyRelay, relay_dsn, upstream_of
from core.spec import LoadSpec, SourceOptions, TargetSpec


def test_relay_adds_the_round_trip_and_passes_bytes_unchanged(dsn: str) -> None:
    host, port, unix = upstream_of(dsn)
    before = threading.active_count()
    with LatencyRelay(upstream_host=host, upstream_port=port, upstream_unix=unix, rtt_ms=40) as relay:
        with psycopg.connect(relay_dsn(dsn, relay), autocommit=True) as c:
            t = time.perf_counter()
            c.execute("SELECT 1").fetchone()
            assert time.perf_counter() - t >= 0.040
            payload = os.urandom(3_000_000).hex()  # ~6 MB through COPY, up and back down
            c.execute("CREATE TEMP TABLE blob (s text)")
            with c.cursor().copy("COPY blob FROM STDIN") as cp:
                for i in range(0, len(payload), 100_000):
                    cp.write_row((payload[i:i + 100_000],))
            row = c.execute("SELECT string_agg(s, '' ORDER BY ctid) FROM blob").fetchone()
            assert row is not None
            assert hashlib.sha256(row[0].encode()).digest() == hashlib.sha256(payload.encode()).digest()
        assert relay.bytes_up > 6_000_000 and relay.bytes_down > 6_000_000
    assert threading.active_count() == before


def test_compare_three_strategies_leaves_target_untouched(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    src = tmp_path / "c.csv"
    src.write_text("id,name\n" + "".join(f"{i},n{i}\n" for i in range(3000)), encoding="utf-8")
    table = table_name("cmp")
    conn.execute(sql.SQL("CREATE TABLE {} (id int primary key, name text)").format(sql.Identifier(table)))
    conn.execute(sql.SQL("INSERT INTO {} VALUES (-1, 'keep')").format(sql.Identifier(table)))
    base = LoadSpec(SourceOptions(str(src)), TargetSpec(table), dsn=dsn)
    spec = CompareSpec(base, ["row-transaction", "unnest", "copy-csv"], batch_rows=[100, 1000], repeat=2,
                       sample_rows=2500)
    report = run_compare(spec)
    assert len(report.results) == 5  # row-transaction has no batch size: it runs once
    for r in report.results:
        assert r.error is None and len(r.runs) == 2 and r.rows == 2500
        assert 0 < r.ratio_to_fastest <= 1
    assert sum(r.ratio_to_fastest == 1.0 for r in report.results) == 1
    assert conn.execute(sql.SQL("SELECT id, name FROM {}").format(sql.Identifier(table))).fetchall() == [(-1, "keep")]
    assert conn.execute("SELECT count(*) FROM pg_class WHERE relname LIKE '\\_sluice\\_cmp\\_%'").fetchone() == (0,)


def test_compare_over_simulated_network_and_cli_json(
    dsn: str, table_name: Callable[[str], str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "n.csv"
    src.write_text("id\n" + "".join(f"{i}\n" for i in range(200)), encoding="utf-8")
    code = main(["compare", str(src), "--table", table_name("net"), "--dsn", dsn, "--strategies",
                 "row-transaction,copy-csv", "--repeat", "1", "--rtt-ms", "10", "--json"])
    assert code == 0
    import json

    got = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    rates = {r["strategy"]: r["median_rows_per_s"] for r in got["results"]}
    assert set(got["results"][0]) >= {"median_rows_per_s", "min_rows_per_s", "max_rows_per_s", "runs", "rows"}
    # 200 round trips of >= 10 ms each vs a handful: row by row must be far slower.
    assert rates["row-transaction"] * 3 < rates["copy-csv"]
    assert rates["row-transaction"] < 100


def test_budget_fit_separates_a_runs_fixed_cost_from_its_rows() -> None:
    from core.lab.compare import _estimate

    # Over a 320 ms link both probes cost ~3.9 s of connecting and planning: 500 rows fit a
    # 40 s budget (one probe alone would charge 0.19 s to every row: 97 s).
    assert _estimate([(20, 3.879)], 500) > 40
    assert _estimate([(20, 3.879), (51, 3.878)], 500) < 10
    # A real cost per row is kept: 1 s fixed + 10 ms per row.
    assert _estimate([(20, 1.2), (2000, 21.0)], 10_000) == pytest.approx(101.0)
