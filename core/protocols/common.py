"""What the job's protocols share: small helpers about sources, errors and tables."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql

from core import mapping as mp
from core.db import TableRef
from core.errors import ConfigError, ConnectError, SluiceError
from core.sources.base import Source
from core.spec import ColumnMap

if TYPE_CHECKING:
    from core.plan import Plan


class _ParseInstead(Exception):
    """The raw pass-through was refused for the file's shape; the load runs again parsed."""


def _is_format_error(error: psycopg.Error) -> bool:
    """COPY refused the shape of the data (line endings, field count), not a value."""
    return isinstance(error, psycopg.errors.BadCopyFileFormat)


def _connection_lost(error: BaseException) -> bool:
    """A dropped or refused connection (worth a retry), as opposed to a refused statement."""
    if isinstance(error, ConnectError):
        return True
    if isinstance(error, psycopg.errors.QueryCanceled):
        return False
    return isinstance(error, psycopg.OperationalError)


def count_records(data: bytes, quote: bytes) -> int:
    """CSV records in `data` (whole records): newlines outside quoted fields, in linear time.

    Only quotes and newlines matter; a run of quotes counts by its parity (a doubled quote
    changes nothing), so what is left alternates outside/inside a quoted field.
    """
    return records_and_lines(data, quote)[0]


def records_and_lines(data: bytes, quote: bytes) -> tuple[int, int]:
    """count_records(), and the newlines `data` holds, in one pass over the bytes."""
    last = 1 if data and not data.endswith(b"\n") else 0  # the file's last record, with no newline
    if not quote or quote not in data:
        lines = data.count(b"\n")
        return lines + last, lines
    if len(quote) == 1:
        data = data.translate(None, _not_newline_or(quote))
    lines = data.count(b"\n")
    if len(quote) == 1:
        data = data.replace(quote + quote, b"")
    return sum(part.count(b"\n") for part in data.split(quote)[::2]) + last, lines


@functools.lru_cache(maxsize=8)
def _not_newline_or(quote: bytes) -> bytes:
    """Every byte but the newline and `quote`: what count_records drops before counting."""
    keep = b"\n" + quote
    return bytes(b for b in range(256) if b not in keep)


def raw_text_columns(plan: Plan) -> list[str]:
    """Target columns where the file's null marker is a value: COPY must not read it as NULL."""
    nulls = getattr(plan.source, "null_columns", None)
    if nulls is None:
        return []
    keep = set(nulls)
    return [m.target for m, s in zip(mp.included(plan.maps), plan.source.columns()) if s not in keep]


def source_is_csv(source: Source) -> bool:
    """A CSV whose own bytes COPY can read as Sluice does. Not one that writes NULL two ways
    (a marker, and empty fields in typed columns): COPY takes one NULL string."""
    return (source.format in ("csv", "tsv") and hasattr(source, "raw_chunks")
            and not getattr(source, "empty_null_columns", None))


def source_takes_raw(source: Source) -> bool:
    """A file whose own bytes one COPY reads as Sluice does: a CSV (source_is_csv), or
    PostgreSQL's text format (COPY's FORMAT text; not split into byte ranges for several streams)."""
    return source_is_csv(source) or (source.format == "pgtext" and hasattr(source, "raw_chunks"))


def raw_copy_options(source: Source) -> dict[str, str]:
    """COPY's options for the source's own bytes. The reader hands COPY UTF-8 whatever the
    file's encoding: ENCODING says so, so the server converts to the database's encoding
    (or refuses what it cannot store)."""
    d = source.dialect  # type: ignore[attr-defined]
    if source.format == "pgtext":  # COPY's own text format: no quote (core.sources.pgtext)
        return {"format": "text", "delimiter": d.delimiter, "null": d.null, "encoding": "UTF8"}
    return {"delimiter": d.delimiter, "quote": d.quote, "null": d.null, "encoding": "UTF8"}


def _row_values(source: Source, row: int, maps: list[ColumnMap]) -> list[Any] | None:
    try:
        for batch in source.batches(1, skip_rows=row):
            return list(mp.apply(batch.frame, maps).row(0))
    except SluiceError:
        return None
    return None


def _user_ddl(text: str) -> sql.SQL:
    """The edited CREATE TABLE runs as written, so it must be one CREATE TABLE statement."""
    import re

    body = text.strip().rstrip(";").strip()
    if not re.match(r"(?is)^CREATE\s+(UNLOGGED\s+)?TABLE\b", body) or ";" in _strip_literals(body):
        raise ConfigError("the new-table DDL must be a single CREATE TABLE statement")
    return sql.SQL(body)


def _strip_literals(text: str) -> str:
    import re

    return re.sub(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"", "", text)


def _drop(ctl: psycopg.Connection[Any], ref: TableRef) -> None:
    try:
        ctl.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(ref.ident()))
    except psycopg.Error:
        pass
