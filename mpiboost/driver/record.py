"""What a run records for its checkpoints, and reading it back: the one module that reads a checkpoint's record.

A checkpoint's ``info`` holds the run that made it (``"checkpoint"``: seed, training data, validation split and
metric) and the choices made before its rounds, one record per selection (``"source_trust"``,
``"noise_check"``, ``"search"``: :mod:`mpiboost.driver.selection`). A resumed run reads them here, checks them,
and makes no choice anew.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence, TYPE_CHECKING

from ..errors import CollectiveError

if TYPE_CHECKING:  # annotations only
    from ..model import Model
    from ..comm import Comm


def run_record(comm: Comm, data: Sequence, seed: int) -> dict:
    """Collective: what a checkpoint of this run records (seed, fingerprint of the training files).

    Parameters
    ----------
    comm : Comm
        The ranks of the run: a bad file is an error on every rank, and in-memory rows are fingerprinted over
        all of them.
    data : sequence
        The training files (paths), or the in-memory files of the API (:class:`mpiboost.data.memory.MemoryFile`).
    seed : int
        The run's seed.

    Returns
    -------
    dict
        ``{"seed": seed, "data": [one fingerprint per file]}`` (:mod:`mpiboost.data.fingerprint`), the same on
        every rank.
    """
    from ..data.fingerprint import fingerprint
    from ..data.format import inspect

    if any(hasattr(f, "local") for f in data):  # in-memory rows (mpiboost.train on arrays)
        from ..data.memory import fingerprint_memory

        return {"seed": int(seed), "data": [fingerprint_memory(comm, f) for f in data]}
    with comm.collective_guard():
        for path in data:
            inspect(path)  # the schema first: a bad file is reported as such, not as a fingerprint failure
        fp = fingerprint(data)
    return {"seed": int(seed), "data": fp}


def _info(ckpt: Optional[Model]) -> dict:
    return ckpt.info if ckpt is not None and isinstance(ckpt.info, dict) else {}


def checkpoint_record(ckpt: Optional[Model]) -> Optional[dict]:
    """The run a checkpoint records (seed, data fingerprint), or None for a model saved otherwise."""
    record = _info(ckpt).get("checkpoint")
    return record if isinstance(record, dict) else None


def selection_record(ckpt: Optional[Model], key: str, valid: Callable[[dict], bool]) -> Optional[dict]:
    """The record of the selection ``key`` a checkpoint made (None when it has none, or no checkpoint).

    Raises CollectiveError when the record is there but ``valid`` refuses it: a record this version did not
    write (another version's, or an edited file) is not trusted to stand for a choice.
    """
    rec = _info(ckpt).get(key)
    if rec is None:
        return None
    if not isinstance(rec, dict) or not valid(rec):
        raise CollectiveError(f"--resume: the checkpoint's {key} record is not one this version wrote")
    return rec


__all__ = ["checkpoint_record", "run_record", "selection_record"]
