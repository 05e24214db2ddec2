"""Compiled kernels (built from ``cython_ext/*.pyx``); Python only orchestrates."""
