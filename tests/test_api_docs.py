"""The API reference (docs/api) builds from the docstrings with no warning, and lists every estimator."""
from __future__ import annotations

import subprocess
import sys

from mpi_util import ROOT


def test_the_api_reference_builds_without_a_warning(tmp_path):
    from mpiboost.sklearn import ESTIMATORS

    out = tmp_path / "html"
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-q", "-W", "--keep-going",
                           "-d", str(tmp_path / "doctrees"), str(ROOT / "docs" / "api"), str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    page = (out / "index.html").read_text(encoding="utf-8")
    for est in ESTIMATORS.values():
        assert f"mpiboost.sklearn.{est.__name__}" in page
    for name in ("mpiboost.train", "partial_fit", "feature_importances", "on_round_end"):
        assert name in page, name
