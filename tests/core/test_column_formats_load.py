"""Value formats in loads: generated spreadsheet files into new and existing tables by several
strategies, the user's formats laid over the inferred ones, and a value that does not fit as a
bad row (abort: named; skip: rejected with line, column, value and the format)."""

from __future__ import annotations

import csv
import datetime as dt
import random
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from core import profile
from core.errors import ConfigError, SourceError
from core.load.job import LoadJob
from core.spec import ColumnMap, ErrorPolicy, LoadMode, LoadSpec, SourceOptions, TargetSpec


def _rows(n: int, seed: int) -> list[tuple[int, dt.date, dt.datetime, Decimal, str]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        day = dt.date(1990, 1, 1) + dt.timedelta(days=rng.randrange(12_000))
        stamp = dt.datetime(2020, 1, 1) + dt.timedelta(minutes=rng.randrange(3_000_000))
        amount = Decimal(rng.randrange(-10**8, 10**8)) / 100
        out.append((i, day, stamp, amount, f"{rng.randrange(1000):04d}"))
    out.append((n, dt.date(2024, 1, 31), dt.datetime(2024, 1, 31, 0, 5), Decimal("1234567.50"), "0007"))
    return out


def _us_file(path: Path, rows: list[tuple[int, dt.date, dt.datetime, Decimal, str]]) -> Path:
    """Excel's US CSV: M/D/YYYY, 12-hour clock, quoted 1,234.50, leading-zero codes."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["id", "order_date", "placed", "amount", "code"])
        for i, day, stamp, amount, code in rows:
            w.writerow([i, f"{day.month}/{day.day}/{day.year}", stamp.strftime("%m/%d/%Y %I:%M %p"),
                        f"{amount:,.2f}", code])
    return path


def _eu_file(path: Path, rows: list[tuple[int, dt.date, dt.datetime, Decimal, str]]) -> Path:
    """A German export: `;`, DD.MM.YYYY, 24-hour clock, 1.234,50."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, delimiter=";")
        w.writerow(["id", "order_date", "placed", "amount", "code"])
        for i, day, stamp, amount, code in rows:
            spelled = f"{amount:,.2f}".replace(",", "_").replace(".", ",").replace("_", ".")
            w.writerow([i, day.strftime("%d.%m.%Y"), stamp.strftime("%d.%m.%Y %H:%M"), spelled, code])
    return path


def _table(conn: psycopg.Connection[Any], table: str) -> list[tuple[Any, ...]]:
    return conn.execute(sql.SQL("SELECT id, order_date, placed, amount, code FROM {} ORDER BY id").format(
        sql.Identifier(table))).fetchall()


def _types(conn: psycopg.Connection[Any], table: str) -> dict[str, str]:
    rows = conn.execute("SELECT column_name, data_type FROM information_schema.columns WHERE table_name = %s",
                        (table,)).fetchall()
    return {r[0]: r[1] for r in rows}


@pytest.mark.parametrize("strategy", ["auto", "copy-csv", "copy-binary", "pipeline", "unnest"])
@pytest.mark.parametrize("kind", ["us", "eu"])
def test_a_spreadsheet_file_makes_a_typed_table(
    strategy: str, kind: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str],
    tmp_path: Path,
) -> None:
    rows = _rows(400, seed=len(strategy) + len(kind))
    path = (_us_file if kind == "us" else _eu_file)(tmp_path / f"{kind}.csv", rows)
    table = table_name("fmt")
    spec = LoadSpec(SourceOptions(str(path)), TargetSpec(table, mode=LoadMode.CREATE), strategy=strategy, dsn=dsn)
    result = LoadJob(spec).run()
    assert (result.rows_read, result.rows_loaded) == (len(rows), len(rows))
    assert _types(conn, table) == {"id": "integer", "order_date": "date", "placed": "timestamp without time zone",
                                   "amount": "numeric", "code": "text"}
    assert _table(conn, table) == [(i, d, s.replace(second=0), a.quantize(Decimal("0.01")), c)
                                   for i, d, s, a, c in rows]


