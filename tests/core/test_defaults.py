"""Defaults that never change data: null markers, inferred types, PostgreSQL's own CSV, encodings,
and odd CSV that every strategy must read the same way."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import polars as pl
import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from core.errors import SluiceError
from core.load.job import LoadJob
from core.pgtypes import infer_pg_type
from core.spec import LoadMode, LoadSpec, SourceOptions, TargetSpec
from core.strategies.catalogue import all_strategies

TABLE_STRATEGIES = [c.id for c in all_strategies() if not c.script_only]


def _load(dsn: str, path: Path, table: str, strategy: str = "copy-csv", **kw: Any) -> Any:
    mode = kw.pop("mode", LoadMode.APPEND)
    spec = LoadSpec(source=SourceOptions(path=str(path), **kw.pop("source", {})),
                    target=TargetSpec(table=table, mode=mode), strategy=strategy,
                    batch_rows=kw.pop("batch_rows", 3), dsn=dsn, **kw)
    return LoadJob(spec).run()


def _rows(conn: psycopg.Connection[Any], table: str) -> list[tuple[Any, ...]]:
    return conn.execute(sql.SQL("SELECT * FROM {} ORDER BY 1").format(sql.Identifier(table))).fetchall()


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


# -- null markers --------------------------------------------------------------------------

@pytest.mark.parametrize(("data", "marker", "applies"), [
    # a JSON null in a jsonb column is a value, never the file's marker
    (b'id,doc,n\n1,null,\n2,"{""a"": null}",3\n3,,4\n', "", None),
    # words that are values in a column of unquoted text
    (b"id,country,n\n1,NA,1\n2,US,\n3,DE,4\n", "", None),
    (b"id,word,n\n1,NULL,1\n2,hello,\n3,N/A,4\n", "", None),
    # a marker among numbers: a marker, kept off the column of free text (Namibia stays)
    (b"id,country,n\n1,NA,NA\n2,US,3\n3,DE,4\n", "NA", ("id", "n")),
    # R's write.csv: text quoted, NA unquoted in numeric and text columns
    (b'"","x","name"\n"1",1.5,"abc"\n"2",NA,NA\n"3",2,"NA"\n', "NA", None),
    # quoted, the word is text and proves nothing
    (b'id,n\n1,"NULL"\n2,3\n', "", None),
    (b"id,n,d\n1,\\N,2024-01-01\n2,3,\\N\n", "\\N", None),
])
def test_a_marker_counts_only_where_it_cannot_be_a_value(
    tmp_path: Path, data: bytes, marker: str, applies: tuple[str, ...] | None
) -> None:
    from core.sources.csv.source import CsvSource

    src = CsvSource(SourceOptions(str(_write(tmp_path / "f.csv", data))))
    assert src.dialect.null == marker
    assert (None if src.null_columns is None else tuple(src.null_columns)) == applies
    if marker:
        assert src.dialect.null_seen  # the window shows where it was seen


def test_r_write_csv_loads_na_as_null_with_no_options(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    path = _write(tmp_path / "r.csv", b'"","x","name"\n"1",1.5,"abc"\n"2",NA,NA\n"3",2,"NA"\n')
    t = table_name("r")
    _load(dsn, path, t, mode=LoadMode.CREATE)
    got = conn.execute(sql.SQL('SELECT x::text, name FROM {} ORDER BY column_1').format(sql.Identifier(t))).fetchall()
    assert got == [("1.5", "abc"), (None, None), ("2", "NA")]


_BOTH_WAYS = (b'zip,name,amount,note,flag,day\n'
              b'00123,"Smith, John",12.50,"",true,2024-01-05\n'
              b'01234,O\'Brien,NULL,NA,false,2024-02-29\n'
              b'99999,Zoe,-3,"null",,2024-03-01\n'
              b'00007,"",1e3,N/A,TRUE,\n')
_BOTH_WAYS_ROWS = [("00007", "", 1000.0, "N/A", True, None), ("00123", "Smith, John", 12.5, "", True, "2024-01-05"),
                   ("01234", "O'Brien", None, "NA", False, "2024-02-29"), ("99999", "Zoe", -3.0, "null", None, "2024-03-01")]


def _both_ways_rows(conn: psycopg.Connection[Any], table: str) -> list[tuple[Any, ...]]:
    return conn.execute(sql.SQL("SELECT zip, name, amount, note, flag, day::text FROM {} ORDER BY zip").format(
        sql.Identifier(table))).fetchall()


@pytest.mark.parametrize("strategy", ["auto", *TABLE_STRATEGIES])
@pytest.mark.parametrize("mode", [LoadMode.APPEND, LoadMode.CREATE])
def test_a_file_that_writes_null_both_ways_loads_with_no_options(
    strategy: str, mode: LoadMode, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str],
    tmp_path: Path,
) -> None:
    """NULL in a number column, nothing in a boolean and a date column: under PostgreSQL's rule
    for a named marker the empty fields were empty strings, which a boolean cannot hold, and
    the default load failed. Both now read as NULL there; text keeps its words and its ""."""
    path = _write(tmp_path / "both.csv", _BOTH_WAYS)
    t = table_name("both")
    if mode is LoadMode.APPEND:
        conn.execute(sql.SQL("CREATE TABLE {} (zip text, name text, amount float8, note text, flag bool, day date)")
                     .format(sql.Identifier(t)))
    _load(dsn, path, t, strategy, mode=mode, batch_rows=2)
    assert _both_ways_rows(conn, t) == _BOTH_WAYS_ROWS


def test_the_windows_options_for_such_a_file_load_it_the_same(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """The window passes the sniffed marker back by name, with where it and empty fields apply."""
    from core.preview import inspect_source

    path = _write(tmp_path / "both.csv", _BOTH_WAYS)
    info = inspect_source(SourceOptions(str(path)))
    assert info.options.null == "NULL" and info.options.empty_null_columns == ["flag", "day"]
    assert "empty fields are NULL too in flag, day" in info.null_note()
    t = table_name("both")
    _load(dsn, path, t, mode=LoadMode.CREATE, source={
        "null": "NULL", "null_columns": info.options.null_columns, "empty_null_columns": info.options.empty_null_columns})
    assert _both_ways_rows(conn, t) == _BOTH_WAYS_ROWS


def test_a_marker_the_user_names_keeps_postgresqls_rule_for_empty_fields(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    path = _write(tmp_path / "named.csv", b"id,t\n1,NULL\n2,\n3,x\n")
    t = table_name("named")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, t text)").format(sql.Identifier(t)))
    _load(dsn, path, t, source={"null": "NULL"})
    assert _rows(conn, t) == [(1, None), (2, ""), (3, "x")]  # as COPY ... (NULL 'NULL') reads it


# -- inference -----------------------------------------------------------------------------

@pytest.mark.parametrize(("values", "expected"), [
    (["02134", "00501", "12345"], "text"),
    (["007"], "text"),
    (["-01", "5"], "text"),
    (["0", "10", "-3"], "integer"),
    (["0.5", "00.5"], "text"),
    (["9223372036854775808"], "numeric"),
    (["10.50", "3"], "numeric"),
    (["0.30000000000000004", "1e5"], "double precision"),
    (["0.12345678901234567890", "1e5"], "numeric"),
    (["1.5e10", "NaN"], "double precision"),
    (["2024-01-01 10:00:00.1234567"], "text"),
    (["A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11"], "text"),
    (['{"a": 1}', "[1, 2]"], "jsonb"),
])
def test_inference_never_loses_information(values: list[str], expected: str) -> None:
    assert infer_pg_type(pl.Series(values)) == expected


@pytest.mark.parametrize("strategy", ["copy-csv", "executemany"])
def test_create_keeps_leading_zeros_and_long_numbers(
    strategy: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    path = _write(tmp_path / "zips.csv", b"zip,big,price\n02134,123456789012345678901234,10.50\n"
                                         b"00501,1,0.1\n90210,2,3\n")
    t = table_name("z")
    _load(dsn, path, t, strategy, mode=LoadMode.CREATE)
    got = conn.execute(sql.SQL("SELECT zip, big::text, price::text FROM {} ORDER BY 1").format(
        sql.Identifier(t))).fetchall()
    assert got == [("00501", "1", "0.1"), ("02134", "123456789012345678901234", "10.50"), ("90210", "2", "3")]


# -- PostgreSQL's own CSV loads back -----------------------------------------------------

_COLUMNS = ("id int PRIMARY KEY, n numeric, f float8, t text, code text, doc jsonb, d date, b boolean, "
            "ts timestamptz, tm time")
_VALUES = [
    (1, "1.50", "0.1", "plain", "02134", '{"a": null}', "2024-02-29", True, "2024-01-01 10:00:00+00", "10:00"),
    (2, None, None, None, None, None, None, None, None, None),
    (3, "-7", "1e+100", "", "00501", "null", "1999-12-31", False, "2024-06-30 23:59:59.5+02", "23:59:59.5"),
    (4, "12345678901234567890.123", "-0.30000000000000004", "NULL", "NA", "[1, 2]", None, True, None, None),
    (5, "0", "NaN", "NA", "90210", '"text"', "2000-01-01", None, "2000-01-01 00:00:00+00", "00:00"),
    (6, "3", "Infinity", "N/A", "00000", "{}", "2001-01-01", False, None, None),
    (7, "4", "2", "\\N", "12", "true", None, None, None, None),
    (8, "5", "-2.5", 'say "hi", then\nleave', "007", '{"k": [null]}', None, None, None, None),
]


@pytest.fixture
def pg_csv(conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A table and the CSV that PostgreSQL's COPY TO (FORMAT csv, HEADER) writes of it."""
    src = table_name("src")
    conn.execute(sql.SQL("CREATE TABLE {} (" + _COLUMNS + ")").format(sql.Identifier(src)))
    with conn.cursor() as cur:
        cur.executemany(sql.SQL("INSERT INTO {} VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)").format(
            sql.Identifier(src)), _VALUES)
    path = tmp_path / "pg.csv"
    with conn.cursor() as cur, path.open("wb") as f, cur.copy(
        sql.SQL("COPY {} TO STDOUT (FORMAT csv, HEADER)").format(sql.Identifier(src))
    ) as copy:
        for data in copy:
            f.write(data)
    yield src, path


