"""copy-binary's warm start: the file's first records go as CSV while the encoder loads.

The split between the raw part and the binary part depends on timing; these tests fix it by
holding the encoder until a few raw chunks were written, with small chunks and no size
threshold, so a small file has both parts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from core.errors import BadRowError, LoadFailed
from core.load.job import LoadJob
from core.spec import LoadSpec, SourceOptions, TargetSpec
from core.strategies.copy import CopyBinary

DDL = "CREATE TABLE {} (id bigint, qty int, price float8, name text, flag bool, day date, ts timestamp)"
HEADER = "id,qty,price,name,flag,day,ts\n"


def _row(i: int) -> str:
    name = f'"a, ""quoted"" {i}\nsecond line"' if i % 7 == 0 else ("" if i % 11 == 0 else f"name {i}")
    price = "" if i % 13 == 0 else f"{i * 1.25:.2f}"
    return (f"{i},{i % 1000},{price},{name},{'true' if i % 2 else 'false'},"
            f"{2000 + i % 30}-0{1 + i % 9}-1{i % 10},2024-03-0{1 + i % 9} 1{i % 10}:0{i % 10}:00.{i % 1000:03d}\n")


_HELD: dict[str, threading.Event] = {}  # the held fixture's release, for a test that sends nothing raw


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """Warm start on any file, in 8 kB chunks, the encoder held until 3 raw chunks were written."""
    monkeypatch.setattr("core.load.warm_start.WARM_MIN_BYTES", 0)
    monkeypatch.setattr("core.sources.csv.source.WARM_CHUNK_BYTES", 8 << 10)
    monkeypatch.setattr("core.sources.pgtext.WARM_CHUNK_BYTES", 8 << 10)
    monkeypatch.setattr("core.load.warm_start.LOOKAHEAD_BYTES", 64 << 10)  # the reader leads by 8 chunks
    monkeypatch.setattr("core.strategies.copy.encoder_loaded", lambda: False)  # as in a new process
    counts = {"raw": 0, "binary": 0}
    three = _HELD["three"] = threading.Event()
    real_raw, real_prepared, real_build = CopyBinary.write_warm, CopyBinary.write_prepared, CopyBinary._build_encoder

    def write_raw(self: CopyBinary, data: bytes, records: int) -> None:
        real_raw(self, data, records)
        counts["raw"] += 1
        if counts["raw"] >= 3:
            three.set()
            self.ready.wait(10)  # the chunks read from now on are parsed

    def write_prepared(self: CopyBinary, prepared: object, frame: Any) -> int:
        counts["binary"] += 1
        return real_prepared(self, prepared, frame)

    def build(self: CopyBinary) -> None:
        three.wait(10)
        real_build(self)

    monkeypatch.setattr(CopyBinary, "write_warm", write_raw)
    monkeypatch.setattr(CopyBinary, "write_prepared", write_prepared)
    monkeypatch.setattr(CopyBinary, "_build_encoder", build)
    yield counts


def _file(tmp_path: Path, rows: int, bad: dict[int, str] | None = None) -> Path:
    lines = [_row(i) for i in range(rows)]
    for i, line in (bad or {}).items():
        lines[i] = line
    src = tmp_path / "warm.csv"
    src.write_text(HEADER + "".join(lines), encoding="utf-8")
    return src


def _table(conn: psycopg.Connection[Any], table_name: Callable[[str], str], prefix: str) -> str:
    name = table_name(prefix)
    conn.execute(sql.SQL(DDL).format(sql.Identifier(name)))
    return name


def _record_raw_writes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The record counts of the raw chunks copy-binary writes (none: every batch typed)."""
    raw: list[int] = []
    real = CopyBinary.write_warm

    def write_raw(self: CopyBinary, data: bytes, records: int) -> None:
        raw.append(records)
        real(self, data, records)

    monkeypatch.setattr(CopyBinary, "write_warm", write_raw)
    return raw


def _assert_same_rows(conn: psycopg.Connection[Any], one: str, other: str) -> None:
    a, b = sql.Identifier(one), sql.Identifier(other)
    for x, y in ((a, b), (b, a)):
        diff = conn.execute(sql.SQL("SELECT count(*) FROM (SELECT * FROM {} EXCEPT ALL SELECT * FROM {}) d")
                            .format(x, y)).fetchone()
        assert diff == (0,)


