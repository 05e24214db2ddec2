/* Histograms of several weight channels in one pass over feature-major bins
 * (MultiBoost's candidate domains; see candidate_histograms in _multiboost.pyx).
 *
 * For a block of rows, the int64 units of the C channels are computed into a
 * small scratch array (row-major, the C channels of a row adjacent), then each
 * feature's column is scanned once: a row's bin is loaded once and its C
 * additions go to adjacent counters. Two interleaved copies of each feature's
 * histogram keep consecutive rows in the same bin from serializing on one
 * counter. One function per channel count, so the channel loops are unrolled.
 * Every sum is an int64 sum: the result does not depend on the order. */
#ifndef MPIBOOST_MULTIHIST_H
#define MPIBOOST_MULTIHIST_H
#include <stdint.h>
#include <stddef.h>

#define MB_CH_BLOCK 1024 /* rows per block */
#define MB_CH_MAX 4     /* channels per pass */

#define MB_DEFINE_MULTIHIST(C)                                                                         \
static void mb_multihist_##C(const uint8_t *XT, ptrdiff_t n, ptrdiff_t d, const unsigned char *binary, \
                             const double *a, const double *QT, const int *domain,                      \
                             const double *dscale, const signed char *y, double scale, const int *cand, \
                             ptrdiff_t lo, ptrdiff_t hi, int64_t *restrict G, int64_t *restrict L)      \
{                                                                                                      \
    for (ptrdiff_t b0 = lo; b0 < hi; b0 += MB_CH_BLOCK) {                                              \
        ptrdiff_t m = hi - b0 < MB_CH_BLOCK ? hi - b0 : MB_CH_BLOCK;                                   \
        int64_t tot[C];                                                                                \
        for (int c = 0; c < C; c++) tot[c] = 0;                                                        \
        for (ptrdiff_t r = 0; r < m; r++) {                                                            \
            ptrdiff_t i = b0 + r;                                                                      \
            for (int c = 0; c < C; c++) {                                                              \
                int64_t g = (int64_t)(a[i] * QT[cand[c] * n + i] * dscale[domain[i]] * scale + 0.5)     \
                            * y[i];                                                                    \
                G[r * C + c] = g;                                                                      \
                tot[c] += g;                                                                           \
            }                                                                                          \
        }                                                                                              \
        for (ptrdiff_t j = 0; j < d; j++) {                                                            \
            const uint8_t *col = XT + j * n + b0;                                                      \
            int64_t *restrict h = L + j * (512 * C);                                                   \
            if (binary[j]) {                                                                           \
                int64_t ones[C];                                                                       \
                for (int c = 0; c < C; c++) ones[c] = 0;                                               \
                for (ptrdiff_t r = 0; r < m; r++) {                                                    \
                    int64_t mask = -(int64_t)col[r];                                                   \
                    for (int c = 0; c < C; c++) ones[c] += G[r * C + c] & mask;                        \
                }                                                                                      \
                for (int c = 0; c < C; c++) {                                                          \
                    h[C + c] += ones[c];                                                               \
                    h[c] += tot[c] - ones[c];                                                          \
                }                                                                                      \
                continue;                                                                              \
            }                                                                                          \
            ptrdiff_t r = 0;                                                                           \
            for (; r + 2 <= m; r += 2) {                                                               \
                int64_t *p0 = h + (ptrdiff_t)col[r] * C;                                               \
                int64_t *p1 = h + (256 + (ptrdiff_t)col[r + 1]) * C;                                   \
                const int64_t *g = G + r * C;                                                          \
                for (int c = 0; c < C; c++) p0[c] += g[c];                                             \
                for (int c = 0; c < C; c++) p1[c] += g[C + c];                                         \
            }                                                                                          \
            if (r < m) {                                                                               \
                int64_t *p0 = h + (ptrdiff_t)col[r] * C;                                               \
                for (int c = 0; c < C; c++) p0[c] += G[r * C + c];                                     \
            }                                                                                          \
        }                                                                                              \
    }                                                                                                  \
}

MB_DEFINE_MULTIHIST(1)
MB_DEFINE_MULTIHIST(2)
MB_DEFINE_MULTIHIST(3)
MB_DEFINE_MULTIHIST(4)

/* Rows [lo, hi) of channels cand[0..C-1] (C <= MB_CH_MAX) into L (d x 2 x 256 x C);
 * QT is Q(k|x) domain-major (p x n); G is scratch of MB_CH_BLOCK x MB_CH_MAX units. */
static inline void mb_multihist(int C, const uint8_t *XT, ptrdiff_t n, ptrdiff_t d, const unsigned char *binary,
                                const double *a, const double *QT, const int *domain,
                                const double *dscale, const signed char *y, double scale, const int *cand,
                                ptrdiff_t lo, ptrdiff_t hi, int64_t *G, int64_t *L)
{
    switch (C) {
    case 1: mb_multihist_1(XT, n, d, binary, a, QT, domain, dscale, y, scale, cand, lo, hi, G, L); break;
    case 2: mb_multihist_2(XT, n, d, binary, a, QT, domain, dscale, y, scale, cand, lo, hi, G, L); break;
    case 3: mb_multihist_3(XT, n, d, binary, a, QT, domain, dscale, y, scale, cand, lo, hi, G, L); break;
    default: mb_multihist_4(XT, n, d, binary, a, QT, domain, dscale, y, scale, cand, lo, hi, G, L); break;
    }
}
#endif
