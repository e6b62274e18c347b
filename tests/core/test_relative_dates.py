"""Relative date words are bad values in every strategy: `yesterday` in a date column was stored
as the day before the load. `epoch` and `±infinity` are fixed values and load; a word in a text
column is text."""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from core.errors import SluiceError
from core.load.job import LoadJob
from core.spec import CommitMode, ErrorPolicy, LoadMode, LoadSpec, SourceOptions, TargetSpec

STRATEGIES = ["connection-per-row", "row-autocommit", "row-transaction", "executemany", "pipeline",
              "multirow-values", "unnest", "copy-text", "copy-csv", "copy-binary", "parallel-copy", "auto"]

BODY = ("id,d,ts,note\n"
        "1,2024-01-05,2024-01-05 10:00,now we go\n"
        "2,yesterday,2024-01-06 10:00,x\n"
        "3,2024-01-07,Today 10:00,y\n"
        "4,epoch,infinity,z\n"
        "5,2024-01-09,-infinity,Today\n"
        "6,2024-01-10,now,w\n")


@pytest.fixture
def dated(conn: psycopg.Connection[Any], table_name: Callable[[str], str]) -> str:
    table = table_name("dated")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, d date, ts timestamp, note text)").format(sql.Identifier(table)))
    return table


def _spec(path: Path, table: str, dsn: str, strategy: str, policy: ErrorPolicy, **kw: Any) -> LoadSpec:
    return LoadSpec(SourceOptions(str(path)), TargetSpec(table, mode=LoadMode.APPEND), strategy=strategy, dsn=dsn,
                    on_error=policy, workers=2, reject_file=str(path.with_suffix(".rejects.csv")), **kw)


def _rows(conn: psycopg.Connection[Any], table: str) -> list[tuple[Any, ...]]:
    return conn.execute(sql.SQL("SELECT id, d::text, ts::text, note FROM {} ORDER BY id").format(
        sql.Identifier(table))).fetchall()


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_abort_stops_at_the_first_relative_date(
    strategy: str, dsn: str, conn: psycopg.Connection[Any], dated: str, tmp_path: Path
) -> None:
    path = tmp_path / "dates.csv"
    path.write_text(BODY, encoding="utf-8")
    with pytest.raises(SluiceError) as raised:
        LoadJob(_spec(path, dated, dsn, strategy, ErrorPolicy.ABORT)).run()
    message = str(raised.value)
    assert "line 3" in message and "'yesterday'" in message and "relative date" in message, message
    assert raised.value.exit_code == 1  # a bad row, not an unreadable file
    assert _rows(conn, dated) == []


@pytest.mark.parametrize("strategy", [s for s in STRATEGIES if s != "parallel-copy"] + ["parallel-copy/per-batch"])
def test_skip_rejects_each_relative_date_and_loads_the_rest(
    strategy: str, dsn: str, conn: psycopg.Connection[Any], dated: str, tmp_path: Path
) -> None:
    path = tmp_path / "dates.csv"
    path.write_text(BODY, encoding="utf-8")
    strategy, _, commit = strategy.partition("/")
    spec = _spec(path, dated, dsn, strategy, ErrorPolicy.SKIP, commit=CommitMode(commit or "single"))
    result = LoadJob(spec).run()
    assert (result.rows_read, result.rows_loaded, result.rows_rejected) == (6, 3, 3)
    assert _rows(conn, dated) == [
        (1, "2024-01-05", "2024-01-05 10:00:00", "now we go"),
        (4, "1970-01-01", "infinity", "z"),
        (5, "2024-01-09", "-infinity", "Today"),
    ]
    assert result.reject_file is not None
    with open(result.reject_file, newline="", encoding="utf-8") as f:
        rejects = list(csv.DictReader(f))
    assert [(r["line"], r["row"], r["column"], r["value"]) for r in rejects] == [
        ("3", "2", "d", "yesterday"), ("4", "3", "ts", "Today 10:00"), ("7", "6", "ts", "now")]
    assert all(r["reason"].startswith("a relative date word") for r in rejects)
    assert rejects[0]["record"] == "2,yesterday,2024-01-06 10:00,x"


