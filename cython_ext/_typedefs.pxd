# Shared C types of the kernels; numpy dtypes of the same names live in
# mpiboost/_ext/__init__.py's callers (mpiboost.data.binning etc.).
cimport numpy as cnp

ctypedef cnp.npy_uint8 bin_t        # binned feature value
ctypedef cnp.npy_float64 weight_t   # row weights, margins
ctypedef cnp.npy_int64 fixed_t      # fixed-point units (exact sums)
ctypedef cnp.npy_intp idx_t
ctypedef cnp.npy_int32 cls_t        # class index 0..K-1 of a multiclass row

# Bin 255 is reserved for missing values, so a feature has at most 255 value bins.
cdef enum:
    MISSING_BIN = 255
    MAX_VALUE_BINS = 255

# A node's histogram is split between threads by features only above this many rows x features:
# below it, waking a sleeping thread (a futex, tens of microseconds on a busy machine) costs more
# than the adds it takes over (2,000 x 10 rows, 20 trees of 31 leaves: 29 -> 23 ms).
cdef enum:
    FEATURE_THREADS_MIN_CELLS = 65536

ctypedef fused feature_t:  # raw input types accepted by the loader
    cnp.npy_float32
    cnp.npy_float64
    cnp.npy_int8
    cnp.npy_uint8
    cnp.npy_int16
    cnp.npy_int32
