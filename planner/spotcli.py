"""`planner spot`: placeholder until the spot command is written."""


def run_spot(**opts):
    raise NotImplementedError
