"""Guess a file's format and a CSV file's dialect from its first bytes."""

from __future__ import annotations

import codecs
import csv
import io
import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

_EXT = {
    ".csv": "csv", ".txt": "csv", ".tsv": "tsv", ".tab": "tsv", ".parquet": "parquet", ".pq": "parquet",
    ".json": "json", ".ndjson": "ndjson", ".jsonl": "ndjson", ".xlsx": "excel", ".xlsm": "excel",
    ".sql": "sql", ".arrow": "arrow", ".ipc": "arrow", ".feather": "arrow",
}
# Words that some writers put in place of a missing value. JSON's `null` is not one: in a
# JSON column it is a value, and PostgreSQL's own CSV never writes it for NULL.
NULL_MARKERS = ("NA", "\\N", "NULL", "N/A", "#N/A")
DELIMITERS = (",", ";", "\t", "|")


@dataclass(frozen=True)
class CsvDialect:
    encoding: str
    delimiter: str
    quote: str
    header: bool
    null: str
    bom_bytes: int
    # Columns (0-based) where `null` means NULL; None: every column. A sniffed marker is
    # kept off columns of unquoted free text, where the same word can be a value (NA is
    # Namibia's country code).
    null_columns: tuple[int, ...] | None = None
    # Columns where the sniffed marker was seen standing for a missing value.
    null_seen: tuple[int, ...] = ()
    newline: str = "\n"  # "\r" for old Mac files (no LF anywhere in the sample)
    # Columns where an empty unquoted field is NULL too, beside the marker: a file that writes
    # NULL in one column and leaves a date or boolean empty in another (see _empty_in).
    empty_null: tuple[int, ...] = ()
    # The header names every column but the first: R's write.table writes its row names as a first
    # column without a name (`"mpg" "cyl"` over `"Mazda RX4" 21 6`); the reader names it row_names.
    row_names: bool = False
    # Lines of notes above the header (a statistics office's title, source and units): the table
    # starts below them. The header then may end in one empty name more than the records hold
    # (BLS: `Series id,Year,Period,Value,` over `LNS14000000Q,1959,Q01,5.8`): `extra_name`.
    skip_lines: int = 0
    extra_name: bool = False


_COMPRESSED = ((b"\x1f\x8b", "gzip", "gunzip"), (b"\x28\xb5\x2f\xfd", "zstd", "unzstd"),
               (b"BZh", "bzip2", "bunzip2"), (b"\xfd7zXZ\x00", "xz", "unxz"))


def compressed(path: str) -> tuple[str, str] | None:
    """(kind, the command that expands it) for a compressed file, which no reader here takes."""
    try:
        with open(path, "rb") as f:
            head = f.read(6)
    except OSError:
        return None
    for magic, kind, tool in _COMPRESSED:
        if head.startswith(magic):
            return kind, tool
    return None


def detect_format(path: str) -> str:
    ext = Path(path).suffix.lower()
    if ext in _EXT:
        fmt = _EXT[ext]
        if fmt == "json" and _looks_ndjson(path):
            return "ndjson"
        return fmt
    with open(path, "rb") as f:
        head = f.read(4096)
    if head.startswith(b"PAR1"):
        return "parquet"
    if head.startswith(b"PK\x03\x04"):
        return "excel"
    if head.startswith(b"ARROW1"):
        return "arrow"
    text = head.decode("utf-8", errors="ignore").lstrip("\ufeff \r\n\t")
    if text[:1] in "[{":
        return "ndjson" if _looks_ndjson(path) else "json"
    if text[:6].upper() in ("INSERT", "SET ST") or text.startswith("--"):
        return "sql"
    return "csv"


def _looks_ndjson(path: str) -> bool:
    with open(path, "rb") as f:
        lines = [ln for ln in f.read(65536).splitlines() if ln.strip()][:2]
    if len(lines) < 2:
        return False
    try:
        return all(isinstance(json.loads(ln), dict) for ln in lines)
    except ValueError:
        return False


# A UTF-8 character of two to four bytes: cp1252 text almost never holds one ("Ã©" is one).
_UTF8_MULTIBYTE = re.compile(rb"[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}")


