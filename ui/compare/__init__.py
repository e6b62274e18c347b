"""The Compare tab's parts: its form, sessions, results model and charts (the tab itself: ui.compare.tab)."""
