"""Label noise: SmoothBoost against AdaBoost on data with 10% of the training labels flipped.

    python examples/noisy_labels.py
    mpiexec -n 2 python examples/noisy_labels.py      # each rank trains on its share, same models

The Long-Servedio generator is the SmoothBoost paper's hard case for AdaBoost: AdaBoost's weights
pile onto the flipped rows, SmoothBoost caps every weight.
"""
import numpy as np
from mpi4py import MPI

from mpiboost.data import synth
from mpiboost.sklearn import AdaBoostClassifier, SmoothBoostClassifier

comm = MPI.COMM_WORLD
gen = synth.module("longservedio")
train = gen.generate(20000, noise=0.1, seed=1)
test = gen.generate(10000, seed=2)
a, b = comm.rank * len(train.y) // comm.size, (comm.rank + 1) * len(train.y) // comm.size  # this rank's rows
for est in (AdaBoostClassifier(rounds=300), SmoothBoostClassifier(rounds=300)):
    est.fit(train.X[a:b], train.y[a:b])  # collective: every rank gets the same model
    error = 1.0 - est.score(test.X, test.y)
    if comm.rank == 0:
        print(f"{type(est).__name__:24s} test error {error:.4f}")
