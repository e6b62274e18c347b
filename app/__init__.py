"""Sluice's entry points: the workbench window and the headless commands."""
