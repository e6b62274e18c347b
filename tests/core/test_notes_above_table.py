"""Files whose table sits under lines of notes (a statistics office's title, source and units, as
BLS and the UK's ONS write them): the table is found below the notes and loads, its lines still
counted from the top of the file. Such a file loaded nothing before (its notes were the header)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from psycopg import sql

from core.errors import SluiceError
from core.load.job import LoadJob
from core.preview import inspect_source
from core.sources.sniff import sniff_csv
from core.spec import LoadSpec, SourceOptions, TargetSpec
from tests.core.test_row_names import create_from

# As the BLS writes a series (statsmodels ships one): notes, blank lines, then a header that ends
# in a delimiter over records that do not.
BLS_NOTES = """Series Id:           LNS14000000Q

Seasonally Adjusted
Series title:        (Seas) Unemployment Rate
Age:                 16 years and over


Series id,Year,Period,Value,
"""
BLS_ROWS = [("LNS14000000Q", 1959 + i // 4, f"Q0{i % 4 + 1}", f"{5 + i % 7}.{i % 10}") for i in range(40)]
BLS = BLS_NOTES + "".join(f"{s},{y},{p},{v}\n" for s, y, p, v in BLS_ROWS)

# As an ONS download: key, value notes, one of them quoted over several lines, then the table.
ONS = '''Dataset Name:,"RT331601"
Title:,"Area and population, 1996"
Description:,"Area and population

compiled from Regional Trends 33."
====================================
Table
"Area","Population","Density"
''' + "".join(f'"Area {i}",{1000 + i},{i * 1.5}\n' for i in range(12))


def test_the_table_under_the_notes_is_found(tmp_path: Path) -> None:
    path = tmp_path / "bls.csv"
    path.write_text(BLS, encoding="utf-8")
    d = sniff_csv(str(path))
    assert (d.delimiter, d.header, d.skip_lines, d.extra_name) == (",", True, 7, True)
    assert inspect_source(SourceOptions(str(path))).columns == ["Series id", "Year", "Period", "Value"]

    path = tmp_path / "ons.csv"
    path.write_text(ONS, encoding="utf-8")
    d = sniff_csv(str(path))
    assert (d.header, d.skip_lines, d.extra_name) == (True, 7, False)  # the quoted note spans three lines
    assert inspect_source(SourceOptions(str(path))).columns == ["Area", "Population", "Density"]


@pytest.mark.parametrize("text", [
    "a,b,c\n" + "".join(f"{i},{i},{i}\n" for i in range(10)),
    "title\n" + "a,b\n1,2\n",  # too short to tell a table from notes
])
def test_a_file_that_starts_with_its_table_has_no_notes(tmp_path: Path, text: str) -> None:
    path = tmp_path / "f.csv"
    path.write_text(text, encoding="utf-8")
    assert sniff_csv(str(path)).skip_lines == 0


@pytest.mark.parametrize("strategy", ["auto", "copy-csv", "copy-binary", "parallel-copy", "executemany"])
def test_the_table_loads_every_row_exactly(strategy: str, dsn: str, conn: Any,
                                           table_name: Callable[[str], str], tmp_path: Path) -> None:
    table = table_name("bls")
    said = create_from(BLS, tmp_path / "bls.csv", table, strategy, dsn)
    assert any(line.startswith("the table starts at line 8: the 7 lines above it are notes") for line in said)
    got = conn.execute(sql.SQL('SELECT "Series id", "Year", "Period", "Value"::text FROM {} ORDER BY 2, 3')
                       .format(sql.Identifier(table))).fetchall()
    assert got == BLS_ROWS


@pytest.mark.parametrize("strategy", ["copy-csv", "copy-binary"])
def test_a_bad_value_names_its_line_in_the_file(strategy: str, dsn: str, conn: Any,
                                                table_name: Callable[[str], str], tmp_path: Path) -> None:
    path = tmp_path / "ons.csv"
    lines = ONS.splitlines(keepends=True)
    lines[12] = '"Area x",12x,3.0\n'  # line 13 of the file: the table's fifth record
    path.write_text("".join(lines), encoding="utf-8")
    table = table_name("ons")
    conn.execute(sql.SQL('CREATE TABLE {} ("Area" text, "Population" integer, "Density" numeric)')
                 .format(sql.Identifier(table)))
    with pytest.raises(SluiceError, match=r"line 13\b"):
        LoadJob(LoadSpec(SourceOptions(str(path)), TargetSpec(table), strategy=strategy, dsn=dsn)).run()


@pytest.mark.parametrize("text", [
    # ragged first rows of numbers: refused at their lines, never skipped as notes
    "1,2\n3\n" + "".join(f"{i},{i},{i}\n" for i in range(10)),
    # the table's first record is a row, not a header
    "Title\n" + "".join(f"{i},{i},{i}\n" for i in range(10)),
    # a "note" as wide as the table
    "a,b,c\nTitle\n" + "".join(f"{i},{i},{i}\n" for i in range(10)),
])
def test_rows_are_never_taken_for_notes(tmp_path: Path, text: str) -> None:
    path = tmp_path / "f.csv"
    path.write_text(text, encoding="utf-8")
    assert sniff_csv(str(path)).skip_lines == 0
