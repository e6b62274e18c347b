"""The first bad record in file order is the one reported, whatever kind it is.

A reader finds a malformed record (ragged, undecodable, a quote that never closes) as it reads;
a bad value is found by the server, often only when the COPY that carried it ends. Rows sent
before the malformed record may hold a bad value the server has not reported yet: they come
first in the file, so the open write is ended before the record is reported, and a value the
server refuses there is the error (psql names the same line). A malformed record then stops the
load as bad data (BadRecordError, exit status 1), not as bad arguments.

The raw path (the file's own bytes to COPY) meets some malformed records before the bytes of
the records ahead of them were sent (they share a chunk): there the load goes through the
parser instead (`reparse`), which sends every record ahead of the malformed one first.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol, TypeVar

from core.errors import BadRecordError, ParseInstead, SourceError

T = TypeVar("T")


class Flushes(Protocol):
    """A strategy, as far as the first bad record is concerned: its open write can be ended."""

    def flush(self) -> None: ...


def in_file_order(items: Iterable[T], strategy: Flushes, *, reparse: bool = False) -> Iterator[T]:
    """`items` (batches or chunks of the source, in order) as they come; a malformed record met
    while reading them is raised only once the rows sent before it are known good (or, with
    `reparse`, sends the load through the parser)."""
    it = iter(items)
    while True:
        try:
            item = next(it)
        except StopIteration:
            return
        except SourceError as exc:
            if exc.line is None:
                raise  # the file itself (vanished, unreadable): no row to weigh it against
            strategy.flush()  # raises WriteFailed when the server refused an earlier row
            if reparse:
                raise ParseInstead(str(exc).removeprefix(f"{exc.path}, line {exc.line}: ")) from None
            raise as_bad_record(exc) from None
        yield item


def as_bad_record(exc: SourceError) -> SourceError:
    """The reader's error as bad data (exit status 1); one that says so already (a value the
    client refuses, core.errors.RefusedValue) stays as it is."""
    if exc.exit_code == 1:
        return exc
    bad = BadRecordError("", path=exc.path, line=exc.line)
    bad.args = exc.args  # the message as the reader worded it
    return bad
