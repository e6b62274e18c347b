"""A CSV file's header: where its table starts (below any lines of notes) and what its columns are
called. CsvSource reads it once; its data records start where the header ends."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import dataclass

from core.errors import SourceError
from core.sources.csv.records import after_lines, first_record_end
from core.sources.sniff import CsvDialect

ROW_NAMES = "row_names"  # the name of R's unnamed row-name column (sniff.CsvDialect.row_names)


@dataclass(frozen=True)
class Header:
    names: list[str]
    end: int = 0  # byte offset (in the UTF-8 stream) of the first data record
    lines: int = 0  # lines above the first data record: the notes and the header


def read_header(blocks: Iterable[bytes], dialect: CsvDialect, path: str, record_limit: int) -> Header:
    """The column names and where the data starts, from the file's first UTF-8 blocks; without a
    header, columns are numbered by the first record's fields and the data starts at the top."""
    first = b""
    notes = 0  # bytes of the notes above the table (sniff: skip_lines)
    for data in blocks:
        first += data
        if dialect.skip_lines and not notes:
            notes = after_lines(first, dialect.skip_lines)
            if not notes:
                continue
        cut = first_record_end(first[notes:], dialect.quote.encode())
        if cut:
            cut += notes
            break
        if len(first) > record_limit:
            raise SourceError(f"the first record does not end within {record_limit >> 20} MB "
                              "(a quote that never closes?)", path=path, line=1)
    else:
        cut = len(first)
        if b"\r" in first.strip():
            raise SourceError("its lines end in a bare carriage return (old Mac style), which is not "
                              "supported; convert the line endings to LF or CRLF", path=path)
    if not first.strip():
        raise SourceError("the file is empty", path=path)
    if b"\x00" in first[:cut]:
        raise SourceError(
            f"the first record contains NUL bytes: this is not {dialect.encoding} text (UTF-16? "
            "binary?); give the file's encoding",
            path=path, line=1,
        )
    record = first[notes:cut].decode("utf-8", errors="replace")
    try:
        fields = next(csv.reader(io.StringIO(record, newline=""), delimiter=dialect.delimiter,
                                 quotechar=dialect.quote))
    except csv.Error as exc:
        raise SourceError(f"cannot read the first record: {exc}", path=path, line=1) from None
    if not dialect.header:
        return Header([f"column_{i + 1}" for i in range(len(fields))])
    if dialect.row_names:
        fields = [ROW_NAMES, *fields]
    if dialect.extra_name and fields and not fields[-1].strip():
        fields = fields[:-1]
    names = unique_names([f.strip() or f"column_{i + 1}" for i, f in enumerate(fields)])
    return Header(names, cut, first[:cut].count(b"\n"))


def unique_names(names: list[str]) -> list[str]:
    """The names with a repeated one numbered: a, a_2, a_3."""
    seen: dict[str, int] = {}
    out = []
    for n in names:
        if n in seen:
            seen[n] += 1
            out.append(f"{n}_{seen[n]}")
        else:
            seen[n] = 1
            out.append(n)
    return out
