"""SPMD: under mpiexec every rank fits on its own rows and every rank gets the same model.

    mpiexec -n 4 python examples/spmd.py

Each rank reads (here: draws) only its rows; ``fit`` is collective; the model is the one of all
the rows on one process, byte for byte. ``predict`` is local to each rank.
"""
import hashlib

import numpy as np
from mpi4py import MPI

from mpiboost.sklearn import SAMMEClassifier

comm = MPI.COMM_WORLD
rng = np.random.default_rng(0)
X = rng.normal(size=(4000, 8))
y = np.digitize(X[:, 0] + 0.5 * X[:, 1], [-0.5, 0.5])  # three classes
a, b = comm.rank * 4000 // comm.size, (comm.rank + 1) * 4000 // comm.size
clf = SAMMEClassifier(rounds=40, weak_learner="tree", max_leaves=8).fit(X[a:b], y[a:b])
digest = hashlib.sha256(clf.model_.to_json().encode()).hexdigest()[:16]
digests = comm.gather(digest)
local = clf.score(X[a:b], y[a:b])
if comm.rank == 0:
    print(f"{comm.size} rank(s), model {digest}, the same on every rank: {len(set(digests)) == 1}")
    print(f"training accuracy of rank 0's rows: {local:.3f}")
