"""Exceptions with the exit codes the CLI promises.

Bad input (a file, dataset, row or option the user can fix) is an
:class:`InputError` and ends the job with exit code 2; anything else is a bug
and ends it with exit code 1.
"""


class MpiboostError(Exception):
    """Base class of mpiboost's own errors."""

    exit_code = 1


class InputError(MpiboostError):
    """Invalid input data or arguments; the message names the file/row/rank."""

    exit_code = 2


class CollectiveError(InputError):
    """An error every rank agreed on (see :meth:`mpiboost.comm.Comm.check`).

    All ranks raise it together, so the job can end cleanly without
    ``MPI_Abort``; only the center prints the message.
    """

    def __init__(self, message: str, exit_code: int = 2):
        super().__init__(message)
        self.exit_code = exit_code
