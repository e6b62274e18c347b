"""The Load tab's panels: widgets and how they show things, no database or file work."""
