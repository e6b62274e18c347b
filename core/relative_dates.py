"""Relative date words (`now`, `today`, `tomorrow`, `yesterday`) are bad values, not dates.

PostgreSQL reads them as the moment or the day of the load: `yesterday` in a date column
stores the day before the load, so the same file would load differently each day. The client
refuses them before anything is sent, for the columns that go into a date or time column of
the target, column-wise with polars; `epoch` and `±infinity` are fixed values and pass.

A load whose target has no such column (or whose source types its values, a Parquet date)
has no guard at all, so it costs nothing. With one, a parsed batch costs one regular
expression per guarded column (in copy-binary's warm start only a batch that goes as text: one
typed exactly holds no such word), and the file's own bytes (COPY's raw path) are scanned once
for the words; only a chunk that holds one is parsed to see whether the word stands in a
guarded column (free text saying "now" elsewhere does not stop the raw path, though text
full of such words costs the raw path a parse of its chunks on the reader's thread).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from core.errors import RefusedValue, SourceError
from core.pgtypes import normalize_type
from core.sources.base import BadRecord, Batch, Source

if TYPE_CHECKING:
    from core.spec import ColumnMap

WORDS = ("now", "today", "tomorrow", "yesterday")
# A whole word, any case: what PostgreSQL's date/time parser takes as such a token
# ('today 10:00', 'Tomorrow', 'now()' all load as a moment relative to the load).
PATTERN = r"(?i)(?-u:\b)(?:now|today|tomorrow|yesterday)(?-u:\b)"
_LITERALS = r"(?i)now|today|tomorrow|yesterday"
SMALL_BYTES = 1 << 20  # Python's scan lowers this much at a time
LOADED_SMALL_BYTES = 64 << 10  # once polars is loaded (polars_loaded()), larger pieces go to it
PIECE_BYTES = 2 << 20  # larger ones go to polars this much at a time
# A raw load imports polars for the scan only for a file this large: the import costs some 0.25
# CPU-s (and 50 MB) beside a server that needs the core, Python's scan 2.5 ms a MB more than
# polars'. nycflights13's flights (34 MB, copy-csv) took 1.78 s against psql's 1.01 s with it.
POLARS_SCAN_MIN_FILE = 128 << 20
_polars_ready = False
_TYPES = {"date", "timestamp", "timestamptz", "time", "timetz", "time with time zone"}


def is_time_type(pg_type: str) -> bool:
    """A date, timestamp or time type (not an array of them), where PostgreSQL takes the words."""
    t = normalize_type(pg_type)
    return not t.endswith("]") and t.split("(")[0].strip() in _TYPES


REASON = "a relative date word, which PostgreSQL would store as the day of the load; write the date itself"


def relative(values: pl.Series) -> pl.Series:
    """Per value: holds a relative date word (nulls and other types: False)."""
    if values.dtype != pl.String:
        return pl.Series(values.name, [False] * values.len(), dtype=pl.Boolean)
    return values.str.contains(PATTERN).fill_null(False)


@dataclass(frozen=True)
class RelativeDates:
    """The source columns that go into a date or time column of the target: (source, target)."""

    columns: tuple[tuple[str, str], ...]

    def mask(self, frame: pl.DataFrame) -> pl.Series:
        """Per row: some guarded column holds a relative date word."""
        exprs = [pl.col(s).cast(pl.String).str.contains(PATTERN).fill_null(False)  # a batch of NULLs: Null dtype
                 for s, _ in self.columns if s in frame.columns]
        if not exprs or frame.height == 0:
            return pl.Series("refused", [False] * frame.height, dtype=pl.Boolean)
        return frame.select(pl.any_horizontal(exprs).alias("refused")).to_series()

    def culprit(self, frame: pl.DataFrame, i: int) -> tuple[str, str]:
        """(target column, value) of row `i`'s first guarded column holding a word."""
        for s, t in self.columns:
            value = frame[s][i] if s in frame.columns else None
            if isinstance(value, str) and bool(relative(pl.Series([value])).item()):
                return t, value
        return "", ""

    def apply(self, source: Source, batches: Iterator[Batch], with_bad: bool) -> Iterator[Batch]:
        """`batches` (from batches_with_bad) with each refused row made a bad record where it stands.

        Without `with_bad` (the abort policy) the first bad record, refused or malformed, raises
        with its line: RefusedValue for a refused one, SourceError for a malformed one (as
        Source.batches() raises it).
        """
        for batch in batches:
            for part in self._split(source, batch):
                if part.bad and not with_bad:
                    first = part.bad[0]
                    kind = RefusedValue if first.reason == REASON else SourceError
                    raise kind(first.described(), path=str(source.path), line=first.line)
                yield part

    def check(self, source: Source, batch: Batch) -> None:
        """Raise as apply() does without `with_bad`, at the batch's first bad record: refused
        (RefusedValue) or malformed (SourceError), each naming its line."""
        for _part in self.apply(source, iter([batch]), with_bad=False):
            pass

    def _split(self, source: Source, batch: Batch) -> Iterator[Batch]:
        frame = batch.frame
        mask = self.mask(frame)
        if not mask.any():
            yield batch
            return
        bad = list(batch.bad)
        start = 0
        for i in mask.arg_true().to_list():  # the refused rows only: a handful, not the batch
            if i > start:
                yield self._part(batch, start, i, bad)
                bad = []
            bad.append(self._record(source, batch, i))
            start = i + 1
        if start < frame.height or bad:
            yield self._part(batch, start, frame.height, bad)

    @staticmethod
    def _part(batch: Batch, lo: int, hi: int, bad: list[BadRecord]) -> Batch:
        """Rows lo .. hi - 1 of `batch`, after the bad records that stand before them."""
        lines = batch.lines[lo:hi] if batch.lines is not None else None
        return replace(batch, frame=batch.frame.slice(lo, hi - lo), first_row=batch.first_row + lo,
                       lines=lines, bad=tuple(bad))

    def _record(self, source: Source, batch: Batch, i: int) -> BadRecord:
        row = batch.first_row + i
        line, text = (batch.lines[i], None) if batch.lines is not None else source.locate(row)
        if text is None:  # no lines in this format: the row's values as CSV
            text = batch.frame.slice(i, 1).write_csv(include_header=False).rstrip("\n")
        column, value = self.culprit(batch.frame, i)
        return BadRecord(row, line, text, REASON, column, value)

    @staticmethod
    def may_hold(data: bytes | memoryview, *, import_polars: bool = True) -> bool:
        """Whether UTF-8 bytes hold one of the words, even inside another ('known'): a literal
        scan, which polars' regex engine runs at memory speed (a word boundary would slow it
        several times on text full of near misses; the parse in raw_refused is exact). Small
        pieces, and any size until polars is loaded, are looked at in Python; `import_polars`
        starts its import on a thread of its own. Once polars is loaded, only tiny pieces are:
        Python's lower() and four searches take 3 ms a MB, polars 0.5, and polars lets go of the GIL."""
        if not _polars_ready and import_polars:
            # Waiting for the import (0.25 s) held back the first chunk of a 167 MB file while
            # the server sat idle; Python scans until polars is whole.
            _import_in_background()
        if len(data) <= LOADED_SMALL_BYTES or not _polars_ready:
            return _python_scan(data)
        # A few MB at a time, cut at line ends (a word never spans one): polars' copies of a
        # whole 8-16 MB slice, per stream, kept some 90 MB more resident at the peak.
        buf = data if isinstance(data, bytes) else bytes(data)
        start = 0
        while start < len(buf):
            end = buf.find(b"\n", start + PIECE_BYTES) + 1 or len(buf)
            piece = pl.Series([buf[start:end]]).cast(pl.String, strict=False)
            if piece.str.contains(_LITERALS).fill_null(True).item():
                return True
            start = end
        return False

    @staticmethod
    def file_may_hold(path: str | Path, block: int = 16 << 20) -> bool:
        """Whether a file's bytes spell one of the words anywhere, any case (ASCII-compatible
        encodings), read a block at a time: a SQL script's COPY shortcut is taken only without."""
        tail = b""
        with open(path, "rb") as f:
            while data := f.read(block):
                seen = tail + data
                if _python_scan(seen):
                    return True
                tail = seen[-_LONGEST:]  # a word cut by the block's end
        return False

    def raw_refused(self, source: Source, data: bytes) -> bool:
        """Whether whole records of the file's own bytes hold a refused value: a scan for the
        words, and only where one stands, a parse of these records to look at the guarded columns."""
        if not self.may_hold(data, import_polars=source.size >= POLARS_SCAN_MIN_FILE):
            return False
        parse = getattr(source, "parse_records", None)
        if parse is None:
            return True
        try:
            frame, bad = parse(data, 0, 1, 0)
        except SourceError:
            return True
        return bool(bad) or bool(self.mask(frame).any())


