"""Sluice's loading engine: sources, mapping, strategies and jobs. Never imports Qt."""
