"""(being written) multisource generator."""

def add_arguments(parser):
    pass
