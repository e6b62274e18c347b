"""Qt widgets, models and the worker that runs core jobs off the GUI thread."""
