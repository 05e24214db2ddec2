/* OpenMP entry points that also compile without OpenMP (then one thread). */
#ifndef MPIBOOST_OPENMP_SHIM_H
#define MPIBOOST_OPENMP_SHIM_H
#ifdef _OPENMP
#include <omp.h>
static int mb_have_openmp(void) { return 1; }
static void mb_set_num_threads(int n) { omp_set_num_threads(n); }
static int mb_get_max_threads(void) { return omp_get_max_threads(); }
#else
static int mb_have_openmp(void) { return 0; }
static void mb_set_num_threads(int n) { (void)n; }
static int mb_get_max_threads(void) { return 1; }
#endif
#endif