def _python_scan(data: bytes | memoryview) -> bool:
    """may_hold() in Python, a piece at a time (lower() copies what it reads)."""
    view = memoryview(data)
    for start in range(0, len(view), SMALL_BYTES):
        low = bytes(view[start:start + SMALL_BYTES + _LONGEST]).lower()  # (overlapping: a word cut by the end)
        if any(w in low for w in _WORD_BYTES):
            return True
    return False


_WORD_BYTES = tuple(w.encode() for w in WORDS)
_LONGEST = max(map(len, WORDS))


def _import_in_background() -> None:
    """Import polars on a thread of its own (once), then say polars_loaded()."""
    global _importing
    with _importing_lock:
        if _importing is None:
            _importing = threading.Thread(target=_load_polars, name="sluice-polars-import")
            _importing.start()


def _load_polars() -> None:
    _ = pl.Series  # the first name asked for loads the CLI's deferred module (app.lazy_imports)
    polars_loaded()


_importing: threading.Thread | None = None
_importing_lock = threading.Lock()


def polars_loaded() -> None:
    """Say that polars is imported whole (by a thread that needed it): may_hold() then hands it
    all but tiny pieces. (Asking sys.modules could find it half-imported by another thread.)"""
    global _polars_ready
    _polars_ready = True


def guard(source: Source, maps: Sequence[ColumnMap], target_types: dict[str, str]) -> RelativeDates | None:
    """The guard for a load of `source` through `maps` into columns of `target_types`; None when
    no column of text goes into a date or time column (nothing to check, nothing spent)."""
    timed = [m for m in maps if m.include and m.source is not None
             and is_time_type(target_types.get(m.target, m.type))]
    if not timed:
        return None  # and polars stays unloaded on the raw CSV path (app/lazy_imports.py)
    if type(source).dtypes is Source.dtypes:  # a text format: every column is text (no polars asked)
        columns = tuple((m.source, m.target) for m in timed if m.source is not None)
    else:
        dtypes = source.dtypes()
        columns = tuple((m.source, m.target) for m in timed
                        if m.source is not None and dtypes.get(m.source, pl.String()) == pl.String)
    return RelativeDates(columns) if columns else None


def first_refused(frame: pl.DataFrame, columns: Sequence[tuple[str, str]]) -> tuple[int, str, str] | None:
    """(row, target column, value) of the first row of `frame` whose columns (frame column,
    target column) hold a relative date word; None when none does. Column-wise, like the guard."""
    mask = RelativeDates(tuple(columns)).mask(frame)
    if not mask.any():
        return None
    i = int(mask.arg_true()[0])
    column, value = RelativeDates(tuple(columns)).culprit(frame, i)
    return i, column, value


def script_rows(data: bytes, fmt: str, width: int) -> pl.DataFrame:
    """A SQL script's chunk as text columns c0..c{width-1}: `csvq` (its INSERT rows as CSV quoted
    with ', NULL unquoted) or `text` (a COPY block: tab-separated). For looking at, not loading."""
    if fmt == "text":
        return pl.read_csv(data, has_header=False, separator="\t", quote_char=None, infer_schema=False,
                           new_columns=[f"c{k}" for k in range(width)], truncate_ragged_lines=True)
    return pl.read_csv(data, has_header=False, quote_char="'", infer_schema=False,
                       new_columns=[f"c{k}" for k in range(width)], truncate_ragged_lines=True)