@pytest.mark.parametrize("fmt", ["parquet", "excel", "json"])
def test_typed_formats_refuse_them_too(
    fmt: str, dsn: str, conn: psycopg.Connection[Any], dated: str, tmp_path: Path
) -> None:
    import polars as pl

    df = pl.DataFrame({"id": [1, 2], "d": ["2024-01-05", "tomorrow"], "ts": ["2024-01-05 10:00", None],
                       "note": ["a", "b"]})
    path = tmp_path / f"dates.{ {'excel': 'xlsx'}.get(fmt, fmt)}"
    {"parquet": df.write_parquet, "excel": df.write_excel, "json": df.write_json}[fmt](path)
    result = LoadJob(_spec(path, dated, dsn, "copy-binary", ErrorPolicy.SKIP)).run()
    assert (result.rows_loaded, result.rows_rejected) == (1, 1)
    assert _rows(conn, dated) == [(1, "2024-01-05", "2024-01-05 10:00:00", "a")]


def test_a_word_in_a_text_column_keeps_the_raw_path(
    dsn: str, conn: psycopg.Connection[Any], dated: str, tmp_path: Path
) -> None:
    """Free text saying "now" beside a date column: the file's own bytes still go to COPY."""
    path = tmp_path / "notes.csv"
    path.write_text("id,d,ts,note\n" + "".join(f"{i},2024-01-05,2024-01-05 10:00,do it now {i}\n"
                                               for i in range(1000)), encoding="utf-8")
    log: list[str] = []
    result = LoadJob(_spec(path, dated, dsn, "copy-csv", ErrorPolicy.ABORT), on_log=log.append).run()
    assert result.rows_loaded == 1000
    assert not [m for m in log if "parser instead" in m], log


@pytest.mark.parametrize("at", [3, 4000])
def test_copy_binary_warm_start_refuses_them(
    at: int, dsn: str, conn: psycopg.Connection[Any], dated: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The warm start sends the file's first records raw: a chunk holding the word is parsed instead."""
    monkeypatch.setattr("core.load.warm_start.WARM_MIN_BYTES", 0)
    monkeypatch.setattr("core.sources.csv.source.WARM_CHUNK_BYTES", 8 << 10)
    monkeypatch.setattr("core.strategies.copy.encoder_loaded", lambda: False)  # as in a new process
    path = tmp_path / "warm.csv"
    path.write_text("id,d,ts,note\n" + "".join(
        f"{i},{'tomorrow' if i == at else '2024-01-05'},2024-01-05 10:00,now {i}\n" for i in range(6000)),
        encoding="utf-8")
    with pytest.raises(SluiceError) as raised:
        LoadJob(_spec(path, dated, dsn, "copy-binary", ErrorPolicy.ABORT)).run()
    assert f"line {at + 2}" in str(raised.value) and "'tomorrow'" in str(raised.value)
    assert _rows(conn, dated) == []


def test_the_preview_warns_of_impossible_and_relative_dates() -> None:
    import polars as pl

    from core.preview import sample_warnings
    from core.spec import ColumnMap

    sample = pl.DataFrame({"d": ["2024-01-05", "2024-02-30", "yesterday", "epoch", "-infinity", None],
                           "ts": ["2024-01-05 10:00", "today 10:00", "infinity", None, None, None]})
    notes = sample_warnings(sample, [ColumnMap("d", "d", "date"), ColumnMap("ts", "ts", "timestamp")])
    assert notes[0].startswith("2 of 6 sample rows not date: ") and "'2024-02-30'" in notes[0]
    assert "'yesterday'" in notes[0] and "relative date words are refused" in notes[0]
    assert "'epoch'" not in notes[0] and "infinity" not in notes[0]
    assert notes[1].startswith("1 of 6 sample rows not timestamp: 'today 10:00'")


@pytest.mark.parametrize(("values", "says"), [
    (["2024-01-05", "2024-02-30", "2024-01-07"], "'2024-02-30' made it text; the other 2 sample values are dates"),
    (["1", "2", "x9", "4"], "'x9' made it text; the other 3 sample values are integers"),
    (["2024-01-05 10:00", "yesterday", "2024-01-06 10:00"], "'yesterday' made it text (relative date words"),
    (["007", "12", "13"], "'007' made it text: leading zeros would be lost as a number"),
])
def test_the_warning_says_which_value_made_a_column_text(values: list[str], says: str) -> None:
    import polars as pl

    from core.mapping import suggested_type
    from core.preview import sample_warnings
    from core.spec import ColumnMap

    sample = pl.DataFrame({"c": values})
    assert suggested_type(sample["c"]) == "text"
    assert sample_warnings(sample, [ColumnMap("c", "c", "text")])[0].startswith(says)


def test_epoch_and_infinity_keep_a_date_column_a_date() -> None:
    import polars as pl

    from core.mapping import suggested_type

    assert suggested_type(pl.Series(["2024-01-05", "epoch", "infinity", "-infinity"])) == "date"
    assert suggested_type(pl.Series(["2024-01-05 10:00:00+02", "infinity"])) == "timestamptz"
    assert suggested_type(pl.Series(["2024-01-05", "2024-02-30"])) == "text"


@pytest.mark.parametrize("strategy", ["auto", "copy-csv", "script-transaction"])
def test_a_sql_script_spelling_one_is_refused(
    strategy: str, dsn: str, conn: psycopg.Connection[Any], dated: str, tmp_path: Path
) -> None:
    """A script's single table went to COPY as the script spelled its values, 'yesterday' included."""
    path = tmp_path / "dates.sql"
    path.write_text(f"INSERT INTO {dated} VALUES (1, '2024-01-05', '2024-01-05 10:00', 'a');\n"
                    f"INSERT INTO {dated} VALUES (2, 'Yesterday', '2024-01-05 10:00', 'b');\n", encoding="utf-8")
    with pytest.raises(SluiceError) as raised:
        LoadJob(_spec(path, dated, dsn, strategy, ErrorPolicy.ABORT)).run()
    assert "line 2" in str(raised.value) and "'Yesterday'" in str(raised.value)
    assert _rows(conn, dated) == []


@pytest.fixture
def two_tables(conn: psycopg.Connection[Any], table_name: Callable[[str], str]) -> tuple[str, str]:
    a, b = table_name("visits"), table_name("notes")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, d date)").format(sql.Identifier(a)))
    conn.execute(sql.SQL("CREATE TABLE {} (id int, note text)").format(sql.Identifier(b)))
    return a, b


