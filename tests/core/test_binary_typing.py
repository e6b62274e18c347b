"""copy-binary types values in the client; each must land as PostgreSQL's own text input would.

The reference is the server itself: the same CSV loaded by copy-csv (PostgreSQL parses
every value). A value polars would read differently (year 0000, 24:00, a leap second,
Feb 30) must take the text path, so that it is stored, or refused, exactly as there.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from core.errors import BadRowError
from core.load.job import LoadJob
from core.spec import LoadMode, LoadSpec, SourceOptions, TargetSpec

_COLUMNS = "ts timestamp, tz timestamptz, d date, n numeric(12,3), f float8, b bool, t time"

# Each row alone in its own load, so that one the server refuses cannot hide the others.
_GOOD = [
    "2020-01-01T00:00:00,2020-01-01 00:00:00Z,2020-01-01,1.5,1.5,t,00:00:00",
    "2021-02-28 23:59:59.5,2021-02-28 23:59:59.123456+05:30,2024-02-29,-999999999.999,1e-300,yes,23:59:59.999999",
    "2020-02-29 24:00:00,2020-01-01 24:00:00+00,0001-01-01,0,-0,off,24:00:00",
    "2020-01-01 00:00:60,1999-12-31 23:59:60-08,9999-12-31,.5,Infinity,TRUE,12:00",
    "0001-01-01 00:00:00.000001,2000-01-01 00:00:00.1+0100,1970-01-01,1.2345,NaN,0,01:02:03.4",
    " 2020-01-01 00:00:00 ,2020-06-01 12:00:00+02:00,2020-1-2,12,1.7976931348623157e308,f,1:2:3",
    "2020-01-01 00:00:00,,,  7.25 ,\t2.5 , true ,",  # spaces PostgreSQL skips around numbers and booleans
    # no seconds, as spreadsheets write them: PostgreSQL reads :00
    "2020-01-01 10:02,2020-06-01 12:34+05:30,2020-01-02,1,1,t,10:02",
    "2020-02-29T23:59,2021-02-28 23:59Z,2020-01-02,1,1,t,00:00",
    "2020-02-29 24:00,2020-01-01 24:00-08,2020-01-02,1,1,t,00:00",
]
_REFUSED = ["0000-01-01 00:00:00,,,,,,", ",,0000-01-01,,,,", "2020-02-30 00:00:00,,,,,,", ",,,,1e400,,", ",,,,1e-400,,",
            # a no-break space is not a space to PostgreSQL's number input
            ",,,,\u00a05,,", ",,,\u00a05,,,", ",,,,5\u2003,,"]


def _load(dsn: str, path: Path, table: str, strategy: str) -> None:
    spec = LoadSpec(SourceOptions(str(path)), TargetSpec(table, mode=LoadMode.APPEND), dsn=dsn, strategy=strategy)
    LoadJob(spec).run()


def _rows(conn: psycopg.Connection[Any], table: str) -> list[tuple[Any, ...]]:
    return conn.execute(sql.SQL("SELECT ts::text, tz::text, d::text, n::text, f::text, b, t::text FROM {} "
                                "ORDER BY 1, 2, 3").format(sql.Identifier(table))).fetchall()


def _table(conn: psycopg.Connection[Any], name: str) -> str:
    conn.execute(sql.SQL("CREATE TABLE {} (" + _COLUMNS + ")").format(sql.Identifier(name)))  # fixed DDL
    return name


def _assert_binary_stores_what_csv_stores(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], path: Path
) -> None:
    ref, got = _table(conn, table_name("ref")), _table(conn, table_name("bin"))
    _load(dsn, path, ref, "copy-csv")  # the server parses every value: the reference
    _load(dsn, path, got, "copy-binary")
    assert _rows(conn, got) == _rows(conn, ref)


def _binary_equals_csv_logged(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], path: Path
) -> list[str]:
    """copy-binary's load of `path` stores what copy-csv's does; its log lines."""
    ref, got = _table(conn, table_name("ref")), _table(conn, table_name("bin"))
    _load(dsn, path, ref, "copy-csv")
    logs: list[str] = []
    LoadJob(LoadSpec(SourceOptions(str(path)), TargetSpec(got, mode=LoadMode.APPEND), dsn=dsn,
                     strategy="copy-binary"), on_log=logs.append).run()
    assert _rows(conn, got) == _rows(conn, ref)
    return logs


def _one_column_table(name: str, pg_type: str | sql.Composable) -> sql.Composed:
    column = sql.SQL(pg_type) if isinstance(pg_type, str) else pg_type  # the tests' own type names
    return sql.SQL("CREATE TABLE {} (id int, v {})").format(sql.Identifier(name), column)


def _column_loads_alike(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    pg_type: str | sql.Composable, values: list[str], batch_rows: int, shown: str = "v::text",
) -> list[str]:
    """An id and one column of `pg_type`, loaded by copy-csv (the server reads every value) and
    by copy-binary in batches of `batch_rows`: every row the same (`shown` of each); the logs."""
    path = tmp_path / "v.csv"
    path.write_text("id,v\n" + "".join(f"{i},{v}\n" for i, v in enumerate(values)), encoding="utf-8")
    ref, got = table_name("vref"), table_name("vbin")
    for t in (ref, got):
        conn.execute(_one_column_table(t, pg_type))
    logs: list[str] = []
    for t, strategy in ((ref, "copy-csv"), (got, "copy-binary")):
        LoadJob(LoadSpec(SourceOptions(str(path)), TargetSpec(t, mode=LoadMode.APPEND), dsn=dsn, strategy=strategy,
                         batch_rows=batch_rows), on_log=logs.append).run()
    query = "SELECT id, " + shown + " FROM {} ORDER BY id"  # fixed expressions from the tests
    got_rows = conn.execute(sql.SQL(query).format(sql.Identifier(got))).fetchall()
    assert got_rows == conn.execute(sql.SQL(query).format(sql.Identifier(ref))).fetchall()
    assert len(got_rows) == len(values)
    return logs


def _refused_alike(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
    pg_type: str | sql.Composable, lines: str, named: tuple[int, str, str],
) -> None:
    """Both strategies refuse the file and name the same line, column and value."""
    path = tmp_path / "v.csv"
    path.write_text(lines, encoding="utf-8")
    for strategy in ("copy-csv", "copy-binary"):
        t = table_name("vno")
        conn.execute(_one_column_table(t, pg_type))
        with pytest.raises(BadRowError) as info:
            _load(dsn, path, t, strategy)
        assert (info.value.problem.line, info.value.problem.column, info.value.problem.value) == named


@pytest.mark.parametrize("line", _GOOD)
def test_binary_stores_what_the_server_would(
    line: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    path = tmp_path / "v.csv"
    path.write_text("ts,tz,d,n,f,b,t\n" + line + "\n", encoding="utf-8")
    _assert_binary_stores_what_csv_stores(dsn, conn, table_name, path)


@pytest.mark.parametrize("line", _REFUSED)
def test_binary_refuses_what_the_server_refuses(
    line: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    path = tmp_path / "v.csv"
    path.write_text("ts,tz,d,n,f,b,t\n2020-01-01 00:00:00,,,,,,\n" + line + "\n", encoding="utf-8")
    named = []
    for strategy in ("copy-csv", "copy-binary"):
        t = _table(conn, table_name("no"))
        with pytest.raises(BadRowError) as info:
            _load(dsn, path, t, strategy)
        assert _rows(conn, t) == []
        named.append((info.value.problem.line, info.value.problem.column, info.value.problem.value))
    assert named[0] == named[1] and named[1][0] == 3  # the same line, column and value, from the server


@pytest.mark.parametrize("zone", ["UTC", "Etc/UTC", "America/New_York", "Asia/Kolkata"])
def test_timestamptz_with_no_offset_lands_in_the_sessions_zone(
    zone: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """`2021-03-14 02:30:00` in a timestamptz column is a time in the session's TimeZone (here one
    without an hour of that day, and one ambiguous in November). copy-binary types it itself only
    where that zone is UTC; elsewhere its batch goes as text and the server places it. Either way
    it lands where the server's own reading puts it."""
    from psycopg.conninfo import make_conninfo

    zoned = make_conninfo(dsn, options=f"-c timezone={zone}")
    path = tmp_path / "naive.csv"
    stamps = ["2021-03-14 02:30:00", "2021-11-07 01:30:00", "1966-02-15 05:49:13.131292", "2020-02-29 23:59:59.5"]
    path.write_text("ts,tz,d,n,f,b,t\n" + "".join(f"{s[:19]},{s},,,,,\n" for s in stamps * 50), encoding="utf-8")
    logs = _binary_equals_csv_logged(zoned, conn, table_name, path)
    as_text = any("go as text COPY" in line for line in logs)
    assert as_text == (zone not in ("UTC", "Etc/UTC"))


