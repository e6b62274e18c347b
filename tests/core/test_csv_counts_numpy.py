"""Once copy-binary lends numpy, the CSV cutter's counts and bare-quote check run in numpy:
they must say exactly what the bytes methods and the regex say."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from core.sources.csv import records as cr
from core.sources.csv.records import count_byte, has_bare_quote, record_cut


@pytest.fixture
def lent(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(cr, "_NUMPY_BYTES", 1)  # every size goes through numpy
    monkeypatch.setattr(cr, "_numpy", None)
    cr.lend_numpy()
    yield


def _regex(data: bytes, delimiter: bytes, quote: bytes) -> bool:
    return quote in data and cr._bare_quote_pattern(delimiter, quote).search(data) is not None


@pytest.mark.parametrize("delimiter", [b",", b"\t", b";"])
def test_numpy_agrees_with_the_regex_and_bytes_methods(lent: None, delimiter: bytes) -> None:
    rng = random.Random(7)
    alphabet = b'ab"\n\r x' + delimiter
    for _ in range(4000):
        data = bytes(rng.choice(alphabet) for _ in range(rng.choice([1, 2, 3, 5, 9, 40])))
        assert cr._numpy is not None
        assert has_bare_quote(data, delimiter, b'"') == _regex(data, delimiter, b'"'), data
        assert count_byte(data, b'"') == data.count(b'"')
        assert count_byte(data, b"\n") == data.count(b"\n")


def test_records_and_lines_are_the_same_with_numpy(lent: None, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(13)
    samples = [bytes(rng.choice(b'a,"\n') for _ in range(rng.randint(1, 80))) for _ in range(3000)]
    with_numpy = [cr.records_and_lines(s, b'"') for s in samples]
    monkeypatch.setattr(cr, "_numpy", None)
    monkeypatch.setattr(cr, "_NUMPY_BYTES", 1 << 30)  # and not taken from sys.modules either
    assert with_numpy == [cr.records_and_lines(s, b'"') for s in samples]


def test_record_cut_is_the_same_with_numpy(lent: None, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(11)
    samples = [bytes(rng.choice(b'a,"\n') for _ in range(rng.randint(1, 60))) for _ in range(3000)]
    with_numpy = [record_cut(s, b'"') for s in samples]
    monkeypatch.setattr(cr, "_numpy", None)
    monkeypatch.setattr(cr, "_NUMPY_BYTES", 1 << 30)  # numpy, imported here, is not taken up again
    assert with_numpy == [record_cut(s, b'"') for s in samples]


def test_the_cutter_never_imports_numpy_by_itself() -> None:
    """Only a path that loads numpy anyway lends it (copy-binary's warm-up): copy-csv's raw
    path stays free of its import."""
    import subprocess
    import sys

    code = ("import sys; from core.sources.csv.records import count_byte, has_bare_quote; "
            "count_byte(b'a\"' * 100000, b'\"'); has_bare_quote(b'a\"b,' * 100000, b',', b'\"'); "
            "print('numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
