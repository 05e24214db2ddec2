"""The seven UCI data sets of the online agnostic boosting paper's Table 1, as in-memory streams.

``load(name)`` gives ``(X, y, values, k, description)``: X float64 with a
nominal feature held as its value index ``0 .. V-1`` (values sorted) and
NaN for a missing cell, y the class index (classes sorted, numerically when
they are numbers), ``values[j]`` = V for a nominal feature and 0 for a
numeric one, k the number of classes, and a line saying which features are
nominal and which numeric. The files are read from the datasets directory
(:data:`common.DATASETS`: ``$MPIBOOST_DATASETS`` or ``<repo>/datasets``):

* balance-scale: 4 nominal features (1..5), 3 classes;
* car: 6 nominal features, 4 classes;
* satimage (Landsat): sat.trn + sat.tst pooled, 36 numeric, 6 classes;
* segmentation: segmentation.data + .test pooled (5 header lines each, class
  first), 19 numeric, 7 classes;
* mice-protein: Data_Cortex_Nuclear.xls (through ``samme_tables.mice_csv``),
  MouseID / Genotype / Treatment / Behavior dropped, the 8-way ``class``,
  77 numeric with missing cells as NaN;
* yeast: the sequence name dropped, 8 numeric, 10 classes;
* abalone: sex nominal (F / I / M), 7 numeric, class = rings: the 28
  distinct ring counts present, as the paper's k = 28.

Row and class counts are checked against the published UCI counts of
``samme_tables`` (the rows are in file order; the experiments shuffle them).
"""
from __future__ import annotations

import argparse
import csv
import functools
import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common as C  # noqa: E402
import samme_tables as S  # noqa: E402

NAMES = ("balance-scale", "car", "satimage", "segmentation", "mice-protein", "yeast", "abalone")
TITLES = {"balance-scale": "Balance", "car": "Cars", "satimage": "Landsat", "segmentation": "Segment",
          "mice-protein": "Mice", "yeast": "Yeast", "abalone": "Abalone"}
MICE_CSV = C.DEFAULT_WORKDIR / "samme" / "convert" / "mice-protein" / "Data_Cortex_Nuclear.csv"  # samme_tables' copy


def _rows(path: Path, sep=None, skip: int = 0) -> list[list[str]]:
    if not path.exists():
        sys.exit(f"error: {path} not found (see $MPIBOOST_DATASETS)")
    lines = path.read_text().splitlines()[skip:]
    return [[c.strip() for c in (line.split(sep) if sep else line.split())] for line in lines if line.strip()]


def _class_order(labels) -> list:
    try:
        return sorted(set(labels), key=float)
    except ValueError:
        return sorted(set(labels))


def _encode(feats: list[list[str]], nominal: list[bool]) -> tuple[np.ndarray, list[int]]:
    """Nominal columns as sorted value indices, numeric ones as floats ('' or '?': NaN)."""
    cols = list(zip(*feats))
    X = np.empty((len(feats), len(cols)))
    values = []
    for j, col in enumerate(cols):
        if nominal[j]:
            vals = _class_order(col)
            pos = {v: i for i, v in enumerate(vals)}
            X[:, j] = [pos[v] for v in col]
            values.append(len(vals))
        else:
            X[:, j] = [float(v) if v not in ("", "?") else np.nan for v in col]
            values.append(0)
    return X, values


def _raw(name: str, root: Path) -> tuple[list, list, list[bool]]:
    """(labels, feature rows as strings, which features are nominal)."""
    if name == "balance-scale":
        rows = _rows(root / "balance-scale" / "balance-scale.data", ",")
        return [r[0] for r in rows], [r[1:] for r in rows], [True] * 4
    if name == "car":
        rows = _rows(root / "car" / "car.data", ",")
        return [r[-1] for r in rows], [r[:-1] for r in rows], [True] * 6
    if name == "satimage":  # a first line of column numbers in each file
        rows = [r for f in ("sat.trn", "sat.tst") for r in _rows(root / "satimage" / f, skip=1)]
        return [r[-1] for r in rows], [r[:-1] for r in rows], [False] * 36
    if name == "segmentation":  # two comment lines, a blank, the header, a blank; then "CLASS,f1,...,f19"
        rows = [r for f in ("segmentation.data", "segmentation.test")
                for r in _rows(root / "segmentation" / f, ",", skip=5)]
        return [r[0] for r in rows], [r[1:] for r in rows], [False] * 19
    if name == "mice-protein":
        src = S.mice_csv(root / "mice-protein" / "Data_Cortex_Nuclear.xls", MICE_CSV)
        with open(src, newline="") as f:
            table = list(csv.reader(f))
        head, body = table[0], [r for r in table[1:] if any(c.strip() for c in r)]
        drop = set(S.MICE_DROP.split(",")) | {"class"}
        keep = [j for j, h in enumerate(head) if h not in drop]
        cls = head.index("class")
        return [r[cls] for r in body], [[r[j] for j in keep] for r in body], [False] * len(keep)
    if name == "yeast":
        rows = _rows(root / "yeast" / "yeast.data")
        return [r[-1] for r in rows], [r[1:-1] for r in rows], [False] * 8
    if name == "abalone":
        rows = _rows(root / "abalone" / "abalone.data", ",")
        return [r[-1] for r in rows], [r[:-1] for r in rows], [True] + [False] * 7
    raise ValueError(f"unknown data set {name!r}; choose from {', '.join(NAMES)}")


@functools.lru_cache(maxsize=None)
def load(name: str, root: Path = C.DATASETS):
    """``(X, y, values, k, description)`` of one data set (see the module docstring)."""
    labels, feats, nominal = _raw(name, Path(root))
    X, values = _encode(feats, nominal)
    classes = _class_order(labels)
    pos = {c: i for i, c in enumerate(classes)}
    y = np.array([pos[c] for c in labels], dtype=np.int64)
    problems = []
    if len(y) != S.N_EXPECTED[name]:
        problems.append(f"{len(y)} rows, expected {S.N_EXPECTED[name]}")
    if len(classes) != S.DATASETS[name][4]:
        problems.append(f"{len(classes)} classes, expected {S.DATASETS[name][4]}")
    expected = S.DATASETS[name][3]
    counts = Counter(int(c) if name == "satimage" else c for c in labels)
    if expected is not None and dict(counts) != expected:
        problems.append(f"class counts {dict(counts)} differ from the published UCI counts {expected}")
    missing = int(np.isnan(X).sum())
    if name == "mice-protein" and missing != 1396:
        problems.append(f"{missing} missing cells, expected 1,396")
    if problems:
        sys.exit(f"error: {name}: " + "; ".join(problems))
    n_nom = sum(1 for v in values if v)
    parts = []
    if n_nom:
        parts.append(f"{n_nom} nominal ({'/'.join(str(v) for v in sorted(set(v for v in values if v)))} values)")
    if len(values) - n_nom:
        parts.append(f"{len(values) - n_nom} numeric")
    desc = " + ".join(parts) + (f", {missing:,} missing cells (NaN)" if missing else "")
    return X, y, values, len(classes), desc


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.parse_args(argv)  # no options: the sets are read from $MPIBOOST_DATASETS
    rows = []
    for name in NAMES:
        X, y, values, k, desc = load(name)
        rows.append([name, f"{len(y):,}", X.shape[1], k, desc])
    print(C.markdown_table(["data", "n", "d", "k", "features"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
