"""Core: errors users can act on, atomic writes, CSV-safe text, units, progress, executors (the bottom layer)."""