@pytest.mark.parametrize("form", ["insert", "multirow", "copy"])
def test_a_script_of_several_tables_refuses_them(
    form: str, dsn: str, conn: psycopg.Connection[Any], two_tables: tuple[str, str], tmp_path: Path
) -> None:
    """The tables of a script load together through their own COPY path: a relative date in a date
    column stops it at its line; the same word in a text column is text."""
    a, b = two_tables
    rows = {
        "insert": f"INSERT INTO {a} VALUES (1, '2024-01-05');\nINSERT INTO {a} VALUES (2, 'Tomorrow');\n",
        "multirow": f"INSERT INTO {a} VALUES (1, '2024-01-05'),\n(2, 'Tomorrow');\n",
        "copy": f"COPY {a} (id, d) FROM stdin;\n1\t2024-01-05\n2\tTomorrow\n\\.\n",
    }[form]
    path = tmp_path / "two.sql"
    path.write_text(f"INSERT INTO {b} VALUES (1, 'see you tomorrow');\n" + rows, encoding="utf-8")
    spec = LoadSpec(SourceOptions(str(path)), TargetSpec("", mode=LoadMode.APPEND), strategy="auto", dsn=dsn)
    with pytest.raises(SluiceError) as raised:
        LoadJob(spec).run()
    line = {"insert": 3, "multirow": 2, "copy": 4}[form]  # a multi-row INSERT's rows: its statement's line
    assert f"line {line}:" in str(raised.value) and "'Tomorrow'" in str(raised.value), str(raised.value)
    assert raised.value.exit_code == 1
    assert _rows_of(conn, a) == [] and _rows_of(conn, b) == []
    # Without it, both tables load (the word in the text column included).
    path.write_text(f"INSERT INTO {b} VALUES (1, 'see you tomorrow');\n" + rows.replace("Tomorrow", "2024-01-06"),
                    encoding="utf-8")
    assert LoadJob(spec).run().rows_loaded == 3
    assert _rows_of(conn, b) == [(1, "see you tomorrow")]


