"""The version of mpiboost: written here alone (``pyproject.toml`` reads it; the models record it)."""
__version__ = "0.2.0"
