"""The pipeline: load inputs, make a plan (monolithic or decomposed), add the memo, write the outputs."""
