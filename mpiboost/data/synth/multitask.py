"""(being written) multitask generator."""

def add_arguments(parser):
    pass
