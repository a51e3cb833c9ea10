"""Solve: the monolithic MILP (HiGHS, CBC), the decomposition (Benders master, batched recourse LPs) and its workers."""
