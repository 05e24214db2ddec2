/* Exact summation of doubles with a "superaccumulator": one 128-bit integer
 * bucket per binary exponent. A finite double is m * 2^(e - 1075) with a
 * 53-bit integer m and biased exponent e; adding m into bucket e is exact, and
 * a 128-bit bucket takes 2^74 additions before it could overflow. Buckets of
 * several threads or ranks merge by integer addition, so the total does not
 * depend on the order or the split of the inputs. */
#ifndef MPIBOOST_SUPERACC_H
#define MPIBOOST_SUPERACC_H
#include <math.h>
#include <stdint.h>
#include <string.h>

#define MB_NBUCKETS 2048
typedef __int128 mb_i128;

static inline int mb_acc_add1(mb_i128 *acc, double v) {
    uint64_t bits;
    memcpy(&bits, &v, 8);
    unsigned e = (unsigned)((bits >> 52) & 0x7ff);
    int64_t m = (int64_t)(bits & 0xFFFFFFFFFFFFFULL);
    int64_t s = -(int64_t)(bits >> 63); /* 0 or -1 */
    if (e == 0x7ff) return 0;
    if (e) m |= (int64_t)1 << 52; else e = 1;
    acc[e] += (mb_i128)((m ^ s) - s);
    return 1;
}

/* acc: 4 * MB_NBUCKETS buckets of scratch, the total ends in the first
 * MB_NBUCKETS. Consecutive values often share an exponent; rotating over four
 * accumulators keeps those read-modify-writes of one bucket from serializing.
 * Returns 0 if a NaN or infinity was seen. */
static inline int mb_acc_add(mb_i128 *acc, const double *x, Py_ssize_t n) {
    int ok = 1;
    Py_ssize_t i = 0;
    for (; i + 4 <= n; i += 4) {
        ok &= mb_acc_add1(acc, x[i]);
        ok &= mb_acc_add1(acc + MB_NBUCKETS, x[i + 1]);
        ok &= mb_acc_add1(acc + 2 * MB_NBUCKETS, x[i + 2]);
        ok &= mb_acc_add1(acc + 3 * MB_NBUCKETS, x[i + 3]);
    }
    for (; i < n; i++) ok &= mb_acc_add1(acc, x[i]);
    for (int k = 1; k < 4; k++)
        for (int e = 0; e < MB_NBUCKETS; e++) acc[e] += acc[k * MB_NBUCKETS + e];
    return ok;
}

/* Grouped: acc holds n_groups consecutive accumulators; returns 0 on a
 * non-finite value or a group id out of range. */
static inline int mb_acc_add_grouped(mb_i128 *acc, const double *x, const int *g, Py_ssize_t n, int n_groups) {
    int ok = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t bits;
        memcpy(&bits, &x[i], 8);
        unsigned e = (unsigned)((bits >> 52) & 0x7ff);
        int64_t m = (int64_t)(bits & 0xFFFFFFFFFFFFFULL);
        int64_t s = -(int64_t)(bits >> 63);
        int k = g[i];
        if (e == 0x7ff || k < 0 || k >= n_groups) { ok = 0; continue; }
        if (e) m |= (int64_t)1 << 52; else e = 1;
        acc[(Py_ssize_t)k * MB_NBUCKETS + e] += (mb_i128)((m ^ s) - s);
    }
    return ok;
}

static inline void mb_acc_merge(mb_i128 *into, const mb_i128 *from) {
    for (int e = 0; e < MB_NBUCKETS; e++) into[e] += from[e];
}

/* Write the accumulator as doubles whose exact sum is the accumulated total
 * (three exact 53-bit pieces per non-zero bucket); returns how many. `out`
 * needs 3 * MB_NBUCKETS entries. */
static inline Py_ssize_t mb_acc_terms(const mb_i128 *acc, double *out) {
    Py_ssize_t k = 0;
    const unsigned __int128 mask = (((unsigned __int128)1) << 53) - 1;
    for (int e = 0; e < MB_NBUCKETS; e++) {
        mb_i128 v = acc[e];
        if (!v) continue;
        int neg = v < 0;
        unsigned __int128 a = neg ? (unsigned __int128)(-v) : (unsigned __int128)v;
        for (int piece = 0; piece < 3; piece++) {
            uint64_t c = (uint64_t)((a >> (53 * piece)) & mask);
            if (c) {
                double d = ldexp((double)c, e - 1075 + 53 * piece);
                out[k++] = neg ? -d : d;
            }
        }
    }
    return k;
}
#endif
