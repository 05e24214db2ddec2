"""Compiled kernels (built from ``cython_ext/*.pyx``); Python only orchestrates.

The OpenMP runtime reads its settings once, when the first kernel loads, so
the defaults are set here, before any kernel module is imported:
``OMP_WAIT_POLICY=passive`` makes idle worker threads sleep instead of
spinning between parallel regions. Spinning buys microseconds on an idle
node but, on a shared or oversubscribed one (several ranks per core, another
job, MPI's own busy polling), the spinning threads steal the cores the
working ones need: with a busy process per core, 50 rounds took 2.5 s with
spinning threads and 0.17 s with sleeping ones on a 2-core node
(``scripts/bench/bench_contention.py``). A user's own setting wins.
"""
import os

os.environ.setdefault("OMP_WAIT_POLICY", "passive")
