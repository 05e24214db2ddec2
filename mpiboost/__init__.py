"""mpiboost: distributed boosting over the ranks of an MPI job."""
__version__ = "0.1.0"
