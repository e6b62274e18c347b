"""Benchmarks: whole commands timed as a user runs them, as ratios to psql in the same run."""
