"""Inputs: read the files, validate them, the model file, the commitments and supply tables, the arrays the model is built from."""
