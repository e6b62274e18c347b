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
NULL_MARKERS = ("NA", "\\N", "NULL", "null", "N/A", "#N/A")
DELIMITERS = (",", ";", "\t", "|")


@dataclass(frozen=True)
class CsvDialect:
    encoding: str
    delimiter: str
    quote: str
    header: bool
    null: str
    bom_bytes: int


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
    try:
        raw.decode("cp1252")
        return "cp1252", 0
    except UnicodeDecodeError:
        return "latin-1", 0


def _records(text: str, delimiter: str, quote: str) -> list[list[str]]:
    reader = csv.reader(io.StringIO(text), delimiter=delimiter, quotechar=quote)
    out: list[list[str]] = []
    try:
        for rec in reader:
            out.append(rec)
    except csv.Error:
        pass
    return out[:-1] if len(out) > 1 else out  # the last record may be cut by the sample


def _score(records: list[list[str]]) -> float:
    widths = [len(r) for r in records if r]
    if not widths:
        return 0.0
    width, count = Counter(widths).most_common(1)[0]
    if width < 2:
        return 0.0
    return count / len(widths) * 1000 + width


def _numberish(s: str) -> bool:
    t = s.strip()
    if not t:
        return False
    try:
        float(t)
        return True
    except ValueError:
        return t[:4].isdigit() and "-" in t  # dates


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
    if tsv:
        delimiter = delimiter or "\t"
    # The dialect shows in the first records; parsing the whole sample four times in pure
    # Python would cost a noticeable share of a small load. Long records get the whole sample.
    head = text[:65536] if text.count("\n", 0, 65536) >= 20 else text
    if not delimiter:
        delimiter = max(DELIMITERS, key=lambda d: (_score(_records(head, d, q)), d == ","))
    records = _records(head, delimiter, q)
    if header is None:
        header = True
        if records and len(records) > 1:
            first = records[0]
            if any(_numberish(v) for v in first):
                header = False
            elif len(set(first)) < len(first) or any(not v.strip() for v in first):
                header = False if any(not v.strip() for v in first) else header
    if null is None:
        # Only an unquoted field can be a null marker ("NULL" in quotes is text).
        # One pass over the whole sample: nulls can be rare.
        d = re.escape(delimiter)
        markers = "|".join(re.escape(m) for m in NULL_MARKERS)
        seen = Counter(re.findall(f"(?:^|{d})({markers})(?={d}|\r?$)", text, re.MULTILINE))
        null = seen.most_common(1)[0][0] if seen else ""
    return CsvDialect(enc, delimiter, q, header, null, bom)
