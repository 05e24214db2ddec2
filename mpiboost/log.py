"""mpiboost's messages: one :mod:`logging` logger, ``"mpiboost"``.

Warnings, errors and notices (a run stopped by a signal, a phase's result) go through it; the progress
bar and the round log are the callbacks' (:mod:`mpiboost.callbacks`). By default the logger writes each
message to standard error as ``mpiboost: warning: ...`` / ``mpiboost: error: ...`` / ``mpiboost: ...``
(the command line's form) at level INFO, and does not pass them on to the root logger, so a script sees
them once. To take them over, use the logging API::

    import logging
    log = logging.getLogger("mpiboost")
    log.setLevel(logging.WARNING)          # warnings and errors only
    log.handlers[:] = [my_handler]         # or: log.handlers.clear(); log.propagate = True (your root's)
"""
from __future__ import annotations

import logging
import sys

logger = logging.getLogger("mpiboost")


class StderrHandler(logging.StreamHandler):
    """A handler writing to whatever ``sys.stderr`` is when a message comes (tools and tests replace it)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:  # StreamHandler sets it once; the current stderr is always used
        pass


class Format(logging.Formatter):
    """``mpiboost: error: ...``, ``mpiboost: warning: ...``, ``mpiboost: ...`` (INFO and below)."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.levelno >= logging.ERROR:
            return f"mpiboost: error: {message}"
        if record.levelno >= logging.WARNING:
            return f"mpiboost: warning: {message}"
        return f"mpiboost: {message}"


def _default() -> None:
    """The default: messages to standard error in the command line's form (once, at import)."""
    if not logger.handlers:
        handler = StderrHandler()
        handler.setFormatter(Format())
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False


_default()


def warning(message: str) -> None:
    logger.warning(message)


def error(message: str) -> None:
    logger.error(message)


def info(message: str) -> None:
    logger.info(message)


__all__ = ["Format", "StderrHandler", "error", "info", "logger", "warning"]