def _rows_of(conn: psycopg.Connection[Any], table: str) -> list[tuple[Any, ...]]:
    return conn.execute(sql.SQL("SELECT * FROM {} ORDER BY 1").format(sql.Identifier(table))).fetchall()


@pytest.mark.parametrize("fmt", ["csv", "pgtext"])
@pytest.mark.parametrize("as_units", [True, False])
def test_the_warm_reader_refuses_them_in_units_and_in_raw_chunks(as_units: bool, fmt: str, tmp_path: Path) -> None:
    """Whichever way the warm start's reader sends a chunk, the word is refused at its line:
    a unit through the parser (its chunks are not scanned), a raw chunk by the scan, then parsed.
    PostgreSQL's text format (its export, a `\\N` showing it) as well as CSV."""
    from core.errors import RefusedValue
    from core.relative_dates import RelativeDates
    from core.sources.base import ParseLater
    from core.sources.factory import open_source

    sep = "," if fmt == "csv" else "\t"
    path = tmp_path / ("warm.csv" if fmt == "csv" else "warm.txt")
    path.write_text(sep.join(["id", "d", "note"]) + "\n" + "".join(
        sep.join([str(i), "Yesterday" if i == 4500 else "2024-01-05", "\\N" if i == 1 else f"now {i}"]) + "\n"
        for i in range(6000)), encoding="utf-8")
    source = open_source(SourceOptions(path=str(path)))
    assert source.format == fmt
    source.refuse = RelativeDates((("d", "d"),))

    def read_all() -> None:
        for item in source.raw_or_parsed(lambda: as_units, 1000, unit_bytes=16 << 10, raw_bytes=8 << 10):
            if isinstance(item, ParseLater):
                source.parse_later(item, 1000)

    with pytest.raises(RefusedValue) as raised:
        read_all()
    assert raised.value.line == 4502 and "'Yesterday'" in str(raised.value)


