"""Messages go through the "mpiboost" logging logger: by default to stderr in the command line's form, and
an application can take them over with the logging API (level, handlers)."""
from __future__ import annotations

import logging

import pytest

from mpiboost import cli, log


def _csv(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,b,c\n1,0.5,2\n0,1.5,3\n1,2.5,1\n0,0.1,0\n")
    return path


def test_warnings_print_in_the_command_line_form_by_default(tmp_path, capsys):
    assert cli.main(["convert", str(_csv(tmp_path)), "--format", "csv", "--out", str(tmp_path / "t.h5")]) == 0
    err = capsys.readouterr().err
    assert "mpiboost: warning: " in err and "the label is the first column, 'a'" in err, err


def test_an_application_takes_the_messages_over(tmp_path, capsys):
    class Keep(logging.Handler):
        def __init__(self):
            super().__init__()
            self.records = []

        def emit(self, record):
            self.records.append(record)

    keep, saved = Keep(), list(log.logger.handlers)
    log.logger.handlers[:] = [keep]
    try:
        assert cli.main(["convert", str(_csv(tmp_path)), "--format", "csv", "--out", str(tmp_path / "t.h5")]) == 0
        assert cli.main(["predict", "--model", str(tmp_path / "none.h5"), "--data", str(tmp_path / "t.h5"),
                         "--out", str(tmp_path / "p.csv")]) == 2
    finally:
        log.logger.handlers[:] = saved
    levels = [(r.levelno, r.getMessage()) for r in keep.records]
    assert any(lv == logging.WARNING and "the label is the first column" in m for lv, m in levels), levels
    assert any(lv == logging.ERROR and "none.h5" in m for lv, m in levels), levels
    assert "mpiboost:" not in capsys.readouterr().err  # nothing written past the application's handler


@pytest.mark.parametrize("level,prefix", [(logging.INFO, "mpiboost: "), (logging.WARNING, "mpiboost: warning: "),
                                          (logging.ERROR, "mpiboost: error: ")])
def test_the_format_of_each_level(level, prefix):
    record = logging.LogRecord("mpiboost", level, __file__, 1, "a message", None, None)
    assert log.Format().format(record) == prefix + "a message"
