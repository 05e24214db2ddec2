# A software prefetch: a loop over scattered rows asks for a later row's bins while it adds this one's,
# so the cache misses overlap instead of stalling one after another (a no-op where the compiler lacks it).
cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define mb_prefetch(p) __builtin_prefetch((const void *)(p), 0, 3)
    #else
    #define mb_prefetch(p) ((void)0)
    #endif
    """
    void mb_prefetch(const void* p) noexcept nogil
