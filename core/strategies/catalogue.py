"""Every strategy, in catalogue order: importing the families registers them (core.strategies.base)."""

from core.errors import ConfigError
from core.strategies import copy, parallel, rows, script, values  # noqa: F401 - each registers its strategies
from core.strategies.base import REGISTRY, Strategy


def get_strategy(strategy_id: str) -> type[Strategy]:
    try:
        return REGISTRY[strategy_id]
    except KeyError:
        raise ConfigError(f"unknown strategy {strategy_id!r}; see `python -m app strategies`") from None


ORDER = [
    "connection-per-row",
    "row-autocommit",
    "row-transaction",
    "executemany",
    "pipeline",
    "multirow-values",
    "unnest",
    "copy-text",
    "copy-csv",
    "copy-binary",
    "parallel-copy",
    "script-autocommit",
    "script-transaction",
    "script-do-block",
]


def all_strategies() -> list[type[Strategy]]:
    """Every strategy, in the catalogue's order (slowest idea first, as the seeds tell it)."""
    return sorted(REGISTRY.values(), key=lambda c: ORDER.index(c.id) if c.id in ORDER else len(ORDER))