@pytest.mark.parametrize("strategy", ["auto", "copy-csv", "copy-binary", "parallel-copy"])
def test_an_existing_tables_dates_and_numbers_fed_as_a_spreadsheet_writes_them(
    strategy: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
) -> None:
    rows = _rows(300, seed=5)
    path = _eu_file(tmp_path / "eu.csv", rows)
    table = table_name("fmt")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, order_date date, placed timestamp, amount numeric(12,2), "
                         "code text)").format(sql.Identifier(table)))
    spec = LoadSpec(SourceOptions(str(path)), TargetSpec(table), strategy=strategy, dsn=dsn)
    job = LoadJob(spec)
    assert job.run().rows_loaded == len(rows)
    assert _table(conn, table) == [(i, d, s.replace(second=0), a, c) for i, d, s, a, c in rows]


def test_a_file_without_such_columns_keeps_the_raw_path(
    dsn: str, table_name: Callable[[str], str], tmp_path: Path, conn: psycopg.Connection[Any]
) -> None:
    path = tmp_path / "iso.csv"
    path.write_text("id,day,amount\n1,2024-03-15,1234.50\n2,2024-12-01,-2\n", encoding="utf-8")
    table = table_name("fmt")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, day date, amount numeric)").format(sql.Identifier(table)))
    job = LoadJob(LoadSpec(SourceOptions(str(path)), TargetSpec(table), strategy="copy-csv", dsn=dsn))
    job.run()
    assert job.ctx.raw  # the file's own bytes went to COPY


def test_the_users_format_and_a_cleared_one_override_inference(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    path = tmp_path / "amb.csv"
    # 03/04 could be March or April: nothing is inferred; the user says day first. amount is cleared.
    path.write_text('d,amount\n03/04/2024,"1,234.50"\n05/06/2024,"2.00"\n', encoding="utf-8")
    table = table_name("fmt")
    options = SourceOptions(str(path), column_formats={"d": "DD/MM/YYYY", "amount": ""})
    LoadJob(LoadSpec(options, TargetSpec(table, mode=LoadMode.CREATE), dsn=dsn)).run()
    assert _types(conn, table) == {"d": "date", "amount": "text"}
    got = conn.execute(sql.SQL("SELECT d, amount FROM {} ORDER BY d").format(sql.Identifier(table))).fetchall()
    assert got == [(dt.date(2024, 4, 3), "1,234.50"), (dt.date(2024, 6, 5), "2.00")]


def test_a_format_for_a_column_the_file_lacks_is_refused(dsn: str, tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    path.write_text("a\n1\n", encoding="utf-8")
    spec = LoadSpec(SourceOptions(str(path), column_formats={"b": "DD.MM.YYYY"}), TargetSpec("x_never"), dsn=dsn)
    with pytest.raises(ConfigError, match="names b, which the file does not have"):
        LoadJob(spec).run()


def _bad_file(tmp_path: Path) -> Path:
    lines = ["id;day;amount"] + [f"{i};{(i % 28) + 1}.03.2024;{i},5" for i in range(1, 60)]
    lines[10] = "10;31.02.2024;10,5"  # line 11: no 31 February
    lines[42] = "42;01.03.2024;1.2.3"  # line 43: not a number
    path = tmp_path / "bad.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_abort_names_the_first_value_that_does_not_fit(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    table = table_name("fmt")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, day date, amount numeric)").format(sql.Identifier(table)))
    options = SourceOptions(str(_bad_file(tmp_path)), column_formats={"day": "DD.MM.YYYY", "amount": "1234,56"})
    with pytest.raises(SourceError) as err:
        LoadJob(LoadSpec(options, TargetSpec(table), dsn=dsn)).run()
    assert err.value.line == 11
    assert "column day: '31.02.2024' is not a date written DD.MM.YYYY" in str(err.value)
    assert conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone() == (0,)


