"""Backtests: rolling cut-offs over a demand history, the strategies and rules they compare, their statistics."""
