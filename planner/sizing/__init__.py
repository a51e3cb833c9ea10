"""Sizing in closed form: spot economics (Young/Daly), queueing (Erlang C), backfill, spares, LLM serving."""