def _load(src: Path, table: str, dsn: str, strategy: str = "copy-binary", log: list[str] | None = None) -> Any:
    spec = LoadSpec(SourceOptions(str(src)), TargetSpec(table), strategy=strategy, batch_rows=500, dsn=dsn)
    return LoadJob(spec, on_log=(log.append if log is not None else None)).run()


def test_both_parts_store_what_copy_csv_stores(
    held: dict[str, int], dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    src = _file(tmp_path, 4000)
    warm, reference = _table(conn, table_name, "warm"), _table(conn, table_name, "ref")
    log: list[str] = []
    result = _load(src, warm, dsn, log=log)
    assert held["raw"] >= 3 and held["binary"] > 0  # both parts happened
    assert result.rows_read == result.rows_loaded == 4000
    assert any("warm start" in line for line in log), log
    _load(src, reference, dsn, strategy="copy-csv")
    _assert_same_rows(conn, warm, reference)
    a = sql.Identifier(warm)
    ids = conn.execute(sql.SQL("SELECT count(DISTINCT id), min(id), max(id) FROM {}").format(a)).fetchone()
    assert ids == (4000, 0, 3999)


def test_a_bad_value_after_the_switch_is_named_by_its_row(
    held: dict[str, int], dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    bad = 3500
    src = _file(tmp_path, 4000, {bad: f"{bad},4x,1.0,n,true,2020-01-01,2020-01-01 00:00:00\n"})
    table = _table(conn, table_name, "warm_bad")
    with pytest.raises(BadRowError) as err:
        _load(src, table, dsn)
    assert held["binary"] > 0
    problem = err.value.problem
    assert (problem.row, problem.column, problem.value) == (bad, "qty", "4x")
    # Rows with a quoted newline come before it: its line is the file's own.
    assert problem.line == src.read_text(encoding="utf-8").split("\n").index(
        f"{bad},4x,1.0,n,true,2020-01-01,2020-01-01 00:00:00") + 1
    assert conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone() == (0,)


def test_a_bad_value_in_the_raw_part_is_named_by_the_parser(
    held: dict[str, int], dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    src = _file(tmp_path, 4000, {5: "5,4x,1.0,n,true,2020-01-01,2020-01-01 00:00:00\n"})
    table = _table(conn, table_name, "warm_raw_bad")
    log: list[str] = []
    with pytest.raises(BadRowError) as err:
        _load(src, table, dsn, log=log)
    problem = err.value.problem
    assert (problem.row, problem.column, problem.value) == (5, "qty", "4x")
    assert problem.line == 8  # the header, then row 0 takes two lines (a quoted newline)
    assert any("through the parser" in line for line in log), log
    assert conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone() == (0,)


def test_a_bare_quote_turns_to_parsing_at_once(
    held: dict[str, int], dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """COPY would let a quote inside an unquoted field open a quoted value: never sent raw."""
    src = _file(tmp_path, 4000, {1: "1,1,1.0,37°36'37.8\"N,true,2020-01-01,2020-01-01 00:00:00\n"})
    table = _table(conn, table_name, "warm_quote")
    _HELD["three"].set()  # no raw chunk will come to release the encoder
    result = _load(src, table, dsn)
    assert result.rows_loaded == 4000
    assert held["raw"] == 0  # the first chunk holds the quote: parsed from the start
    got = conn.execute(sql.SQL("SELECT name FROM {} WHERE id = 1").format(sql.Identifier(table))).fetchone()
    assert got == ("37°36'37.8\"N",)


def test_an_encoder_that_fails_to_load_fails_the_load_and_leaves_nothing(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("core.load.warm_start.WARM_MIN_BYTES", 0)
    monkeypatch.setattr("core.sources.csv.source.WARM_CHUNK_BYTES", 8 << 10)
    monkeypatch.setattr("core.load.warm_start.LOOKAHEAD_BYTES", 64 << 10)  # the file needs the encoder
    monkeypatch.setattr("core.strategies.copy.encoder_loaded", lambda: False)

    def arrow_columns(*args: Any) -> None:
        raise LoadFailed("the encoder could not load")

    monkeypatch.setattr("core.strategies.copy.arrow_columns", arrow_columns)
    src = _file(tmp_path, 4000)
    table = _table(conn, table_name, "warm_fail")
    with pytest.raises(LoadFailed, match="could not load"):
        _load(src, table, dsn)
    assert [t.name for t in threading.enumerate() if t.name.startswith("sluice-")] == []
    assert conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone() == (0,)


def test_small_files_are_typed_from_the_first_row(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Under WARM_MIN_BYTES copy-binary sends every batch typed, as it always did."""
    raw = _record_raw_writes(monkeypatch)
    src = _file(tmp_path, 2000)
    table = _table(conn, table_name, "warm_small")
    assert _load(src, table, dsn).rows_loaded == 2000
    assert raw == []


def test_no_warm_start_once_the_libraries_are_loaded(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """In the window, or a second load in one process (the lab's runs), there is nothing to hide:
    a file the encoder takes in one unit goes typed whole. This test process has imported them all."""
    import pgpq  # noqa: F401
    import pyarrow  # noqa: F401

    monkeypatch.setattr("core.load.warm_start.WARM_MIN_BYTES", 0)
    monkeypatch.setattr("core.sources.csv.source.WARM_CHUNK_BYTES", 8 << 10)
    raw = _record_raw_writes(monkeypatch)
    src = _file(tmp_path, 4000)
    table = _table(conn, table_name, "warm_loaded")
    assert _load(src, table, dsn).rows_loaded == 4000
    assert raw == []


def test_a_sniffed_null_marker_means_the_same_in_both_parts(
    held: dict[str, int], dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """NA among numbers is NULL; NA in a column of free text (a country code) stays NA: the raw
    part's COPY options (NULL, FORCE_NOT_NULL) and the parser agree, row for row."""
    lines = [f"{i},{'NA' if i % 5 == 0 else i % 1000},{'NA' if i % 4 == 0 else f'{i}.5'},"
             f"{'NA' if i % 3 == 0 else 'FR'},true,2020-01-0{1 + i % 9},2020-01-01 00:00:0{i % 10}\n"
             for i in range(4000)]
    src = tmp_path / "na.csv"
    src.write_text(HEADER + "".join(lines), encoding="utf-8")
    warm, reference = _table(conn, table_name, "warm_na"), _table(conn, table_name, "ref_na")
    _load(src, warm, dsn)
    assert held["raw"] >= 3 and held["binary"] > 0
    _load(src, reference, dsn, strategy="copy-csv")
    _assert_same_rows(conn, warm, reference)
    a = sql.Identifier(warm)
    got = conn.execute(sql.SQL("SELECT count(*) FILTER (WHERE qty IS NULL), count(*) FILTER (WHERE name = 'NA'),"
                               " count(*) FILTER (WHERE name IS NULL) FROM {}").format(a)).fetchone()
    assert got == (800, 1334, 0)


def test_a_bad_value_early_in_a_large_file_as_a_user_runs_it(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """A whole command on a file over WARM_MIN_BYTES, in a new process where the encoder's
    libraries still load when the raw part is refused: the rerun through the parser names the
    row, with no traceback. (It met a half-imported polars there: found by a QA pass.)"""
    import subprocess
    import sys

    from core.load.warm_start import WARM_MIN_BYTES

    src = tmp_path / "big.csv"
    good = "".join(f"{i},{i % 1000},{i}.5,name {i},true,2021-01-0{1 + i % 9},2021-01-01 00:00:00\n"
                   for i in range(8, 100_000))
    with open(src, "w", encoding="utf-8") as f:
        f.write(HEADER + good[:good.index("\n") + 1] * 7)  # rows 0-6, then the bad one on line 9
        f.write("7,12x,1.0,n,true,2021-01-01,2021-01-01 00:00:00\n")
        while f.tell() < WARM_MIN_BYTES + (1 << 20):
            f.write(good)
    table = _table(conn, table_name, "warm_cli")
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-m", "app", "load", str(src), "--table", table, "--dsn", dsn,
                          "--strategy", "copy-binary"], cwd=root, capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    assert "Traceback" not in out.stderr, out.stderr[-2000:]
    assert "line 9, column 'qty', value '12x'" in out.stderr, out.stderr[-2000:]
    assert conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone() == (0,)


def test_raw_and_binary_take_turns_while_the_encoder_is_busy(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An encoder slower than the server: the chunks read while it works go as CSV, the next
    unit to it the moment it is idle, so the two alternate all through the file,
    sent in file order, and the table holds what copy-csv stores."""
    import pgpq  # noqa: F401 - the encoder ready from the first chunk, as in the window
    import pyarrow  # noqa: F401

    monkeypatch.setattr("core.load.warm_start.WARM_MIN_BYTES", 0)
    monkeypatch.setattr("core.load.warm_start.UNIT_BYTES", 16 << 10)
    monkeypatch.setattr("core.load.warm_start.LOOKAHEAD_BYTES", 160 << 10)  # two units and 16 chunks
    monkeypatch.setattr("core.sources.csv.source.WARM_CHUNK_BYTES", 4 << 10)
    writes: list[str] = []
    firsts: list[int] = []  # the first id of each write, in the order they were sent
    real_raw, real_prepared, real_prepare = CopyBinary.write_warm, CopyBinary.write_prepared, CopyBinary.prepare

    def write_raw(self: CopyBinary, data: bytes, records: int) -> None:
        writes.append("raw")
        firsts.append(int(data.split(b",", 1)[0]))
        real_raw(self, data, records)

    def write_prepared(self: CopyBinary, prepared: object, frame: Any) -> int:
        writes.append("binary")
        firsts.append(int(frame[0, "id"]))
        return real_prepared(self, prepared, frame)

    def slow_prepare(self: CopyBinary, frame: Any) -> object:
        threading.Event().wait(0.02)  # an encoder slower than the server's own CSV parsing
        return real_prepare(self, frame)

    monkeypatch.setattr(CopyBinary, "write_warm", write_raw)
    monkeypatch.setattr(CopyBinary, "write_prepared", write_prepared)
    monkeypatch.setattr(CopyBinary, "prepare", slow_prepare)
    src = _file(tmp_path, 6000)
    mixed, reference = _table(conn, table_name, "balanced"), _table(conn, table_name, "ref_bal")
    log: list[str] = []
    result = _load(src, mixed, dsn, log=log)
    assert result.rows_read == result.rows_loaded == 6000
    turns = sum(1 for a, b in zip(writes, writes[1:], strict=False) if a == "raw" and b == "binary")
    assert turns >= 3, writes  # not one switch: they took turns
    assert any("went as the file's own CSV" in line for line in log), log
    _load(src, reference, dsn, strategy="copy-csv")
    _assert_same_rows(conn, mixed, reference)
    assert firsts == sorted(firsts) and firsts[0] == 0  # sent in file order


def test_raw_chunks_stop_once_the_server_is_the_slower_side(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A server slower than the encoder: each unit is ready when the sender reaches it, so a raw
    chunk would only cost the server more than the unit it displaced. The raw allowance shrinks
    to nothing and the rest of the file goes typed (it used to fill the whole lookahead: 44% of
    a uuid-keyed file went as CSV)."""
    import pgpq  # noqa: F401 - the encoder ready from the first chunk
    import pyarrow  # noqa: F401

    monkeypatch.setattr("core.load.warm_start.WARM_MIN_BYTES", 0)
    monkeypatch.setattr("core.load.warm_start.UNIT_BYTES", 16 << 10)
    monkeypatch.setattr("core.load.warm_start.LOOKAHEAD_BYTES", 160 << 10)
    monkeypatch.setattr("core.load.warm_start.RAW_AHEAD", 8 << 10)  # two chunks
    monkeypatch.setattr("core.sources.csv.source.WARM_CHUNK_BYTES", 4 << 10)
    writes: list[str] = []
    real_raw, real_prepared = CopyBinary.write_warm, CopyBinary.write_prepared

    def slow_raw(self: CopyBinary, data: bytes, records: int) -> None:
        writes.append("raw")
        threading.Event().wait(0.01)  # the server's pace
        real_raw(self, data, records)

    def slow_prepared(self: CopyBinary, prepared: object, frame: Any) -> int:
        writes.append("binary")
        threading.Event().wait(0.01)
        return real_prepared(self, prepared, frame)

    monkeypatch.setattr(CopyBinary, "write_warm", slow_raw)
    monkeypatch.setattr(CopyBinary, "write_prepared", slow_prepared)
    src = _file(tmp_path, 6000)
    typed, reference = _table(conn, table_name, "typed"), _table(conn, table_name, "ref_typed")
    result = _load(src, typed, dsn)
    assert result.rows_read == result.rows_loaded == 6000
    assert writes.count("binary") > 10 and "raw" not in writes[len(writes) // 3:], writes
    _load(src, reference, dsn, strategy="copy-csv")
    _assert_same_rows(conn, typed, reference)

def test_a_bad_value_in_a_late_raw_chunk_is_named_by_its_row(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Raw and binary parts alternate; a value the server refuses in a raw chunk far into the
    file sends the load through the parser, which names its row and line; nothing stays."""
    import pgpq  # noqa: F401 - the encoder ready from the first chunk, as in the window
    import pyarrow  # noqa: F401

    monkeypatch.setattr("core.load.warm_start.WARM_MIN_BYTES", 0)
    monkeypatch.setattr("core.load.warm_start.UNIT_BYTES", 16 << 10)
    monkeypatch.setattr("core.load.warm_start.LOOKAHEAD_BYTES", 160 << 10)  # two units and 16 chunks
    monkeypatch.setattr("core.sources.csv.source.WARM_CHUNK_BYTES", 4 << 10)
    real_prepare = CopyBinary.prepare

    def slow_prepare(self: CopyBinary, frame: Any) -> object:
        threading.Event().wait(0.02)
        return real_prepare(self, frame)

    monkeypatch.setattr(CopyBinary, "prepare", slow_prepare)
    bad = 5000
    line_text = f"{bad},4x,1.0,n,true,2020-01-01,2020-01-01 00:00:00"
    src = _file(tmp_path, 6000, {bad: line_text + "\n"})
    table = _table(conn, table_name, "bal_bad")
    log: list[str] = []
    with pytest.raises(BadRowError) as err:
        _load(src, table, dsn, log=log)
    assert any("through the parser" in line for line in log), log  # the server refused a raw chunk
    problem = err.value.problem
    assert (problem.row, problem.column, problem.value) == (bad, "qty", "4x")
    assert problem.line == src.read_text(encoding="utf-8").split("\n").index(line_text) + 1
    assert conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone() == (0,)


def _text_export(conn: psycopg.Connection[Any], table: str, path: Path) -> Path:
    """What `\\copy table to path` writes: PostgreSQL's own text format."""
    out = bytearray()
    with conn.cursor() as cur, cur.copy(sql.SQL("COPY {} TO STDOUT").format(sql.Identifier(table))) as copy:
        for data in copy:
            out += data
    path.write_bytes(bytes(out))
    return path


def test_a_text_format_export_takes_both_parts(
    held: dict[str, int], dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """PostgreSQL's own text export (escaped newlines, \\N, timestamps without trailing zeros): its
    first lines go to COPY's text format, the rest typed, and the table holds what it held."""
    reference = _table(conn, table_name, "ref_text")
    _load(_file(tmp_path, 4000), reference, dsn, strategy="copy-csv")
    export = _text_export(conn, reference, tmp_path / "export.txt")
    assert b"\\n" in export.read_bytes() and b"\\N" in export.read_bytes()
    warm = _table(conn, table_name, "warm_text")
    log: list[str] = []
    result = _load(export, warm, dsn, log=log)
    assert held["raw"] >= 3 and held["binary"] > 0  # both parts happened
    assert result.rows_read == result.rows_loaded == 4000
    assert any("went as the file's own text" in line for line in log), log
    _assert_same_rows(conn, warm, reference)


def test_a_bad_value_in_a_text_export_after_the_switch_is_named_by_its_row(
    held: dict[str, int], dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """A value the client cannot type, far into the file (in the typed part): its row, line,
    column and value, and nothing stays; a record continued by an escaped newline before it
    counts as one row over two lines."""
    rows = [f"{i}\t{i % 1000}\t{i}.5\tname {i}\tt\t2020-01-01\t2020-01-01 00:00:00\n" for i in range(4000)]
    rows[3000] = "3000\t1\t1.5\tline one\\\nline two\tt\t2020-01-01\t2020-01-01 00:00:00\n"
    rows[3500] = "3500\t4x\t1.5\tn\tt\t2020-01-01\t2020-01-01 00:00:00\n"
    rows[1] = "1\t1\t\\N\tname 1\tt\t2020-01-01\t2020-01-01 00:00:00\n"  # (\\N: what shows the format)
    src = tmp_path / "bad_export.txt"
    src.write_text("".join(rows), encoding="utf-8")
    table = _table(conn, table_name, "warm_text_bad")
    with pytest.raises(BadRowError) as err:
        _load(src, table, dsn)
    assert held["binary"] > 0
    problem = err.value.problem
    assert (problem.row, problem.column, problem.value, problem.line) == (3500, "qty", "4x", 3502)
    assert conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone() == (0,)
