"""The CSV reader's chunks: whatever the chunk size, they hold the file's records whole and in
order, and parsing them chunk by chunk gives what parsing the file in one piece gives."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from core.sources.csv.source import CsvSource
from core.spec import SourceOptions

_FIELDS = ["plain", "", '"quoted, with comma"', '"two\nlines"', '"say ""hi"""', "x y", '"a""b"', "7"]


def _file(tmp_path: Path, seed: int, bare: bool) -> Path:
    rng = random.Random(seed)
    rows = []
    for i in range(rng.randint(1, 400)):
        fields = [str(i)] + [rng.choice(_FIELDS) for _ in range(3)]
        if bare and rng.random() < 0.02:
            fields[2] = "37°36'37.8\"N"  # a quote inside an unquoted field
        rows.append(",".join(fields))
    src = tmp_path / f"f{seed}.csv"
    src.write_bytes(("id,a,b,c\n" + "\n".join(rows) + rng.choice(["", "\n"])).encode())
    return src


@pytest.mark.parametrize("bare", [False, True])
def test_chunks_hold_whole_records_in_order(tmp_path: Path, bare: bool) -> None:
    for seed in range(12):  # each file cut four ways, the smallest into 7-byte chunks (30 files took 20 s)
        src = _file(tmp_path, seed, bare)
        source = CsvSource(SourceOptions(str(src)))
        body = src.read_bytes().split(b"\n", 1)[1]
        if not body.endswith(b"\n"):
            body += b"\n"
        whole = source.parse(body)
        for size in (7, 64, 300, 1 << 20):
            chunks = list(source.raw_chunks(size))
            assert b"".join(c.data for c in chunks) == body, (seed, size)
            parts = [source.parse(c.data) for c in chunks]
            assert sum(p.height for p in parts) == whole.height, (seed, size)
            assert [r for p in parts for r in p.rows()] == whole.rows(), (seed, size)