def test_a_large_typed_batch_matches_the_server(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """Many rows at once (the typed path runs whole columns), with one odd value per batch."""
    path = tmp_path / "many.csv"
    lines = [f"2020-01-{1 + i % 28:02d} {i % 24:02d}:{i % 60:02d}:{(i * 7) % 60:02d}.{i % 1000:03d},"
             f"2020-03-01 00:00:{i % 60:02d}+{i % 14:02d},2020-01-{1 + i % 28:02d},{i}.{i % 1000},{i / 7},"
             f"{'t' if i % 2 else 'f'},{i % 24:02d}:00:00" for i in range(30_000)]
    lines[12_345] = "2020-01-01 24:00:00,2020-01-01 00:00:00Z,2020-01-01,1,1,t,24:00:00"
    path.write_text("ts,tz,d,n,f,b,t\n" + "\n".join(lines) + "\n", encoding="utf-8")
    _assert_binary_stores_what_csv_stores(dsn, conn, table_name, path)


def test_a_refused_row_is_named_across_binary_and_text_statements(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """Batch 2 goes as text (24:00), batch 3 as binary again; a duplicate key in batch 3 is
    still named by its own line, counted from the start of the stream."""
    path = tmp_path / "dup.csv"
    lines = [f"{i},2020-01-01 00:00:00" for i in range(30_000)]
    lines[15_000] = "15000,2020-01-01 24:00:00"
    lines[25_000] = "7,2020-01-01 00:00:00"  # id 7 again
    path.write_text("id,ts\n" + "\n".join(lines) + "\n", encoding="utf-8")
    t = table_name("dup")
    conn.execute(sql.SQL("CREATE TABLE {} (id int PRIMARY KEY, ts timestamp)").format(sql.Identifier(t)))
    spec = LoadSpec(SourceOptions(str(path)), TargetSpec(t, mode=LoadMode.APPEND), dsn=dsn, strategy="copy-binary",
                    batch_rows=10_000)
    with pytest.raises(BadRowError) as info:
        LoadJob(spec).run()
    assert info.value.problem.line == 25_002 and info.value.problem.value in ("7", None)
    row = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(t))).fetchone()
    assert row is not None and row[0] == 0


