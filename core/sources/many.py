"""Many files, one table: a folder, a glob or a list of files read as one source.

The files are read one after the other, as if they were one file, so every strategy and
every commit protocol takes them as they take one file (one transaction for all of them
under `single`). Before anything is read, every file must have the first file's columns:
a file whose columns differ is refused, naming it and the difference. CSV files are read
with the first file's delimiter, quote and header, and with one NULL marker for all.

The source remembers where each file's rows start, so a row (a reject, the first bad
row) is named by its file and its own line, and a load can say what each file gave.
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import polars as pl

from core.errors import ConfigError, SourceError
from core.sources.abilities import RawCsvChunks, SniffedText
from core.sources.base import Batch, Fingerprint, RawChunk, Source, ValueGuard
from core.sources.csv.records import count_records
from core.spec import SourceOptions

GLOB_CHARS = frozenset("*?[")
LIST_SEP = os.pathsep  # a list of files in one path field: a.csv:b.csv (a.csv;b.csv on Windows)
SAMPLE_SHARE = 4  # a new table's types: the first file's sample, and a quarter as many rows of each other file
SAMPLE_FILES = 50  # ... of at most this many files


def _not_data(p: Path) -> bool:
    """A reject file written beside the files (x.rejects.csv, x.csv.rejects-<time>.csv): never data."""
    return ".rejects" in p.name


def is_many(path: str) -> bool:
    """Whether `path` names a set of files (a folder, a glob, a list) rather than one file."""
    if not path:
        return False
    p = Path(path).expanduser()
    if p.is_file():
        return False
    return p.is_dir() or bool(GLOB_CHARS & set(path)) or LIST_SEP in path


def _natural(p: Path) -> list[object]:
    """file2 before file10: names compared by their digits' values."""
    return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", p.name)]


def _folder_files(folder: Path) -> list[Path]:
    from core.sources.sniff import _EXT

    files = [p for p in folder.iterdir()
             if p.is_file() and not p.name.startswith(".") and p.suffix.lower() in _EXT
             and not _not_data(p)]
    kinds = sorted({_EXT[p.suffix.lower()] for p in files})
    if len(kinds) > 1:
        raise ConfigError(f"the folder {folder} holds files of several kinds ({', '.join(kinds)}): name the ones "
                          f"to load with a pattern, e.g. {folder / ('*' + sorted(files, key=_natural)[0].suffix)}")
    return sorted(files, key=_natural)


def expand(path: str) -> list[Path]:
    """The files `path` names, in load order: a folder's data files, a glob's matches (both
    sorted by name, numbers by value), or a list's items in the order given."""
    items = path.split(LIST_SEP) if LIST_SEP in path and not Path(path).exists() else [path]
    files: list[Path] = []
    for item in (i.strip() for i in items):
        if not item:
            continue
        p = Path(item).expanduser()
        if p.is_dir():
            found = _folder_files(p)
            if not found:
                raise SourceError("the folder holds no data file (csv, tsv, parquet, json, excel...)", path=item)
            files += found
        elif GLOB_CHARS & set(item) and not p.exists():
            found = sorted((Path(m) for m in glob.glob(str(p)) if Path(m).is_file() and not _not_data(Path(m))),
                           key=_natural)
            if not found:
                raise SourceError("no file matches this pattern", path=item)
            files += found
        else:
            files.append(p)
    seen: set[Path] = set()
    unique = []
    for f in files:
        key = f.resolve()
        if key not in seen:
            seen.add(key)
            unique.append(f)
    if not unique:
        raise SourceError("names no file", path=path)
    return unique


def join_paths(paths: list[str]) -> str:
    """Several paths as one source path (a list of absolute paths: a profile keeps it as it is)."""
    if len(paths) == 1:
        return paths[0]
    return LIST_SEP.join(str(Path(p).expanduser().absolute()) for p in paths)


def common_name(files: list[str]) -> str:
    """What a set of files is called: their names' common start (sales-01.csv ... sales-12.csv: sales),
    else their folder's name."""
    stems = [Path(f).stem for f in files]
    if not stems:
        return ""
    head = os.path.commonprefix(stems).rstrip("0123456789-_. ")
    return head or Path(files[0]).parent.name