def test_a_raw_load_scans_without_importing_polars(monkeypatch: pytest.MonkeyPatch) -> None:
    """Below POLARS_SCAN_MIN_FILE, a raw chunk of MBs is scanned in Python (polars' import cost a
    34 MB copy-csv load 0.25 CPU-s beside the server), a word cut by a piece's end included."""
    from core import relative_dates as rd

    class NoPolars:
        def __getattr__(self, name: str) -> Any:
            raise AssertionError(f"polars.{name} used")

    monkeypatch.setattr(rd, "pl", NoPolars())
    monkeypatch.setattr(rd, "_polars_ready", False)
    line = b"1,2024-01-05,some text\n"
    data = line * ((3 << 20) // len(line))
    assert not rd.RelativeDates.may_hold(data, import_polars=False)
    cut = rd.SMALL_BYTES - 3  # "tomorrow" across the first piece's end
    assert rd.RelativeDates.may_hold(data[:cut] + b"tomorrow" + data[cut:], import_polars=False)
    assert rd.RelativeDates.may_hold(data + b"2,Today,x\n", import_polars=False)
    asked: list[bool] = []
    monkeypatch.setattr(rd, "_import_in_background", lambda: asked.append(True))
    # A large file's scan does not wait for polars: Python's scan answers while it is imported.
    assert not rd.RelativeDates.may_hold(data, import_polars=True) and asked == [True]
    monkeypatch.setattr(rd, "_polars_ready", True)
    with pytest.raises(AssertionError, match="polars"):
        rd.RelativeDates.may_hold(data, import_polars=True)  # (once it is whole, polars scans)


def test_the_background_import_says_when_polars_is_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    from core import relative_dates as rd

    monkeypatch.setattr(rd, "_polars_ready", False)
    monkeypatch.setattr(rd, "_importing", None)
    rd._import_in_background()
    rd._import_in_background()  # (once)
    thread = rd._importing
    assert thread is not None
    thread.join(10)
    assert rd._polars_ready and rd._importing is thread


def test_a_scripts_scan_finds_a_word_across_its_blocks(tmp_path: Path) -> None:
    from core.relative_dates import RelativeDates

    path = tmp_path / "s.sql"
    path.write_bytes(b"x" * 13 + b"YesterDay" + b"x" * 20)
    assert all(RelativeDates.file_may_hold(path, block=b) for b in (4, 16, 17, 20, 1 << 20))
    path.write_bytes(b"known" * 10)  # (a word inside another counts: the parse that follows is exact)
    assert RelativeDates.file_may_hold(path, block=7)
    path.write_bytes(b"no such word here " * 10)
    assert not RelativeDates.file_may_hold(path, block=5)


@pytest.mark.parametrize("fmt", ["csv", "pgtext"])
@pytest.mark.parametrize("bad", ["", "after", "before"])
def test_an_unguarded_unit_leaves_the_words_to_its_caller(fmt: str, bad: str, tmp_path: Path) -> None:
    """parse_later(guarded=False), as the warm start's encoder asks, does not look for the words
    (a batch typed exactly holds none; the encoder looks in a batch that goes as text). A batch
    holding a malformed record still names the first bad record in file order (CSV; PostgreSQL's
    text format names a malformed record first, guarded or not)."""
    from core.errors import RefusedValue, SourceError
    from core.relative_dates import RelativeDates
    from core.sources.base import ParseLater
    from core.sources.factory import open_source

    sep = "," if fmt == "csv" else "\t"
    lines = [sep.join([str(i), "Yesterday" if i == 4500 else "2024-01-05", "\\N" if i == 1 else f"note {i}"])
             for i in range(6000)]  # (a \N tells PostgreSQL's text format)
    if bad:
        lines[4510 if bad == "after" else 4490] = "short"
    path = tmp_path / ("warm.csv" if fmt == "csv" else "warm.txt")
    path.write_text(sep.join(["id", "d", "note"]) + "\n" + "\n".join(lines) + "\n", encoding="utf-8")
    source = open_source(SourceOptions(path=str(path)))
    assert source.format == fmt
    source.refuse = RelativeDates((("d", "d"),))

    def read_all() -> int:
        rows = 0
        for item in source.raw_or_parsed(lambda: True, 1000, unit_bytes=64 << 10, raw_bytes=8 << 10):
            assert isinstance(item, ParseLater)
            rows += sum(b.frame.height for b in source.parse_later(item, 1000, guarded=False))
        return rows

    if not bad:
        assert read_all() == 6000
        return
    with pytest.raises(SourceError) as raised:
        read_all()
    if bad == "after" and fmt == "csv":
        assert isinstance(raised.value, RefusedValue) and raised.value.line == 4502, raised.value
    else:
        assert not isinstance(raised.value, RefusedValue) and raised.value.line == (4512 if bad == "after" else 4492)


@pytest.mark.parametrize("at", [None, 4000])
def test_the_warm_encoder_looks_only_at_batches_that_go_as_text(
    at: int | None, dsn: str, conn: psycopg.Connection[Any], dated: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every unit left to the encoder: a batch typed exactly is not looked at again; the one
    holding the word cannot be typed, is looked at, and the word is named at its line."""
    from core.relative_dates import RelativeDates

    monkeypatch.setattr("core.load.warm_start.WARM_MIN_BYTES", 0)
    monkeypatch.setattr("core.sources.csv.source.WARM_CHUNK_BYTES", 8 << 10)
    monkeypatch.setattr("core.load.warm_start._Flow.decide", lambda self, ready: True)
    looked: list[int] = []
    check = RelativeDates.check

    def counted(self: RelativeDates, source: Any, batch: Any) -> None:
        looked.append(batch.first_row)
        check(self, source, batch)

    monkeypatch.setattr(RelativeDates, "check", counted)
    path = tmp_path / "warm.csv"
    path.write_text("id,d,ts,note\n" + "".join(
        f"{i},{'tomorrow' if i == at else '2024-01-05'},2024-01-05 10:00:00,now {i}\n" for i in range(6000)),
        encoding="utf-8")
    spec = _spec(path, dated, dsn, "copy-binary", ErrorPolicy.ABORT, batch_rows=500)
    if at is None:
        assert LoadJob(spec).run().rows_loaded == 6000
        assert looked == []
        return
    with pytest.raises(SluiceError) as raised:
        LoadJob(spec).run()
    assert f"line {at + 2}" in str(raised.value) and "'tomorrow'" in str(raised.value)
    assert looked == [at - at % 500] and _rows(conn, dated) == []