_ODD_TEXT = ['tab\there', 'two\nlines', 'cr\rlf\r\n', 'back\\slash', '\\N', '\\.', '', ' ', 'plain']


def test_text_batches_carry_every_character_as_the_server_would(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """A table with no binary form (unconstrained numeric) goes as text COPY, written
    column-wise: tabs, newlines, backslashes, \\N and empty strings land as copy-csv stores them."""
    path = tmp_path / "odd.csv"
    rows = [f'{i}.5,"{_ODD_TEXT[i % len(_ODD_TEXT)]}"' for i in range(200)] + ["7,"]  # and a NULL
    path.write_bytes(("n,t\n" + "\n".join(rows) + "\n").encode())
    got = {}
    for strategy in ("copy-csv", "copy-binary"):
        t = table_name("odd")
        conn.execute(sql.SQL("CREATE TABLE {} (n numeric, t text)").format(sql.Identifier(t)))
        _load(dsn, path, t, strategy)
        got[strategy] = conn.execute(sql.SQL("SELECT n::text, t FROM {} ORDER BY n").format(sql.Identifier(t))).fetchall()
    assert got["copy-binary"] == got["copy-csv"] and len(got["copy-csv"]) == 201
    assert ("7", None) in got["copy-binary"] and ("1.5", "two\nlines") in got["copy-binary"]


def test_a_refused_row_after_multiline_values_is_named_in_a_text_batch(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    path = tmp_path / "bad.csv"
    lines = [f'{i},"line {i}\nnext"' for i in range(50)]
    lines[40] = 'x40,"bad number"'  # file line: header 1, two lines per record before it
    path.write_text("n,t\n" + "\n".join(lines) + "\n", encoding="utf-8")
    t = table_name("bad")
    conn.execute(sql.SQL("CREATE TABLE {} (n numeric, t text)").format(sql.Identifier(t)))
    with pytest.raises(BadRowError) as info:
        _load(dsn, path, t, "copy-binary")
    assert (info.value.problem.line, info.value.problem.column, info.value.problem.value) == (82, "n", "x40")


@pytest.mark.parametrize(("precision", "scale"), [(12, 2), (12, 3), (5, 5), (4, 0), (18, 4), (9, 1), (20, 6)])
def test_numeric_stores_what_the_server_parses(
    precision: int, scale: int, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str],
    tmp_path: Path,
) -> None:
    """numeric(p, s) typed by polars and encoded by pgpq: random values of every length and sign,
    zeros and the type's own limits land as the server's own text input."""
    import random

    rng = random.Random(precision * 100 + scale)
    whole = precision - scale

    def value() -> str:
        k = rng.random()
        if k < 0.05:
            return ""
        if k < 0.1:
            return rng.choice(["0", "-0", "0.0", ".5" if scale else "5",
                               "-" + ("9" * whole if whole else "0." + "9" * scale)])
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, max(1, whole))))
        decimals = "".join(rng.choice("0123456789") for _ in range(rng.randint(0, scale)))
        text = (digits if whole else "0") + ("." + decimals if decimals else "")
        return ("-" if rng.random() < 0.3 else "") + text

    rows = [value() for _ in range(6000)]
    rows[100] = ("9" * whole if whole else "0") + ("." + "9" * scale if scale else "")  # the largest
    _column_loads_alike(dsn, conn, table_name, tmp_path,
                        sql.SQL("numeric({}, {})").format(sql.Literal(precision), sql.Literal(scale)), rows, 1000)


