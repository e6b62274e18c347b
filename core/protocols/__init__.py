"""How a load's rows become visible: one transaction, two-phase, staged, renamed, or chunk by chunk."""
