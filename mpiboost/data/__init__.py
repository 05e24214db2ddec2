"""Data layer: HDF5 schema, per-rank loading, binning, converters, generators."""