@pytest.mark.parametrize("strategy", ["copy-csv", "copy-binary", "pipeline", "parallel-copy"])
def test_skip_rejects_each_value_that_does_not_fit(
    strategy: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    table = table_name("fmt")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, day date, amount numeric)").format(sql.Identifier(table)))
    options = SourceOptions(str(_bad_file(tmp_path)), column_formats={"day": "DD.MM.YYYY", "amount": "1234,56"})
    rejects = tmp_path / "rejects.csv"
    spec = LoadSpec(options, TargetSpec(table), strategy=strategy, on_error=ErrorPolicy.SKIP,
                    reject_file=str(rejects), batch_rows=7, dsn=dsn)
    result = LoadJob(spec).run()
    assert (result.rows_read, result.rows_loaded, result.rows_rejected) == (59, 57, 2)
    with open(rejects, newline="", encoding="utf-8") as f:
        got = [(r["line"], r["column"], r["value"], r["reason"]) for r in csv.DictReader(f)]
    assert got == [("11", "day", "31.02.2024", "column day: '31.02.2024' is not a date written DD.MM.YYYY"),
                   ("43", "amount", "1.2.3", "column amount: '1.2.3' is not a number written like 1234,56")]
    ids = conn.execute(sql.SQL("SELECT id FROM {} ORDER BY id").format(sql.Identifier(table))).fetchall()
    assert [i for (i,) in ids] == [i for i in range(1, 60) if i not in (10, 42)]


def test_formats_are_saved_in_profiles(tmp_path: Path) -> None:
    spec = LoadSpec(SourceOptions("x.csv", column_formats={"day": "DD.MM.YYYY", "amount": ""}), TargetSpec("t"),
                    columns=[ColumnMap("day", "day", "date", format="DD.MM.YYYY"), ColumnMap("n", "n", "text")])
    path = tmp_path / "p.toml"
    profile.save(spec, path)
    back, _ = profile.load(path)
    assert back.source.column_formats == {"day": "DD.MM.YYYY", "amount": ""}
    assert back.columns is not None and [m.format for m in back.columns] == ["DD.MM.YYYY", None]


@pytest.mark.parametrize("marker", ["NA", "NULL", "#N/A"])
def test_a_marker_among_spreadsheet_dates_and_numbers_is_null_there(
    marker: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """R or Excel's NA in a column of 15.03.2024 dates and 1.234,50 amounts: a NULL, and the column typed."""
    rows = _rows(60, seed=9)
    lines = ["id;day;amount;note"]
    for i, day, _stamp, amount, _code in rows:
        spelled = f"{amount:,.2f}".replace(",", "_").replace(".", ",").replace("_", ".")
        lines.append(f"{i};{marker if i % 7 == 0 else f'{day:%d.%m.%Y}'};{marker if i % 5 == 0 else spelled};"
                     f"{marker if i % 11 == 0 else f'n{i}'}")
    path = tmp_path / "na.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    table = table_name("fmt")
    LoadJob(LoadSpec(SourceOptions(str(path)), TargetSpec(table, mode=LoadMode.CREATE), dsn=dsn)).run()
    assert _types(conn, table) == {"id": "integer", "day": "date", "amount": "numeric", "note": "text"}
    got = conn.execute(sql.SQL("SELECT id, day, amount, note FROM {} ORDER BY id").format(
        sql.Identifier(table))).fetchall()
    assert got == [(i, None if i % 7 == 0 else d, None if i % 5 == 0 else a, marker if i % 11 == 0 else f"n{i}")
                   for i, d, _s, a, _c in rows]


@pytest.mark.parametrize("datestyle", ["German, DMY", "SQL, DMY", "SQL, MDY"])
@pytest.mark.parametrize("mode", [LoadMode.CREATE, LoadMode.APPEND])
def test_postgres_own_copy_in_another_datestyle_loads_back(
    datestyle: str, mode: LoadMode, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str],
    tmp_path: Path,
) -> None:
    """COPY TO under DateStyle German or SQL writes 15.03.2024 and 03/15/2024 14:26:22: read back exactly,
    into a new table and into the table it came from (whose session speaks ISO)."""
    src = table_name("src")
    conn.execute(sql.SQL("CREATE TABLE {} AS SELECT i AS id, date '2024-01-01' + (i * 37 % 900) AS d, "
                         "timestamp '2023-05-01' + i * interval '7 hours 13 minutes 11 seconds' AS ts "
                         "FROM generate_series(1, 400) i").format(sql.Identifier(src)))
    path = tmp_path / "pg.csv"
    with psycopg.connect(dsn, autocommit=True) as other, other.cursor() as cur, path.open("wb") as f:
        cur.execute(sql.SQL("SET datestyle = {}").format(sql.Literal(datestyle)))
        with cur.copy(sql.SQL("COPY {} TO STDOUT (FORMAT csv, HEADER)").format(sql.Identifier(src))) as copy:
            for data in copy:
                f.write(data)
    back = table_name("back")
    if mode is LoadMode.APPEND:
        conn.execute(sql.SQL("CREATE TABLE {} (LIKE {})").format(sql.Identifier(back), sql.Identifier(src)))
    LoadJob(LoadSpec(SourceOptions(str(path)), TargetSpec(back, mode=mode), dsn=dsn)).run()
    assert _types(conn, back) == {"id": "integer", "d": "date", "ts": "timestamp without time zone"}
    q = "SELECT count(*) FROM (SELECT * FROM {} EXCEPT ALL SELECT * FROM {}) x"
    for a, b in ((src, back), (back, src)):
        assert conn.execute(sql.SQL(q).format(sql.Identifier(a), sql.Identifier(b))).fetchone() == (0,)


