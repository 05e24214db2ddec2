"""Online boosting: algorithms that learn from a stream, one example at a time (no MPI, no files)."""
