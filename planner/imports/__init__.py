"""Readers of the files users already hold: cloud price catalogs -> a price sheet, billing exports and
metrics -> a demand history (and the commitments found in a bill -> an inventory). Each reader only reads
and converts; the planner's own validation then checks what it wrote."""
