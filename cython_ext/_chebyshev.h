/* Chebyshev moments of MultiBoost's line search (see chebyshev_moments in
 * _multiboost.pyx): per domain l and j = 0..K, the sums over rows of
 * a_i e^{-c u_i} T_j(u_i) (T_0 = 1, T_1 = u, T_{j+1} = 2u T_j - T_{j-1}),
 * each term rounded to an int64 on its own.
 *
 * Rounding: v + 1.5 * 2^52 rounds v to an integer in the low mantissa bits
 * (to nearest, ties to even) for |v| < 2^51; the caller's scale keeps every
 * term below 2^50. The same operations on every row, whether it goes through
 * the two-row vector path or the one-row path, so a row's integers never
 * depend on its neighbours (nor on how rows are split over ranks or
 * threads). Contraction into fused multiply-adds is off for the same
 * reason: both paths must round every product alike.
 *
 * Two consecutive rows of the same domain are processed as one vector of two
 * lanes (GCC/Clang vector extensions: SSE2 on x86-64, NEON on arm64, plain
 * scalar code elsewhere); each lane has its own int64 accumulators, added up
 * at the end. */
#ifndef MPIBOOST_CHEBYSHEV_H
#define MPIBOOST_CHEBYSHEV_H
#include <math.h>
#include <stdint.h>
#include <stddef.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif
#if defined(__clang__)
#define MB_NO_CONTRACT _Pragma("clang fp contract(off)")
#else
#define MB_NO_CONTRACT
#endif

typedef double mb_v2d __attribute__((vector_size(16)));
typedef long long mb_v2i __attribute__((vector_size(16)));

#define MB_ROUND_MAGIC 6755399441055744.0 /* 1.5 * 2^52 */

static inline mb_v2i mb_round2(mb_v2d v) {
    MB_NO_CONTRACT
    const mb_v2d m = {MB_ROUND_MAGIC, MB_ROUND_MAGIC};
    mb_v2d x = v + m;
    mb_v2i bits, mbits;
    memcpy(&bits, &x, 16);
    memcpy(&mbits, &m, 16);
    return bits - mbits;
}

/* Terms of rows (lane 0, lane 1) with first terms t0 and directions uu into
 * acc2 (K + 1 two-lane accumulators). A single row uses both lanes for
 * itself and counts lane 0 only (lane 1 is the same row again, thrown away
 * through the mask). */
static inline void mb_cheb_lanes(mb_v2d t0, mb_v2d uu, mb_v2i keep, int K, mb_v2i *acc2) {
    MB_NO_CONTRACT
    acc2[0] += mb_round2(t0) & keep;
    if (K == 0) return;
    mb_v2d t1 = t0 * uu;
    acc2[1] += mb_round2(t1) & keep;
    mb_v2d tw = uu + uu;
    for (int j = 2; j <= K; j++) {
        mb_v2d t2 = tw * t1 - t0;
        acc2[j] += mb_round2(t2) & keep;
        t0 = t1;
        t1 = t2;
    }
}

/* Rows [lo, hi): acc2 holds n_domains x (K + 1) two-lane accumulators (zeroed
 * by the caller). center == 0 skips the exponential. */
static void mb_chebyshev_rows(const double *a, const double *u, const int *domain, ptrdiff_t lo, ptrdiff_t hi,
                              double center, double scale, int K, mb_v2i *acc2) {
    MB_NO_CONTRACT
    const mb_v2i both = {-1, -1}, first = {-1, 0};
    ptrdiff_t i = lo;
    while (i < hi) {
        int l = domain[i];
        double s0 = a[i] * scale;
        if (center != 0.0) s0 = s0 * exp(-center * u[i]);
        if (i + 1 < hi && domain[i + 1] == l) {
            double s1 = a[i + 1] * scale;
            if (center != 0.0) s1 = s1 * exp(-center * u[i + 1]);
            mb_v2d t0 = {s0, s1}, uu = {u[i], u[i + 1]};
            mb_cheb_lanes(t0, uu, both, K, acc2 + (ptrdiff_t)l * (K + 1));
            i += 2;
        } else {
            mb_v2d t0 = {s0, s0}, uu = {u[i], u[i]};
            mb_cheb_lanes(t0, uu, first, K, acc2 + (ptrdiff_t)l * (K + 1));
            i += 1;
        }
    }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
#endif
