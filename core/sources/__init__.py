"""Readers that turn source files into bounded batches."""