def _encoding(raw: bytes) -> tuple[str, int]:
    if raw.startswith(codecs.BOM_UTF8):
        return "utf-8-sig", 3
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16", 2
    try:
        codecs.getincrementaldecoder("utf-8")().decode(raw, final=False)
        return "utf-8", 0
    except UnicodeDecodeError:
        pass
    if _UTF8_MULTIBYTE.search(raw):
        # Well-formed UTF-8 beside bytes that are not: a file of mixed encodings. Read as
        # cp1252, every UTF-8 character would be stored as two or three wrong ones; as UTF-8,
        # the reader refuses the first bad byte and names its line.
        return "utf-8", 0
    try:
        raw.decode("cp1252")
        return "cp1252", 0
    except UnicodeDecodeError:
        return "latin-1", 0


def _records(text: str, delimiter: str, quote: str) -> list[list[str]]:
    return [r for _, r in _records_at(text, delimiter, quote)]


def _score(records: list[list[str]]) -> tuple[float, int]:
    """The share of records of the most common width, and that width ((0, 0) below two fields)."""
    widths = [len(r) for r in records if r]
    if not widths:
        return 0.0, 0
    width, count = Counter(widths).most_common(1)[0]
    if width < 2:
        return 0.0, 0
    return count / len(widths), width


def _delimiter(head: str, quote: str) -> str:
    """The delimiter that splits the most records alike, then the widest split, comma on a tie.
    A tab that splits records as alike as the best wins even over a wider split: values hold
    commas (text, JSON, decimal commas) far more often than tabs, and PostgreSQL's text export of
    a jsonb column split at its commas lost its first row as a header."""
    scores = {d: _score(_records(head, d, quote)) for d in DELIMITERS}
    best = max(DELIMITERS, key=lambda d: (scores[d], d == ","))
    if scores[best][1] < 2 and _spaced_table(head, quote):
        return " "
    tab = scores["\t"]
    return "\t" if tab[1] >= 2 and tab[0] >= scores[best][0] else best


def _spaced_table(head: str, quote: str) -> bool:
    """Whether records that no usual delimiter splits are a table separated by single spaces, as
    R's write.table writes one by default: every record as wide (three fields or more, quoted
    ones whole), and most values numbers, which a column of names or prose never is."""
    records = [r for r in _records(head, " ", quote) if r]
    if len(records) < 5 or len({len(r) for r in records[1:]}) != 1 or len(records[1]) < 3:
        return False
    if len(records[0]) not in (len(records[1]), len(records[1]) - 1):  # (a header without the row names' name)
        return False
    values = [v for r in records[1:] for v in r]
    return sum(_numberish(v) for v in values) >= 0.5 * len(values)


def _numberish(s: str) -> bool:
    t = s.strip()
    if not t:
        return False
    try:
        float(t)
        return True
    except ValueError:
        return t[:4].isdigit() and "-" in t  # dates


# A year, or a year and month, as a column's name: 1960, 2020-01, 2020/03.
_PERIOD = re.compile(r"(1[5-9]|20)\d{2}([-/.](0[1-9]|1[0-2]))?")


def _period_labels(first: list[str], rest: list[list[str]]) -> bool:
    """Whether the first record's numbers name periods (a wide table: World Bank's, OECD's and
    statistics offices' files head their columns 1960, 1961, ...): three or more, each a year or
    a year and month, distinct and in order, over columns whose values are not such labels."""
    at = [i for i, v in enumerate(first) if _numberish(v)]
    labels = [first[i].strip() for i in at]
    if len(labels) < 3 or not all(_PERIOD.fullmatch(v) for v in labels):
        return False
    if labels != sorted(labels) or len(set(labels)) != len(labels):
        return False
    below = [r[i].strip() for r in rest for i in at if i < len(r) and r[i].strip()]
    return not any(_PERIOD.fullmatch(v) for v in below)


