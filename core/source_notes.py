"""What a load says of its source before it starts: the NULL marker (the columns where it reads
as NULL, those where it stays text, and how to change that) and the value formats (the log's
first lines, --json `null_marker` and `value_formats`, the window's source panel).

A sniffed marker (`NA`, `\\N`, `NULL`...) is kept off columns of unquoted free text, where the
same word can be a value (NA is Namibia's code; a tail number may be "NA"). That rule is sound,
but a person must be told which columns it kept the word in, and how many times it stood there.
Counts come from the file's first records (the sniffer's sample), so they say "in the first N rows".
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from typing import Any

from core.sources.base import Source

COUNT_BYTES = 1 << 20  # the records counted: the file's first megabyte


@dataclass(frozen=True)
class NullReport:
    marker: str
    applied: list[str]  # columns where the marker reads as NULL
    kept: list[str]  # columns where it is loaded as text
    counts: dict[str, int] = field(default_factory=dict)  # column -> times the marker stood there, in the sample
    sample_rows: int = 0  # records counted (0: no counts)
    whole_file: bool = False  # the sample was the whole file
    given: bool = False  # the user named the marker (--null): it applies everywhere

    def to_json(self) -> dict[str, Any]:
        return {"marker": self.marker, "applied_to": self.applied, "kept_as_text_in": self.kept,
                "counts": self.counts, "counted_rows": self.sample_rows, "counted_whole_file": self.whole_file}

    def lines(self) -> list[str]:
        """The log's lines: where it applied, where it did not, and how to change that."""
        where = "the whole file" if self.whole_file else f"the first {self.sample_rows:,} rows"

        def named(cols: list[str]) -> str:
            shown = [f"{c} ({self.counts[c]:,}×)" if self.counts.get(c) else c for c in cols[:12]]
            return ", ".join(shown) + (f" and {len(cols) - 12} more" if len(cols) > 12 else "")

        how = "given" if self.given else "sniffed"
        counted = f" (× counted in {where})" if self.counts else ""
        out = [f"NULL marker {self.marker!r} ({how}): read as NULL in {named(self.applied) or 'no column'}{counted}"]
        if self.kept:
            out.append(f"NULL marker {self.marker!r} kept as text in {named(self.kept)}: columns of free text, where "
                       f"it can be a value; --null {_shell(self.marker)} (the window: NULL everywhere) reads it "
                       "as NULL in every column")
        return out

    def note(self) -> str:
        """One line for the window's source panel."""
        many = "s" if len(self.applied) != 1 else ""
        text = f"NULL marker {self.marker!r} read as NULL in {len(self.applied)} column{many}"
        if self.kept:
            counts = [f"{c} ({self.counts[c]:,}×)" if self.counts.get(c) else c for c in self.kept]
            text += f"; kept as text in {', '.join(counts)}"
        return text


def report(source: Source) -> NullReport | None:
    """The source's NULL marker in words; None when it has none beyond PostgreSQL's empty field."""
    dialect = getattr(source, "dialect", None)
    marker = getattr(dialect, "null", "") if dialect is not None else ""
    if not marker:
        return None
    columns = source.columns()
    null_columns = getattr(source, "null_columns", None)
    applied = list(columns) if null_columns is None else [c for c in columns if c in set(null_columns)]
    kept = [c for c in columns if c not in set(applied)]
    counts, rows, whole = _count(source, marker, columns)
    given = bool(source.options.null)
    return NullReport(marker, applied, kept, counts, rows, whole, given)


def _count(source: Source, marker: str, columns: list[str]) -> tuple[dict[str, int], int, bool]:
    """Times the marker stands as a whole field per column in the first records (unquoted or not)."""
    inner = getattr(source, "inner", source)  # a formatted source hides the file's own records
    raw = getattr(inner, "raw_chunks", None)
    dialect = getattr(inner, "dialect", None)
    if raw is None or dialect is None:
        return {}, 0, False
    from core.errors import SourceError

    try:
        chunk = next(iter(raw(COUNT_BYTES, tolerant=True)), None)
    except SourceError:
        return {}, 0, False
    if chunk is None:
        return {}, 0, True
    text = chunk.data.decode("utf-8", errors="replace")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=dialect.delimiter, quotechar=dialect.quote or '"')
    counts = dict.fromkeys(columns, 0)
    rows = 0
    try:
        for record in reader:
            rows += 1
            for c, v in zip(columns, record):
                if v == marker:
                    counts[c] += 1
    except csv.Error:
        pass
    return {c: n for c, n in counts.items() if n}, rows, chunk.bytes_read >= source.size


def _shell(text: str) -> str:
    """The marker as a shell argument (\\N needs quotes)."""
    return text if text.isalnum() else "'" + text.replace("'", "'\\''") + "'"


@dataclass(frozen=True)
class Said:
    """What the log's first lines said of the source: its NULL marker and its value formats."""

    null_marker: dict[str, Any] | None
    formats: dict[str, str] | None


def say_source(plan: Any, log: Any) -> Said:
    """Log where the table starts and what its header leaves out, the NULL marker (where it
    applied, where not, how to change it) and the value formats."""
    dialect = getattr(plan.source, "dialect", None)  # a CSV file's (core.sources.sniff.CsvDialect)
    n = getattr(dialect, "skip_lines", 0)
    if n:
        log(f"the table starts at line {n + 1}: the {n} lines above it are notes, not loaded "
            "(untick Header, or --no-header, to read the file from its first line)")
    if getattr(dialect, "row_names", False):
        log("the header names every column but the first (R's row names): that column loads as row_names")
    found = report(plan.source)
    if found is not None:
        for line in found.lines():
            log(line)
    formats = {m.source: m.format for m in plan.maps if m.include and m.source is not None and m.format}
    if formats:
        shown = ", ".join(f"{c} {f}" for c, f in formats.items())
        log(f"value formats: {shown} (change or clear one in the mapping's Format column, or with "
            "--column-format COL=FORMAT; COL= loads it as written)")
    return Said(None if found is None else found.to_json(), formats or None)
