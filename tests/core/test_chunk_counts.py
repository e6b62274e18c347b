"""The raw path counts each chunk's records and looks for swallowed records in one numpy pass
(core.sources.csv.swallowed.counted): it must say what the bytes methods and the earlier
line-by-line formula say, on random bytes of every kind that matters (quotes, doubled quotes,
newlines inside and outside them, delimiters)."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from core.sources.csv import records as records_module
from core.sources.csv import swallowed
from core.sources.csv.records import records_and_lines, split_records


def _likely_reference(data: bytes, delimiter: bytes, quote: bytes, columns: int) -> bool:
    """The formula before the fused pass: every line's quotes and delimiters counted."""
    if not quote or columns < 2 or quote not in data:
        return False
    a = np.frombuffer(data, dtype=np.uint8)
    ends = np.flatnonzero(a == 10)
    quotes = np.searchsorted(np.flatnonzero(a == quote[0]), ends)
    in_line = np.diff(quotes, prepend=0)
    delims = np.diff(np.searchsorted(np.flatnonzero(a == delimiter[0]), ends), prepend=0)
    inside = ((quotes - in_line) % 2 == 1) & (in_line == 0)
    return int(np.count_nonzero(inside & (delims == columns - 1))) >= swallowed._needed(columns)


def _records(rng: random.Random, delimiter: bytes, columns: int, n: int) -> bytes:
    """Whole records: some fields quoted, with doubled quotes and newlines inside; some quoted
    fields hold lines shaped like records."""
    out = []
    for _ in range(n):
        fields = []
        for _ in range(columns):
            kind = rng.random()
            if kind < 0.5:
                fields.append(rng.choice([b"", b"x", b"abc", b"12"]))
            else:
                inner = [rng.choice([b"a", b'""', b"\n", delimiter, b"word"]) for _ in range(rng.randint(0, 8))]
                if kind > 0.95:  # lines shaped like records inside the quotes
                    inner += [b"\n" + delimiter.join([b"v"] * columns) for _ in range(rng.randint(1, 5))] + [b"\n"]
                fields.append(b'"' + b"".join(inner) + b'"')
        out.append(delimiter.join(fields))
    return b"\n".join(out) + (b"\n" if rng.random() < 0.9 else b"")


@pytest.mark.parametrize("lent", [True, False])
@pytest.mark.parametrize("delimiter", [b",", b"\t", b";"])
@pytest.mark.parametrize("columns", [2, 3, 6])
def test_counted_agrees_with_the_bytes_methods(monkeypatch: pytest.MonkeyPatch, delimiter: bytes,
                                               columns: int, lent: bool) -> None:
    """Through numpy, or (before a stage lends it) with bytes methods first, numpy only for a
    chunk where some record spans lines."""
    monkeypatch.setattr(swallowed, "_NUMPY_BYTES", 1)  # every size through numpy
    rng = random.Random(columns * 31 + delimiter[0])
    suspects = checked = 0
    for _ in range(400):
        data = _records(rng, delimiter, columns, rng.randint(1, 60))
        monkeypatch.setattr(records_module, "_numpy", np if lent else None)
        records, lines, likely, ends = swallowed.counted(data, delimiter, b'"', columns)
        assert records_module.numpy_lent() == (lent or lines > records)
        if ends is not None:  # each record's newline, for the parser's look at short records
            assert ends.tolist() == [end for _l, _s, end, _c in split_records(data, b'"', 1)], data
            checked += 1
        assert (records, lines) == records_and_lines(data, b'"'), data
        reference = _likely_reference(data, delimiter, b'"', columns)
        assert likely == (lines > records and reference), data
        suspects += likely
    assert suspects > 0 and checked > 0  # the random records did hold lines shaped like records


def test_small_chunks_skip_numpy_and_find_the_same() -> None:
    """Below numpy's threshold the records are read one by one: a swallowing field is still seen."""
    data = b'1,"open\n2,b\n3,c\n4,d\n5,e\n6,f"\n7,g\n'
    records, lines, likely, _ends = swallowed.counted(data, b",", b'"', 2)
    assert (records, lines) == records_and_lines(data, b'"') == (2, 7)
    assert likely


