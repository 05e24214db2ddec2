/* Rounding doubles to int64 fixed-point units without branches, so that the
 * loops below vectorize (SSE2 has no packed double -> int64 conversion, and
 * the old `v >= 0 ? v + 0.5 : v - 0.5` cast kept every loop scalar).
 *
 * For |v| < 2^51, t = v + 1.5 * 2^52 lies in [2^52, 2^53), where the spacing
 * of doubles is exactly 1: the addition rounds v to the nearest integer (ties
 * to even) and leaves that integer in the low mantissa bits. The bits of t
 * minus the bits of 1.5 * 2^52 are therefore round(v) as an int64. Callers
 * choose their scale so that every term stays below 2^51 in size.
 *
 * This needs IEEE double arithmetic in round-to-nearest and no value-changing
 * optimizations (-ffast-math would fold (v + M) - M away); setup.py also
 * turns off FMA contraction, so that a product rounds the same way in the
 * vectorized body of a loop and in its scalar remainder. */
#ifndef MPIBOOST_FIXEDPOINT_H
#define MPIBOOST_FIXEDPOINT_H
#include <stdint.h>
#include <string.h>

#define MB_ROUND_MAGIC 6755399441055744.0 /* 1.5 * 2^52 */
#define MB_ROUND_MAGIC_BITS 0x4338000000000000ULL

static inline uint64_t mb_magic_bits(double v) {
    double t = v + MB_ROUND_MAGIC;
    uint64_t b;
    memcpy(&b, &t, 8);
    return b;
}

/* round(v) for |v| < 2^51 */
static inline int64_t mb_round_fixed(double v) {
    return (int64_t)(mb_magic_bits(v) - MB_ROUND_MAGIC_BITS);
}

/* sum_i round(a[i] * b[i]), every product below 2^51 in size. The sum of the
 * biased bit patterns wraps modulo 2^64; subtracting n biases at the end
 * leaves the exact total as long as it fits in an int64. */
static inline int64_t mb_fixed_dot(const double *restrict a, const double *restrict b, intptr_t n) {
    uint64_t s = 0;
    for (intptr_t i = 0; i < n; i++)
        s += mb_magic_bits(a[i] * b[i]);
    return (int64_t)(s - (uint64_t)n * MB_ROUND_MAGIC_BITS);
}

/* sum_i round(a[i]), every value below 2^51 in size */
static inline int64_t mb_fixed_sum(const double *restrict a, intptr_t n) {
    uint64_t s = 0;
    for (intptr_t i = 0; i < n; i++)
        s += mb_magic_bits(a[i]);
    return (int64_t)(s - (uint64_t)n * MB_ROUND_MAGIC_BITS);
}

/* y[i] += a * x[i] */
static inline void mb_axpy(double *restrict y, double a, const double *restrict x, intptr_t n) {
    for (intptr_t i = 0; i < n; i++)
        y[i] = y[i] + a * x[i];
}

/* Four mb_axpy calls in one sweep, adding in the same order (so the same
 * bits), with one load and store of y instead of four. x rows are `stride`
 * apart. */
static inline void mb_axpy4(double *restrict y, const double *restrict a, const double *restrict x,
                            intptr_t stride, intptr_t n) {
    const double *x0 = x, *x1 = x + stride, *x2 = x + 2 * stride, *x3 = x + 3 * stride;
    for (intptr_t i = 0; i < n; i++)
        y[i] = (((y[i] + a[0] * x0[i]) + a[1] * x1[i]) + a[2] * x2[i]) + a[3] * x3[i];
}
#endif