def _diff(conn: psycopg.Connection[Any], a: str, b: str, cols: str = "*") -> tuple[int, int]:
    q = "SELECT count(*) FROM (SELECT {c} FROM {a} EXCEPT ALL SELECT {c} FROM {b}) x"
    one = conn.execute(sql.SQL(q).format(c=sql.SQL(cols), a=sql.Identifier(a), b=sql.Identifier(b))).fetchone()
    two = conn.execute(sql.SQL(q).format(c=sql.SQL(cols), a=sql.Identifier(b), b=sql.Identifier(a))).fetchone()
    assert one is not None and two is not None
    return int(one[0]), int(two[0])


@pytest.mark.parametrize("strategy", TABLE_STRATEGIES)
def test_postgres_copy_to_csv_loads_back_identically(
    strategy: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str],
    pg_csv: tuple[str, Path],
) -> None:
    src, path = pg_csv
    back = table_name("back")
    conn.execute(sql.SQL("CREATE TABLE {} (LIKE {})").format(sql.Identifier(back), sql.Identifier(src)))
    result = _load(dsn, path, back, strategy)
    assert result.rows_loaded == len(_VALUES)
    assert _diff(conn, src, back) == (0, 0)


_AS_TEXT = "id, n::text, f::text, t, code, doc::text, d::text, b::text, ts::text, tm::text"


