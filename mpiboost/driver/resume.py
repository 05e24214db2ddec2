"""Resuming: the checks of a checkpoint against the run that continues it, and the replay of its rounds."""
from __future__ import annotations

import os
from typing import Optional, TYPE_CHECKING

from ..boost.base import Hypothesis
from ..errors import CollectiveError
from .record import checkpoint_record
from .validation import _valid_error

if TYPE_CHECKING:  # annotations only
    from ..boost.base import Algorithm
    from ..model import Model
    from ..protocol import Protocol


# ---------------------------------------------------------------- resuming
def comparable_params(algo: Algorithm) -> dict:
    """The parameters as a model records them (files of list parameters by their names only)."""
    out = dict(algo.params)
    for p in type(algo).parameters:
        if p.type is list and out.get(p.name):
            out[p.name] = [os.path.basename(str(f)) for f in out[p.name]]
    return out


def check_resume(ckpt: Model, algorithm: str, run: Optional[dict] = None) -> None:
    """A checkpoint must come from this run: same algorithm, seed and training data (before loading).

    Raises CollectiveError saying what differs (every rank decides alike).
    The parameters are compared by :func:`check_resume_params` once the
    algorithm has resolved them against the data (domain names to ids).
    """
    from ..data.fingerprint import differences

    if ckpt.algorithm != algorithm:
        raise CollectiveError(f"checkpoint was made by {ckpt.algorithm}, not {algorithm}")
    record = checkpoint_record(ckpt)
    if run is None or record is None:
        return  # a partial model without a record (the API): the caller vouches for it
    if record.get("seed") != run["seed"]:
        raise CollectiveError(f"checkpoint was made with --seed {record.get('seed')}, this run has --seed {run['seed']}")
    if record.get("valid_fraction") != run.get("valid_fraction"):
        raise CollectiveError(f"checkpoint was made with --valid-fraction {record.get('valid_fraction')}, this run "
                              f"has {run.get('valid_fraction')}: other training rows")
    if record.get("valid_metric", "error") != run.get("valid_metric", "error"):
        raise CollectiveError(f"checkpoint was made with --valid-metric {record.get('valid_metric', 'error')}, this "
                              f"run has {run.get('valid_metric', 'error')}: the rounds are chosen otherwise")
    diff = differences(record.get("data") or [], run["data"])
    if diff:
        raise CollectiveError("checkpoint was made on other training data: " + "; ".join(diff[:4]))


def check_resume_params(ckpt: Model, algo: Algorithm) -> None:
    """The checkpoint's parameters must be this run's (CollectiveError naming each that differs)."""
    params = comparable_params(algo)
    differ = sorted(k for k in set(ckpt.params) | set(params) if ckpt.params.get(k) != params.get(k))
    if differ:
        shown = "; ".join(f"{k}: {ckpt.params.get(k)!r} then, {params.get(k)!r} now" for k in differ)
        raise CollectiveError("checkpoint parameters differ from this run's: " + shown)


def replay(algo: Algorithm, resume: Optional[Model], rounds: int, scorer, vshard, proto: Protocol,
           history: Optional[list] = None, replayed: Optional[dict] = None) -> int:
    """Collective: re-apply a checkpoint's rounds (``apply`` only); the number of rounds done.

    With ``history`` (a list), the validation error after each replayed round
    is appended to it (the round choice of a resumed run needs the whole curve);
    ``replayed`` (a dict) receives the last replayed round's ``apply`` output
    (its training errors: the summary's figures when no round is left to run).
    """
    if resume is None:
        return 0
    check_resume_params(resume, algo)
    done = 0
    for r, members in resume.truncated(min(rounds, resume.n_rounds)).rounds():
        if r == 0:
            continue  # round 0: stumps the algorithm's setup builds itself (a start model), not a round
        (stump, coef, k), rest = members[0], members[1:]
        out = algo.apply(Hypothesis(stump, coef, domain=k, more=tuple((s, c) for s, c, _ in rest)))
        if replayed is not None:
            replayed.clear()
            replayed.update(out or {})
        done += 1
        if history is not None:
            history.append(_valid_error(scorer, vshard, proto))
    _valid_error(scorer, vshard, proto)
    return done
