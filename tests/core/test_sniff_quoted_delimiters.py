"""A NULL marker in a file whose every record quotes a delimiter (R's and Python's writers quote
"Adult, 1 Egg Stage"; palmerpenguins' penguins-raw.csv): it is sniffed, so the numbers are numbers."""

from __future__ import annotations

import csv
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core.preview import inspect_source
from core.spec import SourceOptions


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_marker_among_numbers_is_seen_past_quoted_delimiters(seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    path = tmp_path / "raw.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)  # quotes only the fields that hold a comma, as R's write.csv and pandas do
        w.writerow(["study", "stage", "mass", "sex", "comments"])
        for i in range(200):
            w.writerow([f"PAL{i % 3}", f"Adult, {rng.randrange(1, 3)} Egg Stage",
                        "NA" if i % 17 == 0 else str(rng.randrange(2700, 6300)),
                        rng.choice(["MALE", "FEMALE", "NA"]),
                        rng.choice(["NA", "Not enough blood, for isotopes", "Nest never observed"])])
    info = inspect_source(SourceOptions(str(path)))
    assert info.options.null == "NA"
    assert dict(zip(info.columns, info.types))["mass"] == "integer"
    assert info.options.null_columns is not None and "mass" in info.options.null_columns
    assert "sex" not in info.options.null_columns and "comments" not in info.options.null_columns
    assert "kept as text in study, sex" in info.null_kept_note()


def _quoted_but_nulls(path: Path, rng: random.Random, *, quote_nulls: bool) -> list[tuple[str | None, ...]]:
    """A file as polars writes it with quote_style="non_numeric" from columns of text: every value
    quoted, numbers and dates too, the nulls bare `NA` (or, `quote_nulls`, "NA" quoted as well)."""
    import datetime as dt

    import polars as pl

    rows = [(None if i % 11 == 0 else dt.date(1950, 1, 1) + dt.timedelta(days=rng.randrange(30_000)),
             None if i % 13 == 0 else rng.choice(["alpha", "beta, gamma", "NA"]),
             None if i % 7 == 0 else rng.randrange(10**6)) for i in range(300)]
    frame = pl.DataFrame(rows, schema={"day": pl.Date, "word": pl.String, "n": pl.Int64}, orient="row")
    if quote_nulls:
        frame.with_columns(pl.all().cast(pl.String).fill_null("NA")).write_csv(path, quote_style="always")
    else:
        frame.with_columns(pl.all().cast(pl.String)).write_csv(path, quote_style="non_numeric", null_value="NA")
    return [(None if d is None else d.isoformat(), w, None if n is None else str(n)) for d, w, n in rows]


def test_a_bare_marker_among_quoted_values_is_the_writers_null(tmp_path: Path) -> None:
    """Dates and words all quoted, `NA` alone bare: the writer's null, in every column; a quoted
    "NA" (the word, Namibia's code) stays a value."""
    path = tmp_path / "nonnumeric.csv"
    _quoted_but_nulls(path, random.Random(4), quote_nulls=False)
    info = inspect_source(SourceOptions(str(path)))
    assert info.options.null == "NA" and info.options.null_columns is None
    assert dict(zip(info.columns, info.types)) == {"day": "date", "word": "text", "n": "integer"}


@pytest.mark.parametrize("strategy", ["auto", "copy-csv", "copy-binary"])
def test_such_a_file_loads_its_nulls_and_its_words(strategy: str, dsn: str, conn: Any,
                                                   table_name: Callable[[str], str], tmp_path: Path) -> None:
    from psycopg import sql

    from core.load.job import LoadJob
    from core.spec import LoadSpec, TargetSpec

    path = tmp_path / "nonnumeric.csv"
    expected = _quoted_but_nulls(path, random.Random(6), quote_nulls=False)
    table = table_name("nonnumeric")
    conn.execute(sql.SQL("CREATE TABLE {} (day date, word text, n bigint)").format(sql.Identifier(table)))
    LoadJob(LoadSpec(SourceOptions(str(path)), TargetSpec(table), strategy=strategy, dsn=dsn)).run()
    got = conn.execute(sql.SQL("SELECT day::text, word, n::text FROM {}").format(sql.Identifier(table))).fetchall()
    assert sorted(got, key=repr) == sorted(expected, key=repr)
    assert ("NA" in {w for _d, w, _n in got}) and (None in {w for _d, w, _n in got})


def test_every_value_quoted_has_no_marker(tmp_path: Path) -> None:
    """Every value quoted, "NA" among them: nothing says it is a null, so it stays text."""
    path = tmp_path / "always.csv"
    _quoted_but_nulls(path, random.Random(5), quote_nulls=True)
    assert inspect_source(SourceOptions(str(path))).options.null == ""


def test_a_bare_word_beside_one_quoted_value_is_not_enough(tmp_path: Path) -> None:
    path = tmp_path / "thin.csv"
    path.write_text('code,n\nNA,1\n"US",2\nNA,3\n', encoding="utf-8")
    assert inspect_source(SourceOptions(str(path))).options.null == ""
