"""The tests' shorthand for one batch run on files: the run's options as keywords, checked by
:meth:`mpiboost.driver.config.RunConfig.build` as the command line and the API check them."""
from __future__ import annotations

from typing import Optional, Sequence

from mpiboost.driver.batch import TrainResult
from mpiboost.driver.batch import train as _train
from mpiboost.driver.config import RunConfig


def train(comm, data: Sequence, *, algorithm: str, rounds: int, params: Optional[dict] = None,
          valid: Optional[Sequence] = None, callbacks: Sequence = (), resume=None,
          blocks: Optional[Sequence[int]] = None, **run) -> TrainResult:
    """:func:`mpiboost.driver.batch.train` of the configuration these keywords make."""
    config = RunConfig.build(algorithm, rounds, params, has_valid=bool(valid), **run)
    return _train(comm, data, config, valid=valid, callbacks=callbacks, resume=resume, blocks=blocks)