@pytest.mark.parametrize("strategy", ["copy-csv", "executemany", "copy-binary"])
def test_postgres_copy_to_csv_in_create_mode_keeps_every_value(
    strategy: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str],
    pg_csv: tuple[str, Path],
) -> None:
    src, path = pg_csv
    new = table_name("new")
    _load(dsn, path, new, strategy, mode=LoadMode.CREATE)
    assert _diff(conn, src, new, _AS_TEXT) == (0, 0)


# -- encodings -----------------------------------------------------------------------------

@pytest.fixture
def latin1_dsn(dsn: str, conn: psycopg.Connection[Any]) -> Iterator[str]:
    name = f"sluice_latin1_{uuid.uuid4().hex[:8]}"
    conn.execute(sql.SQL("CREATE DATABASE {} ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0")
                 .format(sql.Identifier(name)))
    params = conninfo_to_dict(dsn)
    params["dbname"] = name
    yield make_conninfo("", **{k: v for k, v in params.items() if v is not None})
    conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


_ACCENTED = ["café", "naïve", "Ærøskøbing", "façade « quoted »"]


@pytest.mark.parametrize("strategy", TABLE_STRATEGIES)
@pytest.mark.parametrize("database", ["latin1", "utf8"])
def test_cp1252_text_reads_back_the_same_in_latin1_and_utf8_databases(
    strategy: str, database: str, dsn: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    target_dsn = request.getfixturevalue("latin1_dsn") if database == "latin1" else dsn
    body = "id,name\n" + "".join(f"{i},{w}\n" for i, w in enumerate(_ACCENTED, 1))
    path = _write(tmp_path / "cp.csv", body.encode("cp1252"))
    t = f"enc_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(target_dsn, autocommit=True) as c:
        c.execute(sql.SQL("CREATE TABLE {} (id int, name text)").format(sql.Identifier(t)))
        try:
            _load(target_dsn, path, t, strategy)
            assert [r[1] for r in _rows(c, t)] == _ACCENTED
        finally:
            c.execute(sql.SQL("DROP TABLE {}").format(sql.Identifier(t)))


@pytest.mark.parametrize("strategy", ["copy-csv", "executemany", "copy-binary", "unnest"])
def test_a_character_latin1_cannot_store_is_refused_with_line_and_column(
    strategy: str, latin1_dsn: str, tmp_path: Path
) -> None:
    path = _write(tmp_path / "euro.csv", "id,name\n1,café\n2,5 €\n".encode("cp1252"))
    t = f"enc_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(latin1_dsn, autocommit=True) as c:
        c.execute(sql.SQL("CREATE TABLE {} (id int, name text)").format(sql.Identifier(t)))
        try:
            with pytest.raises(SluiceError) as err:
                _load(latin1_dsn, path, t, strategy)
            assert _rows(c, t) == []
        finally:
            c.execute(sql.SQL("DROP TABLE {}").format(sql.Identifier(t)))
    msg = str(err.value)
    assert "euro.csv" in msg and "line 3" in msg and "name" in msg, msg


@pytest.mark.parametrize("strategy", ["auto", "copy-csv", "copy-binary", "executemany"])
def test_a_file_of_mixed_encodings_is_refused_not_garbled(
    strategy: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """UTF-8 rows and one cp1252 row in the sample: read as cp1252, every "é" would be
    stored as "Ã©". The first byte that is not UTF-8 is refused with its line instead."""
    body = b"id,name\n" + b"".join(f"{i},caf\u00e9 {i}\n".encode() for i in range(1, 50)) + b"50,caf\xe9\n"
    path = _write(tmp_path / "mixed.csv", body)
    t = table_name("enc")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, name text)").format(sql.Identifier(t)))
    with pytest.raises(SluiceError) as err:
        _load(dsn, path, t, strategy)
    assert _rows(conn, t) == []
    msg = str(err.value)
    assert "mixed.csv" in msg and "line 51" in msg, msg


# -- odd CSV: one reading for every strategy ---------------------------------------------------

_ODD = {
    "quote inside unquoted fields": (
        b"id,lat,lon\n1,37\xc2\xb036'37.8\"N,122\xc2\xb022'31.1\"W\n2,a\"b,c\n",
        [(1, "37°36'37.8\"N", "122°22'31.1\"W"), (2, 'a"b', "c")]),
    "one bare quote then ordinary lines": (
        b"id,lat,lon\n1,5\"N,x\n2,y,z\n3,u,v\n", [(1, '5"N', "x"), (2, "y", "z"), (3, "u", "v")]),
    "text after a closing quote": (
        b'id,lat,lon\n1,"q"z,x\n2,"a,b",\n', [(1, "qz", "x"), (2, "a,b", None)]),
    "CR-only line ends": (
        b'id,lat,lon\r1,a,\r2,"",c\r', [(1, "a", None), (2, "", "c")]),
    "no final newline": (b"id,lat,lon\n1,a,b\n2,c,d", [(1, "a", "b"), (2, "c", "d")]),
}


@pytest.mark.parametrize("strategy", TABLE_STRATEGIES)
@pytest.mark.parametrize("case", list(_ODD))
def test_strategies_agree_on_odd_csv(
    case: str, strategy: str, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str],
    tmp_path: Path,
) -> None:
    data, expected = _ODD[case]
    path = _write(tmp_path / "odd.csv", data)
    t = table_name("odd")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, lat text, lon text)").format(sql.Identifier(t)))
    _load(dsn, path, t, strategy)
    assert _rows(conn, t) == expected


