"""Load strategies: one small class each behind one interface."""
