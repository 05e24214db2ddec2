"""(being written) transfer generator."""

def add_arguments(parser):
    pass