def test_a_bare_quote_far_into_the_file_still_keeps_the_raw_path_honest(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path
) -> None:
    """Several chunks of clean rows, then one bare quote: the whole load is read one way."""
    body = b"".join(b'%d,"x, %d",y\n' % (i, i) for i in range(1, 60_000))
    path = _write(tmp_path / "late.csv", b"id,lat,lon\n" + body + b'60000,1"N,z\n')
    t = table_name("late")
    conn.execute(sql.SQL("CREATE TABLE {} (id int, lat text, lon text)").format(sql.Identifier(t)))
    result = _load(dsn, path, t, "copy-csv", batch_rows=10_000)
    assert result.rows_loaded == 60_000
    row = conn.execute(sql.SQL("SELECT lat FROM {} WHERE id = 60000").format(sql.Identifier(t))).fetchone()
    assert row == ('1"N',)


# -- headers ---------------------------------------------------------------------------------

def _wide_by_year(path: Path, rows: int = 40) -> Path:
    """World Bank's layout (statsmodels' fertility.csv): names, then one column per year, the
    years as the header's names, rates (and gaps) below."""
    years = list(range(1960, 1975))
    lines = ["Country Name,Country Code,Indicator Name,Indicator Code," + ",".join(map(str, years))]
    for i in range(rows):
        rates = ["" if (i + y) % 9 == 0 else f"{1 + ((i * 7 + y) % 50) / 10:.3f}" for y in years]
        lines.append(f'Land {i},L{i:02d},"Fertility rate, total (births per woman)",SP.DYN.TFRT.IN,' + ",".join(rates))
    return _write(path, ("\n".join(lines) + "\n").encode())


