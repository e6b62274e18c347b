"""A NULL marker in a file whose every record quotes a delimiter (R's and Python's writers quote
"Adult, 1 Egg Stage"; palmerpenguins' penguins-raw.csv): it is sniffed, so the numbers are numbers."""

from __future__ import annotations

import csv
import random
from pathlib import Path

import pytest

from core.preview import inspect_source
from core.spec import SourceOptions


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_marker_among_numbers_is_seen_past_quoted_delimiters(seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    path = tmp_path / "raw.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)  # quotes only the fields that hold a comma, as R's write.csv and pandas do
        w.writerow(["study", "stage", "mass", "sex", "comments"])
        for i in range(200):
            w.writerow([f"PAL{i % 3}", f"Adult, {rng.randrange(1, 3)} Egg Stage",
                        "NA" if i % 17 == 0 else str(rng.randrange(2700, 6300)),
                        rng.choice(["MALE", "FEMALE", "NA"]),
                        rng.choice(["NA", "Not enough blood, for isotopes", "Nest never observed"])])
    info = inspect_source(SourceOptions(str(path)))
    assert info.options.null == "NA"
    assert dict(zip(info.columns, info.types))["mass"] == "integer"
    assert info.options.null_columns is not None and "mass" in info.options.null_columns
    assert "sex" not in info.options.null_columns and "comments" not in info.options.null_columns
    assert "kept as text in study, sex" in info.null_kept_note()
