"""Invariant 2, generated: random tables of tricky values survive every table strategy unchanged.

test_fidelity.py loads one fixed tricky file; here hypothesis writes the rows. The same values go
into a reference table by parameterised INSERTs (never the code under test), and the loaded table
must equal it as a multiset (EXCEPT ALL both ways, so NaN = NaN as PostgreSQL compares) and also
as text, which catches what `=` forgives (-0.0 vs 0.0, a numeric's scale).
"""

from __future__ import annotations

import csv
import json
import os
import uuid
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import sql
from psycopg.types.json import Jsonb

from core.load.job import LoadJob
from core.spec import ColumnMap, LoadSpec, SourceOptions, TargetSpec
from core.strategies.catalogue import all_strategies
from tests.core import tricky

TABLE_STRATEGIES = [c.id for c in all_strategies() if not c.script_only]
EXAMPLES = int(os.environ.get("SLUICE_PROPERTY_EXAMPLES", "8"))  # per strategy and server; raise it to hunt

COLUMNS = [
    ("t", "text"),
    ("big", "bigint"),
    ("num", "numeric"),
    ("f", "double precision"),
    ("b", "boolean"),
    ("d", "date"),
    ("ts", "timestamptz"),
    ("j", "jsonb"),
]

MARKER = "\\N"  # the explicit null marker of the python-csv and postgres-csv-marker file styles

# -- values ---------------------------------------------------------------------------------

_CHARS = st.characters(codec="utf-8", exclude_characters="\x00")  # text cannot hold NUL
_NASTY = ['"', ",", '""', '","', "\n", "\r", "\r\n", "\t", "\\", "\\\\", "\\.", "\\N", "NULL", "NA", " ", " x ",
          "🎉", "café", "a\rb", "\na", "'", "#N/A", "null"]
texts = st.one_of(st.sampled_from(_NASTY), st.text(_CHARS, max_size=30),
                  st.lists(st.sampled_from(_NASTY), max_size=4).map("".join))
numerics = st.one_of(
    st.builds(lambda n, k: Decimal(n).scaleb(-k), st.integers(-(10**20) + 1, 10**20 - 1), st.integers(0, 12)),
    st.sampled_from([Decimal("NaN"), Decimal("-0"), Decimal("0.000"), Decimal("1E+5")]),
)
offsets = st.integers(-14 * 60, 14 * 60).map(lambda m: timezone(timedelta(minutes=m)))
timestamps = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=offsets)
json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False, allow_infinity=False),
    st.text(_CHARS, max_size=10),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(_CHARS, max_size=5), inner, max_size=4)),
    max_leaves=8,
).filter(lambda v: isinstance(v, dict | list))

row_values = st.tuples(
    st.none() | texts,
    st.none() | st.integers(-(2**63), 2**63 - 1),
    st.none() | numerics,
    st.none() | st.floats(),  # inf, -inf, nan, -0.0, subnormals
    st.none() | st.booleans(),
    st.none() | st.dates(),
    st.none() | timestamps,
    st.none() | json_values,
)

# Python's csv module (3.11) writes None and "" alike, so the python-csv style marks NULL as \N; the file
# then cannot hold the text \N at all (it reads back as NULL), so that one value is left out of it.
# The postgres-csv styles follow COPY's own CSV rule (3.12's csv.QUOTE_NOTNULL): every non-NULL value quoted,
# NULL an empty unquoted field, or an unquoted \N with the marker, so "" and NULL stay apart.
STYLES = ["python-csv", "postgres-csv", "postgres-csv-marker"]


@st.composite
def tables(draw: st.DrawFn) -> tuple[str, list[tuple[Any, ...]]]:
    style = draw(st.sampled_from(STYLES))
    rows = draw(st.lists(row_values, max_size=40))
    if style == "python-csv":
        # csv.writer cannot quote "\N" apart from the marker, so that file cannot hold the text \N.
        rows = [(None, *r[1:]) if r[0] == MARKER else r for r in rows]
    return style, rows


# -- the file and the reference ---------------------------------------------------------------


def _cell(v: Any) -> Any:
    """What a user's program hands to the csv module: Python values, JSON as its text."""
    return json.dumps(v, ensure_ascii=False) if isinstance(v, dict | list) else v


def write_file(path: Path, style: str, rows: list[tuple[Any, ...]]) -> SourceOptions:
    with open(path, "w", encoding="utf-8", newline="") as f:
        if style == "python-csv":
            w = csv.writer(f)  # QUOTE_MINIMAL, "\r\n" line ends: the module's defaults
            w.writerow([n for n, _ in COLUMNS])
            w.writerows([MARKER if v is None else _cell(v) for v in r] for r in rows)
            null = MARKER
        else:
            null_cell = MARKER if style == "postgres-csv-marker" else ""
            f.write(",".join(n for n, _ in COLUMNS) + "\n")
            for r in rows:
                cells = (null_cell if v is None else '"' + str(_cell(v)).replace('"', '""') + '"' for v in r)
                f.write(",".join(cells) + "\n")
            null = MARKER if style == "postgres-csv-marker" else ""
    # Explicit dialect: nothing is sniffed, so a text column full of "NULL" cannot turn into NULLs.
    return SourceOptions(path=str(path), format="csv", delimiter=",", quote='"', header=True, encoding="utf-8",
                         null=null)