def test_years_as_column_names_are_a_header(dsn: str, conn: psycopg.Connection[Any],
                                            table_name: Callable[[str], str], tmp_path: Path) -> None:
    from core.preview import inspect_source

    path = _wide_by_year(tmp_path / "fertility.csv")
    info = inspect_source(SourceOptions(str(path)))
    assert info.options.header is True and info.columns[4] == "1960"
    table = table_name("wide")
    result = _load(dsn, path, table, "auto", mode=LoadMode.CREATE)
    assert result.rows_loaded == 40  # the header was loaded as a row of data before
    got = conn.execute(sql.SQL('SELECT "Country Name", "1960"::text FROM {} ORDER BY 1 LIMIT 1').format(
        sql.Identifier(table))).fetchone()
    assert got == ("Land 0", "2.000")


@pytest.mark.parametrize("first", ["1960,1961,1962,4.5", "7,1961,1962,1963", "2001,1999,2005,2010",
                                   "1960,1961,1962,1963"])
def test_numbers_in_the_first_row_are_data_unless_they_name_periods(first: str, tmp_path: Path) -> None:
    """A first row of numbers is data: one that is not all years in order, or whose columns hold
    years below it too, stays a row."""
    from core.preview import inspect_source

    below = "1990,1991,1992,1993" if first == "1960,1961,1962,1963" else "1.5,2.5,3.5,4.5"
    path = _write(tmp_path / "numbers.csv", (first + "\n" + "\n".join([below] * 5) + "\n").encode())
    assert inspect_source(SourceOptions(str(path))).options.header is False


def test_names_longer_than_postgres_keeps_make_a_table_and_load_into_it_again(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
) -> None:
    """PostgreSQL keeps 63 bytes of a name: a spreadsheet's long headers (two alike for their
    first 63 bytes, one of multi-byte letters) make columns it keeps, and the next load of the same
    file finds them."""
    long_a = "Percentage of population aged 16 up to pension age in the year of the census"
    long_b = "Percentage of population aged 16 up to pension age in the year of the survey"
    accented = "Année de référence " * 5
    path = _write(tmp_path / "long.csv", (f'"{long_a}","{long_b}","{accented}",id\n1.5,2.5,x,1\n3.5,4.5,y,2\n').encode())
    table = table_name("long")
    assert _load(dsn, path, table, "auto", mode=LoadMode.CREATE).rows_loaded == 2
    names = [r[0] for r in conn.execute("SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 "
                                        "ORDER BY attnum", [table]).fetchall()]
    assert len(set(names)) == 4 and all(len(n.encode()) <= 63 for n in names)
    assert names[0] == long_a.encode()[:63].decode() and names[1].endswith("_2") and names[3] == "id"
    assert _load(dsn, path, table, "copy-csv").rows_loaded == 2  # appended, the columns found by the same names
    assert conn.execute(sql.SQL("SELECT count(*), sum(id) FROM {}").format(sql.Identifier(table))).fetchone() == (4, 6)