def differences(first: list[str], other: list[str]) -> str:
    """How `other`'s columns differ from `first`'s, in words ('' when they are the same set)."""
    missing = [c for c in first if c not in other]
    extra = [c for c in other if c not in first]
    if missing == first and extra == other and other:  # nothing in common: a header missing, or another file
        return (f"has none of its columns: its first line reads {', '.join(other[:4])}"
                f"{', ...' if len(other) > 4 else ''} (a file without a header line, or another kind of file?)")
    parts = []
    if missing:
        parts.append(f"lacks {', '.join(map(repr, missing))}")
    if extra:
        parts.append(f"has {', '.join(map(repr, extra))} besides")
    if not parts and len(other) != len(first):
        parts.append(f"has {len(other)} columns where the first has {len(first)} (a name repeats)")
    return " and ".join(parts)


@dataclass(frozen=True)
class FileCount:
    """What one file gave a load."""

    file: str
    rows_read: int
    rows_loaded: int
    rows_rejected: int
    empty: bool = False  # a file of 0 bytes, passed over

    def describe(self) -> str:
        if self.empty:
            return f"{self.file}: empty (0 bytes), nothing to load"
        rejected = f", {self.rows_rejected:,} rejected" if self.rows_rejected else ""
        return f"{self.file}: {self.rows_read:,} rows read, {self.rows_loaded:,} loaded{rejected}"


