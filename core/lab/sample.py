"""The lab's own copy of the first rows of the user's file, which every strategy then loads alike,
and errors worded in the user's terms (their file and row, not the lab's temporary copy)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from core import mapping as mp
from core.plan import plan_load
from core.sources.abilities import InsertScript
from core.spec import ColumnMap, LoadSpec, SourceOptions

_SAMPLE_PATH = re.compile(r"\S*sluice-(?:cmp|probe)-[^/\\]+[/\\]sample\.(csv|sql)(?:, line (\d+))?")


def in_users_words(message: str, source: str) -> str:
    """A run's error names the lab's own copy of the first rows (a temporary file) and its line:
    say the user's file, and the data row (a CSV copy has a header; a script copy one INSERT a line)."""
    name = Path(source).name

    def words(m: re.Match[str]) -> str:
        row = int(m.group(2)) - (1 if m.group(1) == "csv" else 0) if m.group(2) else None
        return f"{name} (rows the lab copied)" + (f", row {row}" if row is not None else "")

    return _SAMPLE_PATH.sub(words, message)


def write_sample(base: LoadSpec, rows: int, folder: Path) -> tuple[SourceOptions, int]:
    """The first `rows` rows as a CSV file that every strategy then loads alike.

    An INSERT script stays a script (one INSERT per row), so the script strategies
    can replay it; every other strategy reads the same rows from it too.
    """
    plan = plan_load(base)
    if plan.source.format == "sql":
        return _write_script_sample(plan.source, rows, folder)
    path = folder / "sample.csv"
    taken = 0
    with open(path, "wb") as f:
        f.write((",".join(_csv_field(c) for c in plan.source.columns()) + "\n").encode())
        for batch in plan.source.batches(min(rows, 50_000)):
            part = mp.apply(batch.frame, [ColumnMap(c, c) for c in plan.source.columns()]).head(rows - taken)
            f.write(part.write_csv(include_header=False).encode())
            taken += part.height
            if taken >= rows:
                break
    return SourceOptions(str(path), format="csv", delimiter=",", quote='"', header=True, encoding="utf-8",
                         null=""), taken


def _write_script_sample(source: Any, rows: int, folder: Path) -> tuple[SourceOptions, int]:
    path = folder / "sample.sql"
    cols = source.columns()
    # A data file, not SQL this process runs: the load parses it back as literals, like any script.
    head = "INSERT INTO " + _sql_ident(source.target.table)
    if source.has_column_list:
        head += " (" + ", ".join(_sql_ident(c) for c in cols) + ")"
    tail = " ON CONFLICT DO NOTHING" if isinstance(source, InsertScript) and source.on_conflict else ""
    taken = 0
    with open(path, "w", encoding="utf-8") as f:
        for batch in source.batches(min(rows, 50_000)):
            for row in batch.frame.head(rows - taken).iter_rows():
                f.write(f"{head} VALUES ({', '.join(_sql_literal(v) for v in row)}){tail};\n")
                taken += 1
            if taken >= rows:
                break
    return SourceOptions(str(path), format="sql", encoding="utf-8"), taken


def _sql_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _sql_literal(value: object) -> str:
    return "NULL" if value is None else "'" + str(value).replace("'", "''") + "'"


def _csv_field(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'