def test_create_widens_a_column_whose_later_values_its_first_rows_did_not_show(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
) -> None:
    """statsmodels' randhie.csv: integers for 1,165 lines, then `.12982`. The type came from the
    first rows; the value it refuses widens the new table's column (and one of dates that turns to
    words, text), and the load starts again: every value as the file has it."""
    lines = ["id,amount,day,big"]
    for i in range(3000):
        amount = ".12982" if i == 1500 else str(i % 7)
        day = "unknown" if i == 2200 else f"2020-01-{1 + i % 28:02d}"
        big = "9999999999" if i == 2600 else str(i)
        lines.append(f"{i},{amount},{day},{big}")
    path = _write(tmp_path / "later.csv", ("\n".join(lines) + "\n").encode())
    table = table_name("later")
    logs: list[str] = []
    spec = LoadSpec(SourceOptions(str(path)), TargetSpec(table, mode=LoadMode.CREATE), dsn=dsn)
    assert LoadJob(spec, on_log=logs.append).run().rows_loaded == 3000
    types = dict(conn.execute("SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
                              "WHERE attrelid = %s::regclass AND attnum > 0", [table]).fetchall())
    assert types == {"id": "integer", "amount": "numeric", "day": "text", "big": "numeric"}
    assert sum("does not fit" in line for line in logs) == 3
    got = conn.execute(sql.SQL("SELECT amount::text, day, big::text FROM {} WHERE id IN (1500, 2200, 2600) "
                               "ORDER BY id").format(sql.Identifier(table))).fetchall()
    assert got == [(".12982".replace(".", "0.", 1), "2020-01-17", "1500"), ("2", "unknown", "2200"),
                   ("3", "2020-01-25", "9999999999")]


def test_an_existing_table_is_never_widened(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
) -> None:
    path = _write(tmp_path / "later.csv", b"id,amount\n1,2\n2,.5\n")
    table = table_name("kept")
    conn.execute(sql.SQL("CREATE TABLE {} (id integer, amount integer)").format(sql.Identifier(table)))
    with pytest.raises(SluiceError):
        _load(dsn, path, table, "auto")
    assert conn.execute(sql.SQL("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = "
                                "%s::regclass AND attname = 'amount'"), [table]).fetchone() == ("integer",)


def _r_write_table(path: Path) -> Path:
    """As R's write.table(row.names = FALSE) writes a data frame: single spaces, strings quoted."""
    lines = ['"popul" "TVnews" "name" "vote"']
    lines += [f'{i * 37 % 500} {i % 8} "{"Jo Ann" if i % 3 else "Lee"}" {i % 2}' for i in range(60)]
    return _write(path, ("\n".join(lines) + "\n").encode())


def test_a_table_written_with_single_spaces_is_split_at_them(
    dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str], tmp_path: Path,
) -> None:
    from core.preview import inspect_source

    path = _r_write_table(tmp_path / "anes.txt")
    info = inspect_source(SourceOptions(str(path)))
    assert info.options.delimiter == " " and info.columns == ["popul", "TVnews", "name", "vote"]
    table = table_name("spaced")
    assert _load(dsn, path, table, "auto", mode=LoadMode.CREATE).rows_loaded == 60
    assert conn.execute(sql.SQL("SELECT name, vote FROM {} WHERE popul = 37").format(
        sql.Identifier(table))).fetchall() == [("Jo Ann", 1)]


@pytest.mark.parametrize("text", [
    "Ann Lee\nBo Chen\nCy Diaz\nDee Ng\nEd Ford\nFay Gu\n",  # names: two words a line, no numbers
    "the cat sat on\nthe mat and then\nslept all day long\nwhile it rained\nand rained on\nthe roof\n",
])
def test_lines_of_words_stay_one_column(text: str, tmp_path: Path) -> None:
    from core.preview import inspect_source

    path = _write(tmp_path / "words.txt", text.encode())
    assert inspect_source(SourceOptions(str(path))).options.delimiter != " "
