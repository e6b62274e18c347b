"""The Compare tab (kept as this module so imports keep working); its parts live in ui/compare/."""

from ui.compare.charts import CompareCharts, RateAxis
from ui.compare.form import DEFAULT_STRATEGIES, RTT_CHOICES, CompareForm, parse_counts
from ui.compare.model import CompareModel
from ui.compare.session import CompareSession, strategy_colour
from ui.compare.tab import CompareHost, CompareTab

__all__ = ["DEFAULT_STRATEGIES", "RTT_CHOICES", "CompareCharts", "CompareForm", "CompareHost", "CompareModel",
           "CompareSession", "CompareTab", "RateAxis", "parse_counts", "strategy_colour"]
