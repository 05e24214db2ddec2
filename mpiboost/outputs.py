"""Output paths, checked before any work: never an input, never a device, always writable.

Every command that writes files calls :func:`check_outputs` first (the
center, for the distributed commands, inside an agreed check), so a wrong path
fails in a second with exit code 2 instead of destroying an input or losing
hours of training at the final write.
"""
from __future__ import annotations

import os
import stat
from typing import Iterable, Optional, Sequence

from .atomic import clean_stale, discard, temporary_beside
from .errors import InputError

PROBE_BYTES = 4096  # a probe write this large fails on a full disk, where creating an empty file may not


def _stat(path: str) -> Optional[os.stat_result]:
    try:
        return os.stat(path)
    except OSError:
        return None


def check_output(option: str, path: str) -> None:
    """``path`` can be replaced atomically: absent or a regular file, in a writable directory."""
    if not path:
        raise InputError(f"{option}: the path is empty")
    st = _stat(path)
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise InputError(f"{option} {path}: is a directory; {option} names the file to write")
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{option} {path}: exists and is not a regular file (a device, FIFO or socket); "
                             "mpiboost replaces only regular files")
    parent = os.path.dirname(path) or "."
    if not os.path.isdir(parent):
        raise InputError(f"{option} {path}: directory {parent} does not exist")
    try:
        tmp = temporary_beside(path)
    except OSError as exc:
        raise InputError(f"{option} {path}: cannot write in {parent} ({exc.strerror or exc})") from None
    try:
        with open(tmp, "wb") as f:
            f.write(b"\0" * PROBE_BYTES)
            f.flush()
            os.fsync(f.fileno())
    except OSError as exc:
        raise InputError(f"{option} {path}: cannot write in {parent} ({exc.strerror or exc})") from None
    finally:
        discard(tmp)


def check_outputs(outputs: Sequence[tuple[str, Optional[str]]], inputs: Iterable[tuple[str, Optional[str]]]) -> None:
    """Check every ``(option, path)`` output against the others and every input; InputError naming both.

    Outputs must be distinct files, none the same file (path, link or
    inode) as an input; each is checked by :func:`check_output`. Stale
    temporary files of our own naming beside each output are removed.
    """
    outs = [(o, os.fspath(p)) for o, p in outputs if p is not None]
    ins = [(o, os.fspath(p)) for o, p in inputs if p is not None]
    for i, (opt, path) in enumerate(outs):
        check_output(opt, path)
        st = _stat(path)
        real = os.path.realpath(path)
        for other_opt, other in outs[:i]:
            ost = _stat(other)
            if os.path.realpath(other) == real or (st and ost and os.path.samestat(st, ost)):
                raise InputError(f"{opt} {path} and {other_opt} {other} are the same file; give each output its own")
        for in_opt, in_path in ins:
            ist = _stat(in_path)
            if os.path.realpath(in_path) == real or (st and ist and os.path.samestat(st, ist)):
                raise InputError(f"{opt} {path} is the input {in_opt} {in_path}: writing it would destroy the input")
        clean_stale(path)


def save_model(model, path: str) -> Optional[str]:
    """Save ``model`` to ``path``; on a failed write keep it elsewhere: the error message (None: saved).

    The trained model is never lost to a full disk or a vanished directory at
    the end of a run: it goes to the first of the temporary directory, the
    working directory and the home directory that takes it.
    """
    import tempfile

    from .atomic import why as reason

    try:
        model.save(path)
        return None
    except (OSError, RuntimeError) as exc:
        why = reason(exc)
    name = f"mpiboost-rescued-{os.getpid()}-{os.path.basename(path) or 'model.h5'}"
    for where in (tempfile.gettempdir, os.getcwd, lambda: os.path.expanduser("~")):
        try:
            folder = where()
        except OSError:  # a working directory that vanished with its mount
            continue
        rescue = os.path.join(folder, name)
        try:
            model.save(rescue)
        except (OSError, RuntimeError):
            continue
        return f"could not write --model {path} ({why}); the trained model was saved to {rescue}"
    return f"could not write --model {path} ({why}), nor a copy in the temporary, working or home directory"
