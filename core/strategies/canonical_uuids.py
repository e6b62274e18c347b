"""UUIDs written the usual way, `8b4ae5f1-a941-46a0-956a-26afbccdafe5`, read from their bytes.

polars' way (drop the dashes, decode the hex, check the shape with a regex) cost 0.46 CPU-s per
1M values, half of what binary COPY spares the server there (0.89 CPU-s per 1M values, by
bench/column_costs.py), and enough to make the client the slower side of a uuid-keyed load.
When every value of a batch has the canonical 36-character form (either case), the values lie
one after another in the string buffer, and the whole batch is a handful of numpy operations
(0.13-0.15 CPU-s per 1M in process). Any other batch takes polars' way; the other spellings
PostgreSQL accepts (braces, dashes elsewhere) go as text.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from core.strategies.arrow_buffers import string_buffers

_WIDTH = 36
_DASHES = [8, 13, 18, 23]


def canonical_uuids(s: pl.Series) -> pl.Series | None:
    """The 16 bytes of each value (null for nulls), or None when some value has another form."""
    import pyarrow as pa

    column = string_buffers(s)
    if column is None:
        return None  # no value, or not plain text
    offs, data, valid = column
    n = len(valid)
    lengths = np.diff(offs)
    m = int(valid.sum())
    if not (lengths[valid] == _WIDTH).all() or int(lengths.sum()) != m * _WIDTH:
        return None  # another form somewhere (or nulls that keep bytes): polars' way
    text = data[offs[0]: offs[0] + m * _WIDTH].reshape(m, _WIDTH)
    if not (text[:, _DASHES] == ord("-")).all():
        return None
    digit = (text - ord("0")) < 10  # (uint8: below '0' wraps round, high)
    letter = ((text | 0x20) - ord("a")) < 6  # a-f, either case
    if int(np.count_nonzero(digit | letter)) != 32 * m:
        return None  # a character that is no hex digit, besides the four dashes
    hexits = np.delete(text, _DASHES, axis=1)
    nibbles = (hexits & 0x0F) + 9 * (hexits >> 6)  # '0'-'9' -> 0-9, 'a'-'f' and 'A'-'F' -> 10-15
    raw = np.zeros((n, 16), dtype=np.uint8) if m != n else np.empty((n, 16), dtype=np.uint8)
    raw[valid] = (nibbles[:, 0::2] << 4) | nibbles[:, 1::2]  # (a null's 16 bytes: zeros, unread)
    mask = None if m == n else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pl.Series(s.name, pa.Array.from_buffers(pa.binary(16), n, [mask, pa.py_buffer(raw.tobytes())]))
