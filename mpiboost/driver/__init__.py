"""The training drivers: load the inputs, set up the algorithm, replay a checkpoint, run the rounds and
summarize (:mod:`mpiboost.driver.batch`). The algorithms know nothing of files, MPI or printing; the
driver orchestrates them, and the CLI and the Python API (:func:`mpiboost.train`) call it."""
