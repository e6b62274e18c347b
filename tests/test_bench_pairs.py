"""The bench's round-by-round ratios (bench/corpus_bench.py): pure arithmetic on the times it measured."""

from __future__ import annotations

from bench.corpus_bench import paired, round_ratios


def test_a_ratio_compares_the_runs_of_one_round() -> None:
    times = {"auto": [1.0, 2.0, 4.0], "psql \\copy": [1.5, 2.0, 2.0]}
    assert round_ratios(times, "auto", "psql \\copy") == [1.5, 1.0, 0.5]
    assert round_ratios(times, "auto", "missing") == []


def test_the_table_gives_each_round_and_the_median_for_the_criteria_of_each_shape() -> None:
    results = {
        "narrow": {"psql \\copy": [0.5, 0.6, 0.4], "auto": [0.6, 0.5, 0.5], "copy-csv": [0.7, 0.7, 0.7]},
        "mixed5m": {"psql \\copy": [20.0, 18.0], "auto": [10.0, 10.0], "L0: server COPY FROM its binary file": [9.0, 8.0],
                    "parallel-copy per-batch": [14.0, 12.0]},
    }
    lines = paired(results)
    assert "| narrow | auto against psql | 0.83, 1.20, 0.80 | 0.83 |" in lines
    assert "| mixed5m | auto against psql | 2.00, 1.80 | 1.90 |" in lines
    assert "| mixed5m | auto against L0 (its pace as a share of L0's) | 0.90, 0.80 | 0.85 |" in lines
    assert "| mixed5m | parallel-copy per-batch against psql | 1.43, 1.50 | 1.46 |" in lines
    assert not any("narrow | auto against L0" in line for line in lines)  # (the 1M shapes: auto against psql only)
