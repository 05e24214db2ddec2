"""Build the Cython kernels in ``cython_ext/`` into ``mpiboost._ext``.

Environment switches:
``MPIBOOST_NO_OPENMP=1``  build without OpenMP (e.g. Apple clang without libomp);
``MPIBOOST_NATIVE=1``     add ``-march=native`` (fastest, not portable);
``MPIBOOST_BUILD_JOBS=N`` compile N extensions at a time (default: one per core);
``MPIBOOST_QUICK_BUILD=1`` compile with -O0 (slow kernels: for checking a package's contents).
"""
import os
import sys
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

HERE = Path(__file__).parent
openmp = os.environ.get("MPIBOOST_NO_OPENMP", "0") != "1" and sys.platform != "win32"
# No FMA contraction: a fused a * b + c rounds differently from the separate
# operations, and a compiler may fuse in one copy of a loop (its vector body)
# but not in another (its scalar remainder) or only on some targets (aarch64,
# -march=native), so a row's arithmetic would depend on where the row lies.
# MPIBOOST_QUICK_BUILD=1: -O0, for checks of what a package holds (tests/test_packaging.py), not for use
opt = "-O0" if os.environ.get("MPIBOOST_QUICK_BUILD", "0") == "1" else "-O3"
compile_args = [opt, "-ffp-contract=off", "-g0"]  # -g0: no debug info (a 2.7 MB wheel instead of 12 MB)
link_args = []
if openmp:
    compile_args.append("-fopenmp")
    link_args.append("-fopenmp")
if os.environ.get("MPIBOOST_NATIVE", "0") == "1":
    compile_args.append("-march=native")

extensions = [
    Extension(
        f"mpiboost._ext.{pyx.stem}",
        [str(pyx.relative_to(HERE))],
        include_dirs=[np.get_include(), "cython_ext"],
        extra_compile_args=compile_args,
        extra_link_args=link_args,
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
    )
    for pyx in sorted((HERE / "cython_ext").glob("*.pyx"))
]

# The extensions compile in parallel, one per core (MPIBOOST_BUILD_JOBS to choose): setuptools builds them
# one after another otherwise, which is most of an install from source.
jobs = int(os.environ.get("MPIBOOST_BUILD_JOBS", "0") or 0) or os.cpu_count() or 1

setup(
    options={"build_ext": {"parallel": jobs}},
    ext_modules=cythonize(
        extensions,
        include_path=["cython_ext"],
        nthreads=jobs if jobs > 1 and sys.platform.startswith("linux") else 0,  # fork: safe; spawn re-runs setup.py
        compiler_directives={
            "language_level": 3,
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
        },
    ),
)