def test_the_first_raw_chunks_are_small_then_grow(tmp_path: Any) -> None:
    """The server gets its first records after a quarter MB is read, not a whole chunk (it sat
    idle 60 ms while a first 8 MB were read, counted and scanned); the records are all there."""
    from core.sources.csv.source import FIRST_CHUNK_BYTES
    from core.sources.factory import open_source
    from core.spec import SourceOptions

    path = tmp_path / "data.csv"
    body = b"".join(b'%d,"some text, %d",2024-01-0%d\n' % (i, i, i % 9 + 1) for i in range(400_000))
    path.write_bytes(b"id,t,d\n" + body)
    chunks = list(open_source(SourceOptions(str(path))).raw_chunks(4 << 20))
    sizes = [len(c.data) for c in chunks]
    assert sizes[0] <= FIRST_CHUNK_BYTES < sizes[1] < sizes[2] and max(sizes) < (4 << 20) + 100  # (a chunk ends at a record end)
    assert b"".join(c.data for c in chunks) == body and sum(c.records for c in chunks) == 400_000


def _parse_all(tmp_path: Any, lines: list[str], newline: str = "\n") -> int:
    """Rows of a file `a,b,c` of `lines`, every unit parsed as copy-binary's encoder parses it."""
    from core.sources.base import ParseLater
    from core.sources.factory import open_source
    from core.spec import SourceOptions

    path = tmp_path / "data.csv"
    path.write_bytes(("a,b,c" + newline + newline.join(lines) + newline).encode())
    source = open_source(SourceOptions(str(path)))
    records_module.lend_numpy()  # (as copy-binary's warm-up does): the reader keeps each record's end
    rows = 0
    for item in source.raw_or_parsed(lambda: True, 500, unit_bytes=32 << 10, raw_bytes=16 << 10):
        assert isinstance(item, ParseLater) and item.chunk.ends is not None
        rows += sum(b.frame.height for b in source.parse_later(item, 500))
    return rows


@pytest.mark.parametrize("short", ['{i},"two\nlines, {i}"', "{i},", "", '{i},"x"', '{i},"a,b"', "{i},x"])
def test_a_short_record_among_empty_last_fields_is_named(tmp_path: Any, short: str) -> None:
    """Rows whose last field is empty are the only ones a missing field could hide in: where the
    reader found each record's end, only they are looked at, and a short one is still named."""
    from core.errors import SourceError

    lines = [f'{i},"two\nlines, {i}",{"" if i % 40 == 0 else "x"}' for i in range(6000)]
    bad_at = 4321
    if short:
        lines[bad_at] = short.format(i=bad_at)
    if not short:
        assert _parse_all(tmp_path, lines) == 6000
        return
    with pytest.raises(SourceError) as err:
        _parse_all(tmp_path, lines)
    assert err.value.line == 2 + 2 * bad_at  # (each record before it spans two lines)


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_records_ending_in_the_delimiter_after_a_value_are_not_counted(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch, newline: str) -> None:
    """A record that ends in the delimiter, its field before holding a value, has all its fields:
    only the others among the rows with a null last field are counted one by one (on the mixed
    shape, counting the 2% of rows with a null note cost 30% of the parse)."""
    from core.sources.csv import parse

    counted: list[bytes] = []
    real = parse.count_fields

    def counting(record: Any, delimiter: Any, quote: Any) -> int:
        counted.append(record)
        return real(record, delimiter, quote)

    monkeypatch.setattr(parse, "count_fields", counting)
    kinds = ['{i},"q, {i}",', '{i},"",', "{i},x,", '{i},"two\nlines",', '{i},"a""b",x']
    lines = [("{i},," if i % 50 == 7 else kinds[i % len(kinds)]).format(i=i) for i in range(6000)]
    assert _parse_all(tmp_path, lines, newline) == 6000
    assert len(counted) == 120 and all(r.split(b",")[1] == b"" for r in counted), counted[:3]  # only `{i},,`
