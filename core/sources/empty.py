"""A text file with nothing in it: no columns and no rows (core.load.empty says what a load of it does)."""

from __future__ import annotations

import codecs
from collections.abc import Iterator

from core.sources.base import Batch, Source
from core.spec import SourceOptions

_BLANK = b" \t\r\n"
_LOOK = 1 << 16  # a file of blanks longer than this is not taken for an empty export


def is_empty(path: str) -> bool:
    """Nothing but a byte-order mark, blanks and line ends (what an export of no rows may write)."""
    try:
        with open(path, "rb") as f:
            head = f.read(_LOOK + 1)
    except OSError:
        return False
    if len(head) > _LOOK:
        return False
    for bom in (codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        head = head.removeprefix(bom)
    return not head.strip(_BLANK)


class EmptySource(Source):
    """No columns, no rows: the plan maps nothing and the job loads nothing (core.load.empty)."""

    def __init__(self, options: SourceOptions, fmt: str) -> None:
        super().__init__(options)
        self.format = fmt

    def columns(self) -> list[str]:
        return []

    def batches(self, batch_rows: int, skip_rows: int = 0) -> Iterator[Batch]:
        return iter(())