def create(conn: psycopg.Connection[Any], table: str) -> None:
    cols = sql.SQL(", ").join(sql.SQL("{} {}").format(sql.Identifier(n), sql.SQL(t)) for n, t in COLUMNS)
    conn.execute(sql.SQL("CREATE TABLE {} ({})").format(sql.Identifier(table), cols))


def fill_reference(conn: psycopg.Connection[Any], table: str, rows: list[tuple[Any, ...]]) -> None:
    create(conn, table)
    stmt = sql.SQL("INSERT INTO {} VALUES ({})").format(
        sql.Identifier(table), sql.SQL(", ").join(sql.Placeholder() * len(COLUMNS))
    )
    params = [[Jsonb(v) if isinstance(v, dict | list) else v for v in r] for r in rows]
    if params:
        conn.cursor().executemany(stmt, params)


def text_diff_count(conn: psycopg.Connection[Any], a: str, b: str) -> tuple[int, int]:
    """As tricky.diff_count, on each row's text form: -0 is not 0 there, nor 1.50 the same as 1.5."""
    q = sql.SQL("SELECT count(*) FROM (SELECT x::text FROM {} x EXCEPT ALL SELECT y::text FROM {} y) z")
    one = conn.execute(q.format(sql.Identifier(a), sql.Identifier(b))).fetchone()
    two = conn.execute(q.format(sql.Identifier(b), sql.Identifier(a))).fetchone()
    assert one is not None and two is not None
    return int(one[0]), int(two[0])


def _drop(conn: psycopg.Connection[Any], *names: str) -> None:
    for n in names:
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(n)))


# -- the property ---------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", TABLE_STRATEGIES)
@settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=tables(), mapped=st.booleans())
def test_random_tables_round_trip(
    strategy: str, table: tuple[str, list[tuple[Any, ...]]], mapped: bool, dsn: str, conn: psycopg.Connection[Any],
    table_name: Callable[[str], str], tmp_path: Path,
) -> None:
    """`mapped` reverses the column order, so copy-csv and parallel-copy parse instead of passing bytes."""
    style, rows = table
    ref, target = table_name("pref"), table_name("pload")  # dropped below; table_name drops them again at teardown
    try:
        fill_reference(conn, ref, rows)
        create(conn, target)
        source = write_file(tmp_path / f"{uuid.uuid4().hex}.csv", style, rows)
        maps = [ColumnMap(target=n, source=n, type=t) for n, t in reversed(COLUMNS)] if mapped else None
        spec = LoadSpec(source=source, target=TargetSpec(table=target), strategy=strategy, batch_rows=7, dsn=dsn,
                        columns=maps)
        result = LoadJob(spec).run()
        assert (result.rows_loaded, result.rows_rejected) == (len(rows), 0)
        assert tricky.diff_count(conn, ref, target) == (0, 0)
        assert text_diff_count(conn, ref, target) == (0, 0)
    finally:
        _drop(conn, ref, target)


@pytest.mark.parametrize(
    ("strategy", "mapped"),
    [
        pytest.param(s, mapped) for s in TABLE_STRATEGIES
        for mapped in (False, True)
    ],
)
def test_quoted_null_marker_is_text(
    strategy: str, mapped: bool, dsn: str, conn: psycopg.Connection[Any], table_name: Callable[[str], str],
    tmp_path: Path,
) -> None:
    """Once a bug hypothesis found: one row, t = the text \\N written quoted, NULL marker \\N.

    The file is `t,big,...` then `"\\N",\\N,\\N,\\N,\\N,\\N,\\N,\\N` - as PostgreSQL's own
    COPY TO (FORMAT csv, NULL '\\N') writes it.
    """
    rows: list[tuple[Any, ...]] = [(MARKER, None, None, None, None, None, None, None)]
    ref, target = table_name("pref"), table_name("pload")
    fill_reference(conn, ref, rows)
    create(conn, target)
    source = write_file(tmp_path / "marker.csv", "postgres-csv-marker", rows)
    maps = [ColumnMap(target=n, source=n, type=t) for n, t in reversed(COLUMNS)] if mapped else None
    spec = LoadSpec(source=source, target=TargetSpec(table=target), strategy=strategy, batch_rows=7, dsn=dsn,
                    columns=maps)
    assert LoadJob(spec).run().rows_loaded == 1
    assert tricky.diff_count(conn, ref, target) == (0, 0)


def test_generated_values_reach_the_reference_unchanged(conn: psycopg.Connection[Any],
                                                        table_name: Callable[[str], str]) -> None:
    """The reference itself: what the INSERTs store reads back as the Python values (no silent coercion)."""
    ts = datetime(2024, 3, 10, 2, 30, tzinfo=timezone(timedelta(hours=5, minutes=30)))
    row = ("", -(2**63), Decimal("-0.000"), float("-inf"), False, date(1, 1, 1), ts, {"k": ["ü🎉", None]})
    ref = table_name("pref")
    fill_reference(conn, ref, [row])
    got = conn.execute(sql.SQL("SELECT * FROM {}").format(sql.Identifier(ref))).fetchone()
    assert got is not None
    assert got[:6] == row[:6] and got[6] == ts.astimezone(UTC) and got[7] == row[7]
