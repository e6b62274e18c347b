"""R's write.table with row names (its default) writes a header one field short: the row names
stand first in every record, without a name. Such a file loads with that column named row_names;
a file whose data lines merely end in a delimiter is still refused at its first line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from psycopg import sql

from core.errors import SluiceError
from core.load.job import LoadJob
from core.sources.sniff import sniff_csv
from core.spec import LoadMode, LoadSpec, SourceOptions, TargetSpec

# write.table(head(mtcars, 6)[, 1:4], "mtcars.txt"): space-separated, strings quoted.
MTCARS = '''"mpg" "cyl" "disp" "hp"
"Mazda RX4" 21 6 160 110
"Mazda RX4 Wag" 21 6 160 110
"Datsun 710" 22.8 4 108 93
"Hornet 4 Drive" 21.4 6 258 110
"Hornet Sportabout" 18.7 8 360 175
"Valiant" 18.1 6 225 105
'''
MTCARS_ROWS = [("Mazda RX4", "21", 6, 160, 110), ("Mazda RX4 Wag", "21", 6, 160, 110),
               ("Datsun 710", "22.8", 4, 108, 93), ("Hornet 4 Drive", "21.4", 6, 258, 110),
               ("Hornet Sportabout", "18.7", 8, 360, 175), ("Valiant", "18.1", 6, 225, 105)]
# write.table(d, "d.csv", sep = ","): the same shape with commas, a comma inside a quoted value, NA.
COMMAS = '"x","y","label"\n' + "".join(
    f'"{i}",{x},{i + 1},"{label}"\n' for i, x, label in
    [(1, "0.5", "a, b"), (2, "1.5", "c"), (3, "NA", "d"), (4, "2.5", "e"), (5, "3.5", "f"), (6, "4.5", "g")])
# Every data line ends in a delimiter, the header does not: not row names.
TRAILING = "a,b\n" + "".join(f"{i},{i * 2},\n" for i in range(1, 7))


@pytest.mark.parametrize(("text", "delimiter"), [(MTCARS, " "), (COMMAS, ",")])
def test_a_header_one_short_names_the_row_names(tmp_path: Path, text: str, delimiter: str) -> None:
    path = tmp_path / "r.txt"
    path.write_text(text, encoding="utf-8")
    d = sniff_csv(str(path))
    assert (d.delimiter, d.header, d.row_names) == (delimiter, True, True)


@pytest.mark.parametrize("text", [
    TRAILING,
    '"","x","y"\n' + "".join(f'"{i}",{i},{i * 2}\n' for i in range(1, 7)),  # write.csv: the name is ""
    "a,b,c\n" + "".join(f"{i},{i},{i}\n" for i in range(1, 7)),
    "a,b\n1,2,3\n4,5,6\n",  # too few records to tell
])
def test_other_files_have_no_row_names(tmp_path: Path, text: str) -> None:
    path = tmp_path / "f.csv"
    path.write_text(text, encoding="utf-8")
    assert not sniff_csv(str(path)).row_names


def create_from(text: str, path: Path, table: str, strategy: str, dsn: str) -> list[str]:
    """Write `text` to `path` and load it into a new table; the load's log lines."""
    path.write_text(text, encoding="utf-8")
    said: list[str] = []
    LoadJob(LoadSpec(SourceOptions(str(path)), TargetSpec(table, mode=LoadMode.CREATE), strategy=strategy,
                     dsn=dsn), on_log=said.append).run()
    return said


@pytest.mark.parametrize("strategy", ["auto", "copy-csv", "copy-binary", "executemany"])
def test_r_files_load_with_their_row_names(strategy: str, dsn: str, conn: Any,
                                           table_name: Callable[[str], str], tmp_path: Path) -> None:
    table = table_name("mtcars")
    said = create_from(MTCARS, tmp_path / "mtcars.txt", table, strategy, dsn)
    assert any("R's row names" in line for line in said)
    ident = sql.Identifier(table)
    got = conn.execute(sql.SQL("SELECT row_names, mpg::text, cyl, disp, hp FROM {} ORDER BY row_names")
                       .format(ident)).fetchall()
    assert got == sorted(MTCARS_ROWS)

    table = table_name("commas")
    create_from(COMMAS, tmp_path / "commas.csv", table, strategy, dsn)
    got = conn.execute(sql.SQL("SELECT row_names::text, x::text, y, label FROM {} ORDER BY 1")
                       .format(sql.Identifier(table))).fetchall()
    assert got == [("1", "0.5", 2, "a, b"), ("2", "1.5", 3, "c"), ("3", None, 4, "d"), ("4", "2.5", 5, "e"),
                   ("5", "3.5", 6, "f"), ("6", "4.5", 7, "g")]


def test_a_delimiter_ending_each_data_line_is_still_refused_at_its_line(
        dsn: str, table_name: Callable[[str], str], tmp_path: Path) -> None:
    path = tmp_path / "trailing.csv"
    path.write_text(TRAILING, encoding="utf-8")
    with pytest.raises(SluiceError, match="line 2.*3 fields, expected 2"):
        LoadJob(LoadSpec(SourceOptions(str(path)), TargetSpec(table_name("trail"), mode=LoadMode.CREATE),
                         strategy="copy-csv", dsn=dsn)).run()