def sniff_csv(
    path: str, *, sample_bytes: int = 256 * 1024, delimiter: str | None = None, quote: str | None = None,
    header: bool | None = None, encoding: str | None = None, null: str | None = None, tsv: bool = False,
) -> CsvDialect:
    with open(path, "rb") as f:
        raw = f.read(sample_bytes)
    enc, bom = _encoding(raw)
    if encoding:
        enc = encoding
        bom = 3 if raw.startswith(codecs.BOM_UTF8) and enc.lower().startswith("utf") else bom
    text = raw[bom:].decode(enc if enc != "utf-8-sig" else "utf-8", errors="ignore")
    q = quote or '"'
    newline = "\r" if "\r" in text and "\n" not in text else "\n"
    if newline == "\r":
        text = text.replace("\r", "\n")  # the reader turns it into LF too (see CsvSource)
    if tsv:
        delimiter = delimiter or "\t"
    # The dialect shows in the first records; parsing the whole sample four times in pure
    # Python would cost a noticeable share of a small load. Long records get the whole sample.
    head = text[:65536] if text.count("\n", 0, 65536) >= 20 else text
    if not delimiter:
        delimiter = _delimiter(head, q)
    records = _records(head, delimiter, q)
    skip_lines, extra_name = 0, False
    if header is not False and records and _score(records)[1] not in (0, len(records[0])):
        # The first record is not as wide as most: notes above the table? (parsed once more only then)
        skip_lines, extra_name = _notes_above(head, delimiter, q)
        if skip_lines:
            text = text.split("\n", skip_lines)[-1]  # (the notes were read from the text: it holds them)
            head = text[:65536] if text.count("\n", 0, 65536) >= 20 else text
            records = _records(head, delimiter, q)
    if header is None:
        header = True
        if records and len(records) > 1:
            first = records[0][:-1] if extra_name else records[0]
            if any(_numberish(v) for v in first) and not _period_labels(first, records[1:]):
                header = False
            elif any(not v.strip() for v in first[1:]) or (len(first) == 1 and not first[0].strip()):
                header = False  # a blank name, except R's unnamed row-name column first
    null_columns: tuple[int, ...] | None = None
    null_seen: tuple[int, ...] = ()
    empty_null: tuple[int, ...] = ()
    if null is None:
        null, null_columns, null_seen, empty_null = sniff_null(text, delimiter, q, header)
    return CsvDialect(enc, delimiter, q, header, null, bom, null_columns, null_seen, newline, empty_null,
                      row_names=bool(header) and _row_names(records),
                      skip_lines=skip_lines if header else 0, extra_name=bool(header) and extra_name)


# Notes longer than this are not looked past: the file is then read from its first line.
NOTES_MAX_LINES = 60


def _notes_above(head: str, delimiter: str, quote: str) -> tuple[int, bool]:
    """(lines of notes above the table, whether its header ends in one empty name too many).

    Only where the first record does not fit the table below it (such a file loaded nothing
    before: every record but the first was malformed): the table starts at the first record
    that fits, followed by five records as wide as most; blank lines in between are passed over.
    Notes are never taken for rows: the table's first record must be a header (names, not
    numbers), and no note may be as wide as the table or mostly numbers, else nothing is skipped
    and the file's first records are refused at their lines, as before.
    """
    recs = _records_at(head, delimiter, quote)
    widths = Counter(len(r) for _, r in recs if r)
    if not widths:
        return 0, False
    width = widths.most_common(1)[0][0]
    if width < 2:
        return 0, False

    def fits(r: list[str]) -> tuple[bool, bool]:
        extra = len(r) == width + 1 and not r[-1].strip()
        return len(r) in (width, width - 1) or extra, extra

    for i, (line, r) in enumerate(recs):
        if line >= NOTES_MAX_LINES:
            break
        ok, extra = fits(r)
        below = [len(b) for _, b in recs[i + 1:] if b][:5]
        if ok and len(below) == 5 and all(w == width for w in below):
            if i and not _names(r[:-1] if extra else r):
                break
            return line, extra  # (0 when the table starts at the top, as almost every file's does)
        if i == 0 and (len(r) == width or extra):
            break  # the first record fits: no notes, whatever follows it
        if len(r) == width or _mostly_numbers(r):
            break  # a record of the table's own shape, or of numbers: not a note
    return 0, False


def _names(record: list[str]) -> bool:
    return bool(record) and not any(_numberish(v) for v in record) and all(v.strip() for v in record[1:])