def _real_values(rng: Any) -> list[str]:
    """Text a file may hold for a real: random digits of every length and exponent, the type's
    limits, and values halfway-plus-a-hair between two floats, where rounding first to a double
    and then to a float lands on the other neighbour (PostgreSQL's strtof rounds once)."""
    from decimal import Decimal, localcontext

    with localcontext() as ctx:
        ctx.prec = 60
        hair = Decimal(2) ** -60
        tricky = [str(Decimal(1) + Decimal(2) ** -24 + hair), str(Decimal(1) + Decimal(2) ** -24 - hair),
                  str(Decimal(3) * Decimal(2) ** -24 + 1 + hair)]
    values = [*tricky, "3.4028235e38", "-3.4028235e38", "1e-45", "1.17549435e-38", "0", "-0", "NaN", "Infinity",
              "-inf", " 1.5 ", "0x10", ""]
    for _ in range(5000):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 12)))
        point = rng.randint(0, len(digits))
        text = (digits[:point] or "0") + ("." + digits[point:] if point < len(digits) else "")
        if rng.random() < 0.3:
            text += f"e{rng.randint(-30, 26)}"  # in range: 12 digits at most, denormals included
        values.append(("-" if rng.random() < 0.3 else "") + text)
    return values


def test_real_stores_what_the_server_parses(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """real is typed in the client (one real column used to send every row of a table as text):
    each value lands with the bits the server's own text input gives it."""
    import random

    logs = _column_loads_alike(dsn, conn, table_name, tmp_path, "real", _real_values(random.Random(4)), 1000,
                               shown="float4send(v)")
    # Only the batch with the hexadecimal float polars does not read went as text.
    told = [m for m in logs if "go as text COPY" in m]
    assert len(told) == 1 and "column 'v' holds '0x10'" in told[0], logs


@pytest.mark.parametrize("value", ["1e39", "7e-46", "-1e-50"])
def test_real_refuses_what_the_server_refuses(
    value: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """Out of a real's range: polars reads inf or 0, PostgreSQL refuses; both paths name the value
    (a zero beside it: polars reads 0 there too)."""
    _refused_alike(dsn, conn, table_name, tmp_path, "real", f"id,v\n1,0\n2,{value}\n3,1.5\n", (3, "v", value))


def test_uuids_store_what_the_server_parses(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """uuid: the usual spelling (either case) is read from its bytes a batch at a time; a batch
    with another spelling PostgreSQL accepts (no dashes, braces) takes polars' way or goes as text."""
    import random
    import uuid

    rng = random.Random(5)
    values = [str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(3000)]
    values = [v.upper() if i % 3 == 0 else v for i, v in enumerate(values)]
    for i in range(0, 3000, 7):
        values[i] = ""  # NULL
    values[1200] = values[1201].replace("-", "")  # batch 3: polars' way
    values[2100] = "{" + values[2101] + "}"  # batch 5: as text
    logs = _column_loads_alike(dsn, conn, table_name, tmp_path, "uuid", values, 500)
    told = [m for m in logs if "go as text COPY" in m]
    assert len(told) == 1 and "column 'v' holds '{" in told[0], logs


@pytest.mark.parametrize("value", ["5655f1c0-4600-456a-b7ae-138fe094432g", "5655f1c0-4600-456a-b7ae-138fe09443",
                                   "5655f1c04600-456a-b7ae-138fe0944321-"])
def test_uuid_refuses_what_the_server_refuses(
    value: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    _refused_alike(dsn, conn, table_name, tmp_path, "uuid",
                   f"id,v\n1,5655f1c0-4600-456a-b7ae-138fe0944321\n2,{value}\n", (3, "v", value))


def test_timestamps_without_seconds_go_as_binary(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """`2024-01-05 10:02` and `10:02` (no seconds) are typed in the client, not sent as text batch by batch
    (a 1M-row file of them took 1.0-1.1 s by copy-binary, psql 0.77), and lands as the server reads it."""
    path = tmp_path / "minutes.csv"
    path.write_text("ts,tz,t\n" + "".join(f"2024-01-{1 + i % 28:02d} {i % 24:02d}:{i % 60:02d},"
                                         f"2024-01-05 10:{i % 60:02d}+05:30,{i % 24:02d}:{i % 60:02d}\n"
                                         for i in range(3000)), encoding="utf-8")
    columns = "ts timestamp, tz timestamptz, t time"
    ref, got = table_name("ref"), table_name("bin")
    for name in (ref, got):
        conn.execute(sql.SQL("CREATE TABLE {} (" + columns + ")").format(sql.Identifier(name)))  # fixed DDL
    _load(dsn, path, ref, "copy-csv")
    log: list[str] = []
    spec = LoadSpec(SourceOptions(str(path)), TargetSpec(got, mode=LoadMode.APPEND), dsn=dsn, strategy="copy-binary")
    LoadJob(spec, on_log=log.append).run()
    assert not [m for m in log if "go as text COPY" in m], log
    query = "SELECT ts::text, tz::text, t::text FROM {} ORDER BY 1, 2, 3"
    assert (conn.execute(sql.SQL(query).format(sql.Identifier(got))).fetchall()
            == conn.execute(sql.SQL(query).format(sql.Identifier(ref))).fetchall())


def test_the_log_names_the_column_that_went_as_text(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """A column the client does not type exactly sends its batches as text: the log names it and
    its first such value, so a user knows which column costs the speed."""
    path = tmp_path / "odd.csv"
    path.write_text("ts,tz,d,n,f,b,t\n" + "".join(
        f"2020-01-01 10:00:00,,{'infinity' if i == 40 else '2020-01-02'},,,,10:02\n" for i in range(100)),
        encoding="utf-8")
    log = _binary_equals_csv_logged(dsn, conn, table_name, path)
    told = [m for m in log if "go as text COPY" in m]
    assert len(told) == 1 and "column 'd' holds 'infinity'" in told[0], log