class ManySource(Source):
    """Several files with the same columns, read one after the other as one source."""

    def __init__(self, options: SourceOptions, open_one: Callable[[SourceOptions], Source]) -> None:
        self.options = options
        self._open_one = open_one  # core.sources.factory.open_source, given: this module never imports it
        self.path = Path(options.path)
        self.files = expand(options.path)
        # A file of 0 bytes (an empty month, written by a tool that writes no header then) has no
        # columns to compare and no rows: passed over, and said (psql loads it as 0 rows too).
        self.empty = [f for f in self.files if f.is_file() and f.stat().st_size == 0]
        if len(self.empty) == len(self.files):
            raise SourceError("every file is empty (0 bytes)", path=options.path)
        self.parts = self._open_parts(options, [f for f in self.files if f not in self.empty])
        first = self.parts[0]
        self.format = first.format
        options.format = first.format
        self._columns = first.columns()
        self.reordered: list[str] = []  # files whose columns come in another order (taken by name)
        for part in self.parts[1:]:
            cols = part.columns()
            why = differences(self._columns, cols)
            if why:
                raise ConfigError(f"{part.path}: its columns differ from the first file's ({first.path.name}): it "
                                  f"{why}. Every file loaded into one table must have the same columns; nothing "
                                  "was sent")
            if cols != self._columns:
                self.reordered.append(part.path.name)
        if isinstance(first, SniffedText):  # text files: the first one's dialect and NULL marker's columns
            self.dialect = first.dialect
            self.null_columns = first.null_columns
            # A file that writes NULL two ways keeps the set off COPY's bytes.
            self.empty_null_columns = sorted({c for p in self.parts if isinstance(p, SniffedText)
                                              for c in p.empty_null_columns})
        if not self.reordered and all(isinstance(p, RawCsvChunks) for p in self.parts):
            self.raw_chunks = self._raw_chunks  # CSV files: their own bytes can go to COPY, one after the other
        self.fingerprint = Fingerprint(sum(p.size for p in self.parts), max(p.fingerprint.mtime_ns for p in self.parts))
        self._starts: dict[int, int] = {0: 0}  # part index -> its first row in the whole
        self._rows: dict[int, int] = {}  # part index -> its rows (bad records included), once known

    def _open_parts(self, options: SourceOptions, files: list[Path]) -> list[Source]:
        open_source = self._open_one
        first = open_source(replace(options, path=str(files[0])))
        if first.format == "sql":
            raise ConfigError("SQL scripts name their own tables: load them one at a time")
        same = replace(options, format=first.format)
        d = first.dialect if isinstance(first, SniffedText) else None
        if d is not None:  # the first file's shape for all, so a file sniffed otherwise is refused by its columns
            same = replace(same, delimiter=d.delimiter, quote=d.quote, header=d.header)
        parts = [first, *(open_source(replace(same, path=str(f))) for f in files[1:])]
        if d is None or options.null is not None:
            return parts
        return self._one_marker(parts, same, open_source)

    @staticmethod
    def _one_marker(parts: list[Source], same: SourceOptions,
                    open_source: Callable[[SourceOptions], Source]) -> list[Source]:
        """One sniffed NULL marker for every file, in the columns where any file showed it
        standing for a gap: a column means the same in January and in March."""
        sniffed = [_sniffed(p) for p in parts]
        markers = sorted({text.dialect.null for text in sniffed if text.dialect.null})
        if not markers:
            return parts
        if len(markers) > 1:
            raise ConfigError(f"the files write NULL differently ({', '.join(map(repr, markers))}): name the "
                              "marker with --null (the NULL field in the window)")
        marker = markers[0]
        columns: set[str] | None = set()
        for text in sniffed:
            if text.dialect.null == marker:
                cols = text.null_columns
                if cols is None:
                    columns = None
                    break
                columns |= set(cols)  # type: ignore[operator]
        wanted = None if columns is None else sorted(columns)
        settled = replace(same, null=marker, null_columns=wanted)
        out = []
        for part, text in zip(parts, sniffed, strict=True):
            have = text.null_columns
            fits = text.dialect.null == marker and (
                (have is None) == (wanted is None) and set(have or ()) == set(wanted or ()))
            out.append(part if fits else open_source(replace(settled, path=str(part.path))))
        return out

    @property
    def size(self) -> int:
        return self.fingerprint.size

    @staticmethod
    def settled(part: Source) -> SourceOptions:
        """A part's options with what was sniffed written in, so that opening it again (a load of
        its own, under per-file commits) reads it the same way and sniffs nothing again."""
        if not isinstance(part, SniffedText):
            return part.options
        d = part.dialect
        return replace(part.options, delimiter=d.delimiter, quote=d.quote, header=d.header, encoding=d.encoding,
                       null=d.null, null_columns=part.null_columns, empty_null_columns=part.empty_null_columns or None)

    def columns(self) -> list[str]:
        return list(self._columns)

    def dtypes(self) -> dict[str, pl.DataType]:
        return self.parts[0].dtypes()

    def reject_default(self) -> str:
        """Where rejects go when no file is named: beside the files, named by the first and the last."""
        first, last = self.parts[0].path, self.parts[-1].path
        return str(first.with_name(f"{first.stem}..{last.stem}.rejects.csv"))

    def describe_files(self) -> str:
        """'12 files (jan.csv ... dec.csv)'."""
        names = [p.path.name for p in self.parts]
        shown = ", ".join(names) if len(names) <= 6 else f"{', '.join(names[:3])}, ... {names[-1]}"
        return f"{len(names)} files ({shown})"

    # -- reading -----------------------------------------------------------------------------

    def _frame(self, frame: pl.DataFrame) -> pl.DataFrame:
        return frame if frame.columns == self._columns else frame.select(self._columns)

    def _read(self, batch_rows: int, skip_rows: int, bad: bool, load: bool = False) -> Iterator[Batch]:
        base_bytes = 0
        for i, part in enumerate(self.parts):
            start = self._start(i)
            local_skip = max(0, skip_rows - start)
            if i in self._rows and local_skip >= self._rows[i]:
                base_bytes += part.size
                self._start(i + 1)
                continue
            end = local_skip
            read = part.batches_with_bad if bad else part.batches
            # A load's batches: each file refuses its own bad values, so an abort names it and its line.
            batches = part.load_batches(batch_rows, local_skip, with_bad=bad) if load else read(batch_rows, local_skip)
            for b in batches:
                end = b.first_row + b.frame.height
                yield Batch(self._frame(b.frame), start + b.first_row, base_bytes + b.bytes_read, b.lines,
                            tuple(replace(r, row=start + r.row) for r in b.bad))
            if i not in self._rows:
                self._rows[i] = end if local_skip == 0 or end > local_skip else self._count(i)
            base_bytes += part.size
            self._starts[i + 1] = start + self._rows[i]

    def _raw_chunks(self, chunk_bytes: int | None = None, *, tolerant: bool = False) -> Iterator[RawChunk]:
        """Every file's whole records as UTF-8 bytes, header removed, one file after the other (as
        CsvSource.raw_chunks: the same delimiter, quote and NULL marker), each file's records counted."""
        base = 0
        for i, part in enumerate(self.parts):
            quote = part.dialect.quote.encode()  # type: ignore[attr-defined]
            records = 0
            for chunk in part.raw_chunks(chunk_bytes, tolerant=tolerant):  # type: ignore[attr-defined]
                n = chunk.records if chunk.records >= 0 else count_records(chunk.data, quote)
                records += n
                yield replace(chunk, bytes_read=base + chunk.bytes_read, records=n)
            self._rows.setdefault(i, records)
            self._starts.setdefault(i + 1, self._start(i) + self._rows[i])
            base += part.size

    def batches(self, batch_rows: int, skip_rows: int = 0) -> Iterator[Batch]:
        return self._read(batch_rows, skip_rows, bad=False)

    def load_batches(self, batch_rows: int, skip_rows: int = 0, *, with_bad: bool = False) -> Iterator[Batch]:
        return self._read(batch_rows, skip_rows, bad=with_bad, load=True)

    _refuse: ValueGuard | None = None

    @property
    def refuse(self) -> ValueGuard | None:
        """The plan's guard against values the client refuses (core.relative_dates): every file's own,
        so that its raw chunks are looked at and its bad records named by it."""
        return self._refuse

    @refuse.setter
    def refuse(self, guard: ValueGuard | None) -> None:
        self._refuse = guard
        for part in self.parts:
            part.refuse = guard

    def batches_with_bad(self, batch_rows: int, skip_rows: int = 0) -> Iterator[Batch]:
        return self._read(batch_rows, skip_rows, bad=True)

    def sample(self, rows: int = 200) -> pl.DataFrame:
        """The first file's first `rows` rows, and some of every other file's: a new table's
        types must hold the values of every file, not only the first."""
        frames = [self._frame(self.parts[0].sample(rows))]
        share = max(1, rows // SAMPLE_SHARE)
        frames += [self._frame(p.sample(share)) for p in self.parts[1:SAMPLE_FILES]]
        frames = [f for f in frames if f.height] or frames[:1]
        try:
            return pl.concat(frames, how="vertical_relaxed")
        except pl.exceptions.PolarsError:
            return frames[0]

    # -- where a row comes from ------------------------------------------------------------------

    def _count(self, i: int) -> int:
        """Part i's rows, counted by reading it (asked only for a part not read yet)."""
        if i not in self._rows:
            n = 0
            for b in self.parts[i].batches_with_bad(100_000):
                n = b.first_row + b.frame.height
            self._rows[i] = n
        return self._rows[i]

    def _start(self, i: int) -> int:
        if i not in self._starts:
            self._starts[i] = self._start(i - 1) + self._count(i - 1)
        return self._starts[i]

    def part_of(self, row: int) -> tuple[int, int]:
        """(part index, row within that file) of the whole's row `row`."""
        for i in range(len(self.parts)):
            if row < self._start(i) + self._count(i) or i == len(self.parts) - 1:
                return i, row - self._start(i)
        return len(self.parts) - 1, row

    def file_of(self, row: int) -> tuple[str, int]:
        """(the file, its own 0-based row) that the whole's row `row` comes from."""
        i, local = self.part_of(row)
        return str(self.parts[i].path), local

    def locate(self, row: int) -> tuple[int | None, str | None]:
        i, local = self.part_of(row)
        return self.parts[i].locate(local)

    def check_unchanged(self) -> None:
        for p in self.parts:
            p.check_unchanged()

    def counts(self, rejected_in: dict[str, int], loaded_total: int) -> list[FileCount]:
        """What each file gave: its rows read (those known), loaded and rejected. `rejected_in`:
        rejects by file; `loaded_total` caps what is said loaded (a load that stopped loaded no
        more than it says)."""
        rejected = [rejected_in.get(str(p.path), 0) for p in self.parts]
        out = []
        left = loaded_total
        for i, p in enumerate(self.parts):
            read = self._rows.get(i, 0)
            loaded = max(0, min(left, read - rejected[i]))
            left -= loaded
            out.append(FileCount(str(p.path), read, loaded, rejected[i]))
        return self.with_empty(out)

    def with_empty(self, counts: list[FileCount]) -> list[FileCount]:
        """`counts` (one per part) with the empty files put back in their places, each said empty."""
        by_file = {c.file: c for c in counts}
        return [by_file.get(str(f)) or FileCount(str(f), 0, 0, 0, empty=True) for f in self.files
                if str(f) in by_file or f in self.empty]


def load_fingerprint(path: str | Path) -> str:
    """A load's checkpoint fingerprint of its source path: every file's for a folder, a glob or a
    list (a file added, gone or changed differs), the one file's otherwise."""
    from core import checkpoint as ck

    return fingerprint(str(path)) if is_many(str(path)) else ck.fingerprint(path)


def fingerprint(path: str) -> str:
    """The set's checkpoint fingerprint: every file's, in order (a file added, gone or changed differs)."""
    parts = []
    for f in expand(path):
        st = f.stat()
        with open(f, "rb") as fh:
            head = hashlib.sha256(fh.read(1 << 16)).hexdigest()[:16]
        parts.append(f"{f.resolve()}={st.st_size}:{st.st_mtime_ns}:{head}")
    text = "\n".join(parts)
    return "files:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _sniffed(part: Source) -> SniffedText:
    """A part opened in the first file's format, which was sniffed (a CSV or text file): sniffed too."""
    assert isinstance(part, SniffedText), part
    return part