def _mostly_numbers(record: list[str]) -> bool:
    values = [v for v in record if v.strip()]
    return bool(values) and sum(_numberish(v) for v in values) * 2 > len(values)


def _records_at(text: str, delimiter: str, quote: str) -> list[tuple[int, list[str]]]:
    """The records with the (0-based) line each starts on; the last is left out when the sample
    may have cut it."""
    reader = csv.reader(io.StringIO(text), delimiter=delimiter, quotechar=quote)
    out: list[tuple[int, list[str]]] = []
    line = 0
    try:
        for rec in reader:
            out.append((line, rec))
            line = reader.line_num
    except csv.Error:
        pass
    return out[:-1] if len(out) > 1 else out



def _row_names(records: list[list[str]]) -> bool:
    """Whether the header is one field short of every record below it (R's write.table with row
    names): the records, five or more, all as wide, and that width two or more. Not when every
    record ends in an empty field: that is a delimiter at the end of each data line, and naming
    a first column would shift every value one column along."""
    rest = [r for r in records[1:] if r]
    if len(rest) < 5 or not records[0] or all(not r[-1].strip() for r in rest):
        return False
    widths = {len(r) for r in rest}
    return len(widths) == 1 and len(records[0]) + 1 == widths.pop() >= 2


def _empty_in(columns: list[_ColumnSample], null: str, applies: tuple[int, ...] | None) -> tuple[int, ...]:
    """Columns where the sniffed marker applies and the sample also leaves fields empty.

    PostgreSQL's rule reads an empty field as an empty string once another marker is
    named, and a date or boolean column cannot hold one: such a file writes NULL both ways
    (the marker in one column, nothing in another), and only reading both as NULL loads it.
    Columns of free text keep the rule (the marker does not apply there either).
    """
    if null == "\\N":
        return ()  # PostgreSQL's own marker: its files mean "" by an empty field
    wanted = range(len(columns)) if applies is None else applies
    return tuple(i for i in wanted if i < len(columns) and columns[i].unquoted.get(""))


def sniff_null(
    text: str, delimiter: str, quote: str, header: bool
) -> tuple[str, tuple[int, ...] | None, tuple[int, ...], tuple[int, ...]]:
    """The file's null marker, the columns it applies to, the columns it was seen in, and
    those where an empty field is NULL too (_empty_in).

    PostgreSQL's default (an empty unquoted field is NULL, "" is an empty string) holds
    unless the file shows another marker: the word stands unquoted in a column whose
    other unquoted values are all numbers, dates, times or booleans, where it cannot be a
    value, or whose other values are all quoted. It then applies to every column except
    those holding unquoted free text.
    """
    d = re.escape(delimiter)
    markers = "|".join(re.escape(m) for m in NULL_MARKERS)
    if not re.search(f"(?:^|{d})(?:{markers})(?={d}|\r?$)", text, re.MULTILINE):
        return "", None, (), ()  # no marker word stands alone anywhere (the usual case, one C pass)
    columns = _field_columns(text, delimiter, quote, header)
    best, best_seen = "", tuple[int, ...]()
    for marker in NULL_MARKERS:
        seen = tuple(i for i, col in enumerate(columns) if col.evidence(marker))
        if len(seen) > len(best_seen):
            best, best_seen = marker, seen
    if not best:
        return "", None, (), ()
    # \N is PostgreSQL's own marker, never a word: it holds in every column.
    applies = tuple(i for i, col in enumerate(columns) if best == "\\N" or not col.free_text(best))
    return best, (None if len(applies) == len(columns) else applies), best_seen, _empty_in(columns, best, applies)


_TYPED = re.compile(
    r"(?i)[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]?(nan|inf|infinity)|t|f|true|false|yes|no|y|n|on|off"
    r"|\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}(:?\d{2})?)?)?|\d{2}:\d{2}(:\d{2}(\.\d+)?)?"
    # ...and as spreadsheets write them (core.value_formats): 03/15/2024 2:30 PM, 15.03.2024, 1.234,50
    r"|\d{1,2}[/.-]\d{1,2}[/.-]\d{4}([ T]\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?( ?[ap]m)?)?|\d{4}/\d{1,2}/\d{1,2}"
    r"|\d{1,2}:\d{2}(:\d{2})? ?[ap]m|[+-]?\d{1,3}([,. '\u00a0]\d{3})+([.,]\d+)?|[+-]?\d+,\d+"
)