def test_many_misfits_are_named_by_line_in_one_pass(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Records spanning lines, a misfit in every 7th: each reject names its own line, and the file is
    not rescanned from its start for each one (CsvSource.locate, asked at most once per pass)."""
    from core.sources.csv.source import CsvSource

    lines, expected, line = ["id;day;note"], [], 2
    for i in range(3000):
        note = '"two\nlines"' if i % 10 == 0 else "one"
        day = "31.02.2024" if i % 7 == 3 else f"{i % 28 + 1:02d}.03.2024"
        if i % 7 == 3:
            expected.append((str(line), day))
        lines.append(f"{i};{day};{note}")
        line += 2 if i % 10 == 0 else 1
    path = tmp_path / "many.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    calls = []
    real = CsvSource.locate
    monkeypatch.setattr(CsvSource, "locate", lambda self, row: calls.append(row) or real(self, row))
    table = table_name("fmt")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, day date, note text)").format(sql.Identifier(table)))
    rejects = tmp_path / "rejects.csv"
    spec = LoadSpec(SourceOptions(str(path), column_formats={"day": "DD.MM.YYYY"}), TargetSpec(table),
                    strategy="copy-csv", on_error=ErrorPolicy.SKIP, reject_file=str(rejects), dsn=dsn)
    result = LoadJob(spec).run()
    assert result.rows_rejected == len(expected) == 429
    with open(rejects, newline="", encoding="utf-8") as f:
        assert [(r["line"], r["value"]) for r in csv.DictReader(f)] == expected
    assert len(calls) <= 2


def test_an_existing_date_column_is_read_day_first_despite_a_misfit(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """One 31.02 among DD.MM.YYYY dates: the column still takes the format (the misfit is a rejected row),
    so 01.02.2023 is the first of February, not January 2 as the server's DateStyle MDY reads it."""
    lines = ["id;datum"] + [f"{i};{'31.02.2023' if i == 4 else f'{i % 28 + 1:02d}.{i % 12 + 1:02d}.2023'}"
                            for i in range(60)]
    path = tmp_path / "eu.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    table = table_name("fmt")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, datum date)").format(sql.Identifier(table)))
    spec = LoadSpec(SourceOptions(str(path)), TargetSpec(table), on_error=ErrorPolicy.SKIP,
                    reject_file=str(tmp_path / "r.csv"), dsn=dsn)
    result = LoadJob(spec).run()
    assert (result.rows_loaded, result.rows_rejected) == (59, 1)
    got = dict(conn.execute(sql.SQL("SELECT id, datum FROM {}").format(sql.Identifier(table))).fetchall())
    assert got[0] == dt.date(2023, 1, 1) and got[1] == dt.date(2023, 2, 2) and got[13] == dt.date(2023, 2, 14)
    assert "column datum: '31.02.2023' is not a date written DD.MM.YYYY" in (tmp_path / "r.csv").read_text()
