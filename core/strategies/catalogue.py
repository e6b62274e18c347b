"""Importing this module registers every strategy, in catalogue order."""

from core.strategies import copy, parallel, rows, script, values  # noqa: F401