def _typed(value: str) -> bool:
    """A number, date, time or boolean; a code with leading zeros (02134) is text, as inference says."""
    v = value.strip()
    return bool(_TYPED.fullmatch(v)) and not _CODE.fullmatch(v)


_CODE = re.compile(r"[+-]?0\d+(\.\d*)?")


@dataclass
class _ColumnSample:
    """What the sample shows of one column: its unquoted words and whether all are typed, and how
    many of its values were quoted."""

    unquoted: Counter[str]
    quoted: int = 0

    def _others(self, marker: str) -> list[str]:
        return [v for v in self.unquoted if v != marker and v.strip()]

    def evidence(self, marker: str) -> bool:
        if not self.unquoted.get(marker):
            return False
        others = self._others(marker)
        if not others:
            # Every other value quoted, the word alone bare: the writer's own null (a writer that
            # quotes every value but its nulls, as polars' non_numeric style does dates and text).
            return self.quoted >= 2
        return all(_typed(v) for v in others)

    def free_text(self, marker: str) -> bool:
        """Unquoted values that are neither typed nor the marker: the marker may be text here."""
        return any(not _typed(v) for v in self._others(marker))


def _field_columns(text: str, delimiter: str, quote: str, header: bool) -> list[_ColumnSample]:
    """Each column's unquoted values in the sample.

    Python's csv module drops the quotes, so each one-line record is read again without
    quoting: where both readings give the same number of fields, a field is unquoted when
    its raw form does not start with the quote character.
    """
    plain = list(csv.reader(io.StringIO(text), delimiter=delimiter, quoting=csv.QUOTE_NONE))
    reader = csv.reader(io.StringIO(text), delimiter=delimiter, quotechar=quote or '"')
    pairs: list[tuple[list[str], list[str] | None]] = []
    last = 0
    try:
        for rec in reader:
            raw = plain[last] if reader.line_num == last + 1 and last < len(plain) else None
            pairs.append((rec, raw))
            last = reader.line_num
    except csv.Error:
        pass
    if len(pairs) > 1 and not text.endswith("\n"):
        pairs.pop()  # the last record may be cut by the sample
    pairs = pairs[1 if header else 0:]
    width = Counter(len(r) for r, _ in pairs).most_common(1)[0][0] if pairs else 0
    columns = [_ColumnSample(Counter()) for _ in range(width)]
    for rec, raw in pairs:
        if raw is None or len(rec) != width:
            continue  # a quoted newline: no quoting information here
        quoted = [bool(quote) and f.startswith(quote) for f in raw] if len(raw) == width else (
            _quoted_fields(delimiter.join(raw), delimiter, quote))  # a quoted delimiter moved the fields
        if len(quoted) != width:
            continue
        for i, value in enumerate(rec):
            if not quoted[i]:
                columns[i].unquoted[value] += 1
            elif value:
                columns[i].quoted += 1
    return columns


def _quoted_fields(line: str, delimiter: str, quote: str) -> list[bool]:
    """Whether each field of a one-line record is quoted (a record with quoted delimiters, which a
    split on the delimiter cannot tell: R's and Python's writers quote "Adult, 1 Egg Stage" in every
    record of a file, and its NA markers went unseen)."""
    flags: list[bool] = []
    i, n = 0, len(line)
    while True:
        if i < n and line[i] == quote:
            i += 1
            while i < n:
                j = line.find(quote, i)
                if j < 0:
                    return []  # never closes on this line
                if j + 1 < n and line[j + 1] == quote:
                    i = j + 2  # a doubled quote inside the value
                    continue
                i = j + 1
                break
            else:
                return []  # ends inside the quotes
            flags.append(True)
            if i < n and line[i] != delimiter:
                return []  # text after the closing quote: not a field this reading knows
        else:
            j = line.find(delimiter, i)
            flags.append(False)
            i = n if j < 0 else j
        if i >= n:
            return flags
        i += 1  # the delimiter
        if i == n:
            flags.append(False)  # a trailing empty field
            return flags
