"""`mpiboost convert`: LIBSVM and CSV text to the HDF5 schema.

Real files are checked against a deliberately naive reference parser written
here, so a bug in the converter's vectorized parsing cannot hide behind
itself. Malformed inputs go through the real command line (a subprocess per
case, all started at once to keep the suite fast).
"""
from __future__ import annotations

import bz2
import gzip
import lzma
import os
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from mpiboost.cli import main
from mpiboost.cli import convert as convert_cli
from mpiboost.data import convert
from mpiboost.data.format import inspect, read_arrays
from mpiboost.errors import InputError


# ------------------------------------------------------------------ helpers
def _open_text(path):
    path = str(path)
    if path.endswith(".bz2"):
        return bz2.open(path, "rt")
    if path.endswith(".gz"):
        return gzip.open(path, "rt")
    return open(path)


def reference_libsvm(path, d, every=1):
    """The simplest possible LIBSVM reader: a dense row per data line.

    With ``every=k`` only every k-th data row is parsed (rows 0, k, 2k, ...).
    """
    X, y = [], []
    with _open_text(path) as f:
        data_lines = (ln for ln in (raw.split("#")[0].strip() for raw in f) if ln)
        for r, line in enumerate(data_lines):
            if r % every:
                continue
            label, *entries = line.split()
            row = np.zeros(d)
            for entry in entries:
                i, v = entry.split(":")
                row[int(i) - 1] = float(v)
            X.append(row)
            y.append(1 if float(label) == 1 else -1)
    return np.array(X), np.array(y)


def label_counts(y):
    values, counts = np.unique(y, return_counts=True)
    return dict(zip(values.tolist(), counts.tolist()))


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def cli(*args) -> int:
    return main(["convert", *map(str, args)])


# ------------------------------------------------------------ real datasets
def test_a9a_round_trip(datasets, tmp_path, capsys):
    src, out = datasets / "a9a" / "a9a", tmp_path / "a9a.h5"
    assert cli(src, "--format", "libsvm", "--out", out, "--n-features", 123) == 0
    summary = capsys.readouterr().out.strip().splitlines()
    assert len(summary) == 1
    assert "32,561 rows" in summary[0] and "123 features" in summary[0] and str(out) in summary[0]
    assert "labels -1: 24,720 / 1: 7,841 " in summary[0] and summary[0].endswith(" s")

    data = read_arrays(out)
    assert data["X"].shape == (32561, 123) and data["X"].dtype == np.float32
    assert data["y"].dtype == np.int8
    assert label_counts(data["y"]) == {-1: 24720, 1: 7841}
    X_ref, y_ref = reference_libsvm(src, 123)
    np.testing.assert_array_equal(data["X"], X_ref.astype(np.float32))
    np.testing.assert_array_equal(data["y"], y_ref)
    assert inspect(out).attrs["source_format"] == "libsvm"


def test_a9a_test_split_needs_n_features(datasets, tmp_path):
    # a9a.t never uses feature 123: inferring d gives 122, so train and test
    # only line up when the width is given explicitly.
    src = datasets / "a9a" / "a9a.t"
    inferred = convert.convert_libsvm(src, tmp_path / "t1.h5")
    given = convert.convert_libsvm(src, tmp_path / "t2.h5", n_features=123)
    assert (inferred.n, inferred.d, given.d) == (16281, 122, 123)
    assert given.label_counts == {-1: 12435, 1: 3846}
    a, b = read_arrays(tmp_path / "t1.h5")["X"], read_arrays(tmp_path / "t2.h5")["X"]
    np.testing.assert_array_equal(b[:, :122], a)
    assert not b[:, 122].any()


def test_ijcnn1_round_trip_and_float_labels(datasets, tmp_path):
    src = datasets / "ijcnn1" / "ijcnn1.bz2"
    result = convert.convert_libsvm(src, tmp_path / "ij.h5", n_features=22)
    assert (result.n, result.d) == (49990, 22)
    assert result.label_counts == {-1: 45137, 1: 4853}
    data = read_arrays(tmp_path / "ij.h5")
    assert data["X"].shape == (49990, 22)
    X_ref, y_ref = reference_libsvm(src, 22, every=5)  # a fifth of the rows keeps the test quick
    np.testing.assert_array_equal(data["X"][::5], X_ref.astype(np.float32))
    np.testing.assert_array_equal(data["y"][::5], y_ref)

    # ijcnn1.trn is the same data with labels written -1.0/1.0.
    trn = convert.convert_libsvm(datasets / "ijcnn1" / "ijcnn1.trn.bz2", tmp_path / "trn.h5", n_features=22)
    assert (trn.n, trn.d) == (49990, 22)
    other = read_arrays(tmp_path / "trn.h5")
    np.testing.assert_array_equal(other["X"], data["X"])
    np.testing.assert_array_equal(other["y"], data["y"])


def test_cod_rna_whitespace_csv(datasets, tmp_path):
    src, out = datasets / "cod-rna" / "cod-rna.txt", tmp_path / "cod.h5"
    args = ["--format", "csv", "--no-header", "--delimiter", "whitespace", "--label-column", "0", "--out", out]
    assert cli(src, *args) == 0
    data = read_arrays(out)
    assert data["X"].shape == (59535, 8)
    assert label_counts(data["y"]) == {-1: 39690, 1: 19845}
    ref = np.loadtxt(src)
    np.testing.assert_array_equal(data["X"], ref[:, 1:].astype(np.float32))
    np.testing.assert_array_equal(data["y"], ref[:, 0].astype(np.int8))
    assert inspect(out).feature_names is None  # no header, no names



def test_yeast_text_labels_and_dropped_name_column(datasets, tmp_path):
    src, out = datasets / "yeast" / "yeast.data", tmp_path / "yeast.h5"
    assert cli(src, "--format", "csv", "--no-header", "--delimiter", "whitespace", "--label-column", "-1",
               "--drop-columns", "0", "--out", out) == 0
    info = inspect(out)
    assert (info.n, info.d) == (1484, 8)
    assert info.classes == ["CYT", "ERL", "EXC", "ME1", "ME2", "ME3", "MIT", "NUC", "POX", "VAC"]
    y = read_arrays(out)["y"]
    counts = dict(zip(info.classes, np.bincount(y, minlength=10).tolist()))
    assert counts == {"CYT": 463, "NUC": 429, "MIT": 244, "ME3": 163, "ME2": 51, "ME1": 44, "EXC": 35,
                      "VAC": 30, "POX": 20, "ERL": 5}  # as yeast.names says
    rows = [line.split() for line in src.read_text().splitlines() if line.strip()]
    np.testing.assert_array_equal(read_arrays(out)["X"], np.array([r[1:9] for r in rows], np.float32))
    np.testing.assert_array_equal(np.array(info.classes)[y], [r[9] for r in rows])

# -------------------------------------------------------------- LIBSVM, small
def test_libsvm_comments_blank_lines_and_label_forms(tmp_path):
    src = write(
        tmp_path / "s.svm",
        "# a comment line\n"
        "+1 1:0.5 3:2   # trailing comment\n"
        "\n"
        "-1.0 4:-1e-3\n"
        "   \n"
        "1.0 3:7 1:1\n"  # indices need not be sorted
        "-1\n"  # a row with no entries is all zeros
        "+1.0 2:0\r\n",
    )
    r = convert.convert_libsvm(src, tmp_path / "s.h5")
    assert (r.n, r.d) == (5, 4) and r.label_counts == {-1: 2, 1: 3}
    data = read_arrays(tmp_path / "s.h5")
    expected = np.array([[0.5, 0, 2, 0], [0, 0, 0, -1e-3], [1, 0, 7, 0], [0, 0, 0, 0], [0, 0, 0, 0]], np.float32)
    np.testing.assert_array_equal(data["X"], expected)
    np.testing.assert_array_equal(data["y"], [1, -1, 1, -1, 1])


def test_libsvm_zero_one_labels_are_kept(tmp_path):
    # 0/1 labels stay 0/1 (no longer mapped to -1/+1): y holds the values, no classes attribute.
    src = write(tmp_path / "z.svm", "1 1:1\n0 2:1\n0 1:2\n")
    r = convert.convert_libsvm(src, tmp_path / "z.h5", n_features=5)
    assert r.d == 5 and r.label_counts == {0: 2, 1: 1}
    data = read_arrays(tmp_path / "z.h5")
    np.testing.assert_array_equal(data["y"], [1, 0, 0])
    assert data["y"].dtype == np.int8 and inspect(tmp_path / "z.h5").classes is None


def test_libsvm_positive_label_one_vs_rest(tmp_path):
    src = write(tmp_path / "m.svm", "1 1:1\n2 1:2\n3 1:3\n2.0 1:4\n")
    r = convert.convert_libsvm(src, tmp_path / "m.h5", positive_label="2")  # compared as numbers
    np.testing.assert_array_equal(read_arrays(tmp_path / "m.h5")["y"], [-1, 1, -1, 1])
    assert r.label_counts == {-1: 2, 1: 2}


@pytest.mark.parametrize("suffix, opener", [(".gz", gzip.open), (".bz2", bz2.open), (".xz", lzma.open)])
def test_libsvm_compressed_equals_plain(tmp_path, suffix, opener):
    text = "".join(f"{1 if i % 3 else -1} {i % 7 + 1}:{i * 0.25} 9:{-i}\n" for i in range(200))
    plain = write(tmp_path / "p.svm", text)
    packed = tmp_path / f"p.svm{suffix}"
    with opener(packed, "wt") as f:
        f.write(text)
    convert.convert_libsvm(plain, tmp_path / "a.h5")
    convert.convert_libsvm(packed, tmp_path / "b.h5")
    a, b = read_arrays(tmp_path / "a.h5"), read_arrays(tmp_path / "b.h5")
    np.testing.assert_array_equal(a["X"], b["X"])
    np.testing.assert_array_equal(a["y"], b["y"])
    assert a["X"].shape == (200, 9)


def test_libsvm_many_chunks_limit_dtype_compression(tmp_path, monkeypatch):
    monkeypatch.setattr(convert.common, "CHUNK_ROWS", 7)  # many chunks through the writer
    text = "".join(f"{1 if i % 2 else -1} {i % 5 + 1}:{i}\n" + ("# note\n" if i % 4 == 0 else "") for i in range(100))
    src = write(tmp_path / "c.svm", text)
    r = convert.convert_libsvm(src, tmp_path / "c.h5", dtype="float64", compression="gzip", limit=60)
    assert (r.n, r.d) == (60, 5)
    data = read_arrays(tmp_path / "c.h5")
    assert data["X"].dtype == np.float64
    np.testing.assert_array_equal(data["X"][np.arange(60), np.arange(60) % 5], np.arange(60))
    np.testing.assert_array_equal(data["y"], np.where(np.arange(60) % 2, 1, -1))
    with h5py.File(tmp_path / "c.h5") as f:
        assert f["X"].compression == "gzip"


def test_error_in_a_later_chunk_leaves_nothing(tmp_path, monkeypatch):
    # Several chunks are already written when line 23 fails: the partial
    # temporary file must be discarded.
    monkeypatch.setattr(convert.common, "CHUNK_ROWS", 4)
    lines = [f"+1 1:{i}" for i in range(20)]
    lines.insert(5, "# comment")
    lines.insert(9, "")
    lines.insert(22, "-1 1:oops")
    src = write(tmp_path / "late.svm", "\n".join(lines) + "\n")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    with pytest.raises(InputError, match=r"late\.svm:23: value 'oops' of feature 1 is not a number"):
        convert.convert_libsvm(src, out_dir / "late.h5", n_features=3)
    assert os.listdir(out_dir) == []


def test_libsvm_vectorized_path_agrees_with_row_checks():
    # The converter parses a batch vectorized and, only if that rejects it,
    # re-checks row by row for the message. Both must accept the same rows,
    # and accepted rows must parse as the reference parser says.
    rng = np.random.default_rng(7)
    good = ["1:1", "2:0.5", "3:-2", "4:1e-3", "2:7", "3:+4"]
    bad = ["0:1", "-1:1", "2.5:1", "1:x", "1:nan", "1:inf", "4", "1:2:3", ":1", "1:", "5:1", "1:1e300",
           "qid:1", "\u0663:1", "99999999999999999999:1"]
    labels = ["1", "-1", "+1", "-1.0", "1.0", "0", "2", "x"]
    outcomes = set()
    for _ in range(400):
        batch = convert._LibsvmBatch()
        for r in range(int(rng.integers(1, 5))):
            pool = good + bad if rng.random() < 0.3 else good
            toks = [str(t) for t in rng.choice(pool, size=int(rng.integers(0, 4)))]
            batch.lines.append(r + 1)
            batch.labels.append(str(rng.choice(labels[:5] if rng.random() < 0.8 else labels)))
            batch.counts.append(len(toks))
            batch.tokens += toks
        n_features = 4 if rng.random() < 0.5 else None

        def parser():
            return convert._LibsvmParser("f", convert._LabelMap(None, True), n_features, np.dtype(np.float32))

        try:
            fast = parser()
            y, rows, cols, vals = fast._fast(batch)
        except convert._Retry:
            with pytest.raises(convert._BadRow):
                parser()._check_rows(batch)
            with pytest.raises(InputError, match=r"^f:\d+: "):
                parser().parse(batch)
            outcomes.add("rejected")
            continue
        parser()._check_rows(batch)  # must accept as well
        outcomes.add("accepted")
        d = n_features or (int(cols.max()) + 1 if cols.size else 1)
        X = np.zeros((len(batch), d))
        X[rows, cols] = vals
        text = "".join(f"{lab} {' '.join(batch.tokens[sum(batch.counts[:i]):sum(batch.counts[:i + 1])])}\n"
                       for i, lab in enumerate(batch.labels))
        X_ref, y_ref = _reference_from_text(text, d)
        np.testing.assert_array_equal(X, X_ref)
        # y holds provisional codes; resolved, they are the label values as written.
        res = fast.labels.resolve()
        assert [res.classes[i] for i in res.index[y]] == y_ref
    assert outcomes == {"accepted", "rejected"}


def _reference_from_text(text, d):
    X, y = [], []
    for line in text.splitlines():
        label, *entries = line.split()
        row = np.zeros(d)
        for entry in entries:
            i, v = entry.split(":")
            row[int(i) - 1] = float(v)
        X.append(row)
        y.append(label)
    # The label values: numbers if every label reads as one, else the text.
    try:
        values = [float(v) for v in y]
        y = [int(v) if v.is_integer() else v for v in values]
    except ValueError:
        pass
    return np.array(X), y


@pytest.mark.parametrize("weight", [None, 3], ids=["no-weight", "weight-column"])
def test_csv_vectorized_path_agrees_with_row_checks(weight):
    """The fast path accepts exactly the batches the row checks accept, with the same values; with a weight
    column (the last here) its values are the weights, not a feature, and a missing, negative or text weight is
    refused by both."""
    rng = np.random.default_rng(11)
    values = ["1", "2.5", "-3e2", " 4", "", "?", "NA", "NaN", "nan", "inf", "red", "1e300", "? "]
    for _ in range(300):
        rows = []
        for _ in range(int(rng.integers(1, 5))):
            row = [str(rng.choice(["1", "-1", "0", "yes"] if rng.random() < 0.2 else ["1", "-1"]))]
            row += [str(v) for v in rng.choice(values[:9] if rng.random() < 0.7 else values, size=3)]
            if rng.random() < 0.05:
                row.append("1")
            rows.append(row)

        def parser():
            labels = convert._LabelMap(None, False)
            return convert._CsvParser("f", 4, ["y", "a", "b", "c"], 0, None, False, labels, np.dtype(np.float32), "",
                                      weight=weight)

        try:
            X, y, _, w = parser()._fast(rows)
        except convert._Retry:
            with pytest.raises(convert._BadRow):
                parser()._check_rows(rows)
            continue
        parser()._check_rows(rows)
        missing = {"", "?", "NA", "NaN", "nan"}
        ref = np.array([[np.nan if v.strip() in missing else float(v) for v in r[1:]] for r in rows], np.float64)
        if weight is None:
            np.testing.assert_array_equal(X, ref.astype(np.float32))
            assert w is None
        else:
            np.testing.assert_array_equal(X, ref[:, :2].astype(np.float32))
            np.testing.assert_array_equal(w, [float(r[weight]) for r in rows])
            assert (w >= 0).all()


# ----------------------------------------------------------------- CSV, small
def test_csv_header_names_missing_values_and_string_domains(tmp_path):
    src = write(
        tmp_path / "d.csv",
        "site,a,label,b\n"
        "north,1,1,2\n"
        "south,?,0,NA\n"
        "\n"
        "north,,1,nan\n"
        "east,3.5,0,NaN\n",
    )
    r = convert.convert_csv(src, tmp_path / "d.h5", label_column="label", domain_column="site")
    assert (r.n, r.d, r.n_domains) == (4, 2, 3)
    data = read_arrays(tmp_path / "d.h5")
    expected = np.array([[1, 2], [np.nan, np.nan], [np.nan, np.nan], [3.5, np.nan]], np.float32)
    np.testing.assert_array_equal(data["X"], expected)  # NaN == NaN in assert_array_equal
    np.testing.assert_array_equal(data["y"], [1, 0, 1, 0])  # 0/1 labels are kept
    np.testing.assert_array_equal(data["domain"], [0, 1, 0, 2])  # order of first appearance
    info = inspect(tmp_path / "d.h5")
    assert info.feature_names == ["a", "b"]
    assert info.domain_names == ["north", "south", "east"]


def test_csv_integer_domains_used_directly(tmp_path):
    src = write(tmp_path / "i.csv", "y,x1,dom,x2\n1,0.5,3,1\n-1,1.5,0,2\n1,2.5,3,3\n")
    r = convert.convert_csv(src, tmp_path / "i.h5", domain_column=2)
    data = read_arrays(tmp_path / "i.h5")
    np.testing.assert_array_equal(data["domain"], [3, 0, 3])
    np.testing.assert_array_equal(data["X"], [[0.5, 1], [1.5, 2], [2.5, 3]])
    assert r.n_domains == 2
    info = inspect(tmp_path / "i.h5")
    assert info.domain_names is None and info.feature_names == ["x1", "x2"]


def test_csv_positive_label_string_compare_and_last_column(tmp_path, capsys):
    src = write(tmp_path / "a.csv", "39, 77516, <=50K\n50, 83311, >50K\n38, 215646, <=50K\n")
    assert cli(src, "--format", "csv", "--no-header", "--label-column", "-1",
               "--positive-label", ">50K", "--out", tmp_path / "a.h5") == 0
    data = read_arrays(tmp_path / "a.h5")
    np.testing.assert_array_equal(data["y"], [-1, 1, -1])
    np.testing.assert_array_equal(data["X"], [[39, 77516], [50, 83311], [38, 215646]])
    assert "labels -1: 2 / 1: 1 " in capsys.readouterr().out
    # A positive label that never occurs is almost surely a typo.
    assert cli(src, "--format", "csv", "--no-header", "--label-column", "-1",
               "--positive-label", ">50k", "--out", tmp_path / "b.h5") == 0
    assert "matched no row" in capsys.readouterr().err


def test_csv_quotes_tabs_and_gzip(tmp_path):
    src = tmp_path / "q.tsv.gz"
    with gzip.open(src, "wt") as f:
        f.write('label\t"width, cm"\tdepth\n1\t1.5\t2\n-1\t"3"\t4\n')
    r = convert.convert_csv(src, tmp_path / "q.h5", delimiter="tab")
    assert (r.n, r.d) == (2, 2)
    np.testing.assert_array_equal(read_arrays(tmp_path / "q.h5")["X"], [[1.5, 2], [3, 4]])
    assert inspect(tmp_path / "q.h5").feature_names == ["width, cm", "depth"]


def test_csv_whitespace_runs_and_limit(tmp_path):
    src = write(tmp_path / "w.txt", "1  2\t3\n\n-1 \t 4 5\n1 6 7\n")
    r = convert.convert_csv(src, tmp_path / "w.h5", header=False, delimiter=" ", limit=2)
    assert (r.n, r.d) == (2, 2)
    np.testing.assert_array_equal(read_arrays(tmp_path / "w.h5")["X"], [[2, 3], [4, 5]])


def test_format_specific_options_are_rejected(tmp_path):
    src = write(tmp_path / "s.svm", "+1 1:1\n")
    with pytest.raises(InputError, match="--label-column.*only for --format csv"):
        convert_cli.run(_namespace(src, tmp_path / "s.h5", format="libsvm", label_column="0"))
    assert not (tmp_path / "s.h5").exists()


def _namespace(src, out, **kw):
    import argparse

    p = argparse.ArgumentParser()
    convert_cli.add_arguments(p)
    args = p.parse_args([str(src), "--format", kw.pop("format"), "--out", str(out)])
    for k, v in kw.items():
        setattr(args, k, v)
    return args


# --------------------------------------------------- malformed input, via CLI
# (case id, format, file name, content, extra args, line, text in the message)
MALFORMED = [
    ("bad-label", "libsvm", "l.svm", "+1 1:1\n# c\nyes 1:1\n", ["--positive-label", "1"], 3, "not a number"),
    ("index-zero", "libsvm", "z.svm", "+1 1:1\n-1 0:1\n", [], 2, "index 0"),
    ("index-negative", "libsvm", "n.svm", "+1 1:1\n\n-1 -2:1\n", [], 3, "'-2'"),
    ("index-non-integer", "libsvm", "f.svm", "+1 1:1\n-1 2.5:1\n", [], 2, "'2.5'"),
    ("index-above-n-features", "libsvm", "a.svm", "+1 1:1\n-1 3:1\n+1 4:1\n", ["--n-features", "3"], 3,
     "above --n-features 3"),
    ("value-not-number", "libsvm", "v.svm", "+1 1:1\n-1 2:abc\n", ["--n-features", "2"], 2, "'abc'"),
    ("gz-bad-value", "libsvm", "g.svm.gz", "+1 1:1\n" * 5 + "-1 1:x\n", [], 6, "'x'"),
    ("csv-columns", "csv", "c.csv", "y,a,b\n1,1,2\n-1,3\n", [], 3, "expected 3 columns"),
    ("csv-non-numeric", "csv", "n.csv", "y,a,color\n1,1,2\n\n-1,3,red\n", [], 4, "'color'"),
    ("csv-missing-label-name", "csv", "m.csv", "\ny,a\n1,1\n", ["--label-column", "target"], 2,
     "no column named 'target'"),
]
# More cases of the same kind, run in-process through ``main`` (same error
# path, without a Python start-up each).
MALFORMED_IN_PROCESS = [
    ("text-label-positive", "libsvm", "t.svm", "+1 1:1\nyes 1:1\n", ["--positive-label", "1"], 2, "label 'yes'"),
    ("too-many-labels", "libsvm", "k.svm", "".join(f"{i} 1:1\n" for i in range(256)) + "\n256 1:1\n", [],
     258, "more than 256 distinct numbers: a continuous target? give --task regression"),
    ("many-numeric-labels", "libsvm", "m.svm", "".join(f"{i} 1:1\n" for i in range(40)), [], None,
     "the label has 40 distinct numeric values: a continuous target? give --task regression"),
    ("value-not-finite", "libsvm", "i.svm", "+1 1:1\n-1 2:inf\n", [], 2, "finite"),
    ("value-too-big-for-float32", "libsvm", "b.svm", "+1 1:1\n-1 2:1e300\n", [], 2, "float64"),
    ("entry-without-colon", "libsvm", "c.svm", "+1 1:1\n-1 7\n", [], 2, "index:value"),
    ("index-twice", "libsvm", "d.svm", "+1 1:1 1:2\n", [], 1, "twice"),
    ("qid", "libsvm", "q.svm", "+1 qid:1 1:1\n", [], 1, "qid"),
    ("csv-empty-label", "csv", "l.csv", "y,a\n1,1\n ,3\n", [], 3, "the label is empty"),
    ("csv-missing-label", "csv", "q.csv", "y,a\ncat,1\n?,3\n", [], 3, "'?', a missing value"),
    ("csv-too-many-labels", "csv", "c.csv", "y,a\n" + "".join(f"c{i},1\n" for i in range(300)), [], 258,
     "more than 256 distinct labels: is the label column right? see --label-column"),
    ("csv-drop-label", "csv", "dl.csv", "id,y,a\n1,1,1\n", ["--label-column", "y", "--drop-columns", "id,y"], 1,
     "is the label column"),
    ("csv-drop-domain", "csv", "dd.csv", "id,y,a\n1,1,1\n",
     ["--label-column", "y", "--domain-column", "id", "--drop-columns", "-3"], 1,
     "is the domain column"),
    ("csv-drop-unknown", "csv", "du.csv", "id,y,a\n1,1,1\n", ["--drop-columns", "nope"], 1,
     "--drop-columns: no column named 'nope'"),
    ("csv-infinite", "csv", "f.csv", "y,a\n1,1\n-1,-inf\n", [], 3, "finite"),
    ("csv-domain-int-then-text", "csv", "d.csv", "y,d,a\n1,0,1\n-1,x,2\n", ["--domain-column", "d"], 3,
     "not an integer"),
    ("csv-label-index-out-of-range", "csv", "r.csv", "y,a\n1,1\n", ["--label-column", "5"], 1, "out of range"),
    ("csv-header-only", "csv", "h.csv", "y,a\n", [], None, "no data rows"),
]


def _write_case(case_dir: Path, name: str, content: str) -> Path:
    (case_dir / "out").mkdir(parents=True)
    src = case_dir / name
    if name.endswith(".gz"):
        with gzip.open(src, "wt") as f:
            f.write(content)
    else:
        src.write_text(content)
    return src


def _check_failure(code, err, name, line, text, out_dir):
    assert code == 2, err
    where = f"{name}:{line}: " if line is not None else f"{name}: "
    assert where in err, err
    assert text in err, err
    assert err.startswith("mpiboost: error: ") and len(err.strip().splitlines()) == 1, err
    assert os.listdir(out_dir) == []  # neither the output nor a temporary file


@pytest.fixture(scope="module")
def malformed_runs(tmp_path_factory):
    """Start every subprocess case at once; each test then checks its own."""
    root = tmp_path_factory.mktemp("malformed")
    procs = {}
    for case, fmt, name, content, extra, _, _ in MALFORMED:
        src = _write_case(root / case, name, content)
        cmd = [sys.executable, "-m", "mpiboost", "convert", str(src), "--format", fmt,
               "--out", str(root / case / "out" / "data.h5"), *extra]
        procs[case] = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    results = {}
    for case, proc in procs.items():
        _, err = proc.communicate(timeout=120)
        results[case] = (proc.returncode, err, root / case / "out")
    return results


@pytest.mark.parametrize("case, fmt, name, content, extra, line, text", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_input_subprocess(malformed_runs, case, fmt, name, content, extra, line, text):
    code, err, out_dir = malformed_runs[case]
    _check_failure(code, err, name, line, text, out_dir)


@pytest.mark.parametrize(
    "case, fmt, name, content, extra, line, text", MALFORMED_IN_PROCESS, ids=[m[0] for m in MALFORMED_IN_PROCESS]
)
def test_malformed_input_in_process(tmp_path, capsys, case, fmt, name, content, extra, line, text):
    src = _write_case(tmp_path, name, content)
    code = cli(src, "--format", fmt, "--out", tmp_path / "out" / "data.h5", *extra)
    captured = capsys.readouterr()
    assert captured.out == ""
    _check_failure(code, captured.err, name, line, text, tmp_path / "out")


def test_truncated_compressed_input(tmp_path):
    packed = gzip.compress(("".join(f"+1 1:{i} 2:{i * i}\n" for i in range(20000))).encode())
    src = tmp_path / "cut.svm.gz"
    src.write_bytes(packed[: len(packed) // 2])
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    with pytest.raises(InputError, match=r"cut\.svm\.gz:\d+: cannot read or decompress"):
        convert.convert_libsvm(src, out_dir / "cut.h5", n_features=2)
    assert os.listdir(out_dir) == []


# ----------------------------------------------- labels as users have them
def _classes(path):
    return inspect(path).classes


def test_csv_text_labels_classes_attribute(tmp_path, capsys):
    src = write(tmp_path / "pets.csv", "kind,w\ncat,1\ndog,2\nbird,3\ncat,4\n dog ,5\n")
    assert cli(src, "--format", "csv", "--out", tmp_path / "p.h5") == 0
    assert "labels bird: 1 / cat: 2 / dog: 2 " in capsys.readouterr().out
    data = read_arrays(tmp_path / "p.h5")
    assert _classes(tmp_path / "p.h5") == ["bird", "cat", "dog"]  # canonical: by code point
    np.testing.assert_array_equal(data["y"], [1, 2, 0, 1, 2])  # indices into the classes
    assert data["y"].dtype == np.int8
    r = convert.convert_csv(src, tmp_path / "q.h5")
    assert r.label_counts == {"bird": 1, "cat": 2, "dog": 2}


def test_libsvm_numeric_multiclass_kept_as_values(tmp_path):
    rows = [(k % 7) + 1 for k in range(50)]
    src = write(tmp_path / "m.svm", "".join(f"{k} 1:{i}\n" for i, k in enumerate(rows)))
    r = convert.convert_libsvm(src, tmp_path / "m.h5")
    data = read_arrays(tmp_path / "m.h5")
    np.testing.assert_array_equal(data["y"], rows)
    assert data["y"].dtype == np.int8 and _classes(tmp_path / "m.h5") is None
    assert list(r.label_counts) == [1, 2, 3, 4, 5, 6, 7] and sum(r.label_counts.values()) == 50
    assert "labels 1: 8 / 2: 7 / 3: 7" in r.summary()


def test_libsvm_three_labels_are_three_classes(tmp_path):
    # -1, 0 and 1 used to be an error; now they are a 3-class file.
    src = write(tmp_path / "k.svm", "1 1:1\n0 1:1\n\n-1 1:1\n")
    r = convert.convert_libsvm(src, tmp_path / "k.h5")
    assert r.label_counts == {-1: 1, 0: 1, 1: 1}
    np.testing.assert_array_equal(read_arrays(tmp_path / "k.h5")["y"], [1, 0, -1])


def test_plus_minus_one_unchanged_and_spellings_are_one_class(tmp_path):
    src = write(tmp_path / "pm.svm", "+1 1:1\n-1 1:2\n1.0 1:3\n1 1:4\n-1.0 1:5\n1e0 1:6\n")
    r = convert.convert_libsvm(src, tmp_path / "pm.h5")
    data = read_arrays(tmp_path / "pm.h5")
    assert data["y"].dtype == np.int8 and _classes(tmp_path / "pm.h5") is None
    np.testing.assert_array_equal(data["y"], [1, -1, 1, 1, -1, 1])
    assert r.label_counts == {-1: 2, 1: 4}
    csv_src = write(tmp_path / "pm.csv", "y,a\n1,1\n+1,2\n1.0,3\n 0 ,4\n")
    r = convert.convert_csv(csv_src, tmp_path / "pmc.h5")
    assert r.label_counts == {0: 1, 1: 3}
    np.testing.assert_array_equal(read_arrays(tmp_path / "pmc.h5")["y"], [1, 1, 1, 0])


def test_mixed_numbers_and_text_are_all_text(tmp_path):
    src = write(tmp_path / "mix.csv", "y,a\n1,1\n1.0,2\ncat,3\n1,4\n")
    r = convert.convert_csv(src, tmp_path / "mix.h5")
    assert _classes(tmp_path / "mix.h5") == ["1", "1.0", "cat"]
    np.testing.assert_array_equal(read_arrays(tmp_path / "mix.h5")["y"], [0, 1, 2, 0])
    assert r.label_counts == {"1": 2, "1.0": 1, "cat": 1}


def test_non_integer_and_wide_numbers_use_the_classes_attribute(tmp_path):
    src = write(tmp_path / "f.svm", "0.5 1:1\n1.5 1:2\n2 1:3\n0.5 1:4\n")
    convert.convert_libsvm(src, tmp_path / "f.h5")
    assert _classes(tmp_path / "f.h5") == [0.5, 1.5, 2]
    np.testing.assert_array_equal(read_arrays(tmp_path / "f.h5")["y"], [0, 1, 2, 0])
    # integers beyond int32 are not stored as y: indices and the attribute
    big = write(tmp_path / "big.svm", "3000000000 1:1\n1 1:2\n")
    convert.convert_libsvm(big, tmp_path / "big.h5")
    assert _classes(tmp_path / "big.h5") == [1, 3000000000]
    np.testing.assert_array_equal(read_arrays(tmp_path / "big.h5")["y"], [1, 0])
    # integers beyond int8 are values in a wider y
    wide = write(tmp_path / "w.svm", "1000 1:1\n-1000 1:2\n7 1:3\n")
    convert.convert_libsvm(wide, tmp_path / "w.h5")
    data = read_arrays(tmp_path / "w.h5")
    assert data["y"].dtype == np.int16 and _classes(tmp_path / "w.h5") is None
    np.testing.assert_array_equal(data["y"], [1000, -1000, 7])


def test_label_strip_with_text_labels(tmp_path):
    src = write(tmp_path / "s.csv", "a,income\n1, >50K.\n2,<=50K\n3,>50K\n4,<=50K.\n")
    r = convert.convert_csv(src, tmp_path / "s.h5", label_column="income", label_strip=".")
    assert _classes(tmp_path / "s.h5") == ["<=50K", ">50K"]
    np.testing.assert_array_equal(read_arrays(tmp_path / "s.h5")["y"], [1, 0, 1, 0])
    assert r.label_counts == {"<=50K": 2, ">50K": 2}
    assert "labels <=50K: 2 / >50K: 2 " in r.summary()


def test_label_cap_counts_classes_not_spellings(tmp_path, monkeypatch):
    # 256 classes, each written two ways: 256 classes, not 512.
    monkeypatch.setattr(convert.common, "CHUNK_ROWS", 100)  # provisional codes over many chunks
    lines = [f"{k} 1:{k}\n{k}.0 1:{k}\n" for k in range(256)]
    src = write(tmp_path / "cap.svm", "".join(lines))
    r = convert.convert_libsvm(src, tmp_path / "cap.h5", task="classification")  # 256 numbers taken as classes
    y = read_arrays(tmp_path / "cap.h5")["y"]
    assert y.dtype == np.int16 and len(r.label_counts) == 256
    np.testing.assert_array_equal(y, np.repeat(np.arange(256), 2))
    # one more class is an error naming the line; nothing is left behind
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    bad = write(tmp_path / "cap2.svm", "".join(lines) + "# one more\n256 1:1\n")
    with pytest.raises(InputError, match=r"cap2\.svm:514: label '256': more than 256 distinct numbers"):
        convert.convert_libsvm(bad, out_dir / "cap.h5")
    assert os.listdir(out_dir) == []
    # with text labels every spelling is a class
    text = write(tmp_path / "cap3.csv", "y,a\n" + "".join(f"{k},1\n{k}.0,1\n" for k in range(128)) + "x,1\n")
    with pytest.raises(InputError, match=r"cap3\.csv:258: .*more than 256 distinct labels: is the label column"):
        convert.convert_csv(text, out_dir / "cap3.h5")
    assert os.listdir(out_dir) == []


def test_positive_label_behaviour_unchanged(tmp_path):
    src = write(tmp_path / "t.csv", "y,a\ncat,1\ndog,2\nbird,3\n")
    r = convert.convert_csv(src, tmp_path / "t.h5", positive_label="dog")
    data = read_arrays(tmp_path / "t.h5")
    assert data["y"].dtype == np.int8 and _classes(tmp_path / "t.h5") is None
    np.testing.assert_array_equal(data["y"], [-1, 1, -1])
    assert r.label_counts == {-1: 2, 1: 1}
    z = write(tmp_path / "z.svm", "1 1:1\n0 1:1\n-1 1:1\n")
    convert.convert_libsvm(z, tmp_path / "z.h5", positive_label="0")
    np.testing.assert_array_equal(read_arrays(tmp_path / "z.h5")["y"], [-1, 1, -1])


def test_info_prints_counts_by_label_value(tmp_path, capsys):
    src = write(tmp_path / "pets.csv", "kind,w\ncat,1\ndog,2\ncat,3\n")
    convert.convert_csv(src, tmp_path / "p.h5")
    assert main(["info", str(tmp_path / "p.h5")]) == 0
    out = capsys.readouterr().out
    assert "labels      cat: 2, dog: 1 (2 classes; y int8)" in out
    assert main(["info", "--json", str(tmp_path / "p.h5")]) == 0
    import json

    summary = json.loads(capsys.readouterr().out)
    assert summary["labels"] == {"cat": 2, "dog": 1}
    assert summary["classes"] == ["cat", "dog"] and summary["n_classes"] == 2
    assert "classes" not in summary.get("attrs", {})


# ------------------------------------------------------------ --drop-columns
def test_csv_drop_columns(tmp_path):
    src = write(
        tmp_path / "yeast.csv",
        "name,mcg,gvh,site,loc\n"
        "ADT1_YEAST,0.58,0.61,a,MIT\n"
        "ADT2_YEAST,0.43,0.67,b,NUC\n"
        "ADT3_YEAST,0.64,0.62,a,MIT\n",
    )
    r = convert.convert_csv(src, tmp_path / "y.h5", label_column="loc", drop_columns="name,site")
    assert r.d == 2
    data = read_arrays(tmp_path / "y.h5")
    np.testing.assert_array_equal(data["X"], np.array([[0.58, 0.61], [0.43, 0.67], [0.64, 0.62]], np.float32))
    info = inspect(tmp_path / "y.h5")
    assert info.feature_names == ["mcg", "gvh"] and info.classes == ["MIT", "NUC"]
    assert info.attrs["dropped_columns"] == "name,site"
    # by index (negative from the end), with --categorical auto: the dropped text column is no category
    r = convert.convert_csv(src, tmp_path / "z.h5", label_column=-1, drop_columns=[0], categorical="auto")
    assert inspect(tmp_path / "z.h5").feature_names == ["mcg", "gvh", "site=a", "site=b"]
    r = convert.convert_csv(src, tmp_path / "w.h5", label_column="loc", drop_columns="-5,-2")
    assert inspect(tmp_path / "w.h5").feature_names == ["mcg", "gvh"]
    # the CLI option
    assert cli(src, "--format", "csv", "--label-column", "loc", "--drop-columns", "name,site",
               "--out", tmp_path / "c.h5") == 0
    np.testing.assert_array_equal(read_arrays(tmp_path / "c.h5")["X"], data["X"])
    with pytest.raises(InputError, match="--categorical site: column 'site' is dropped"):
        convert.convert_csv(src, tmp_path / "e.h5", label_column="loc", drop_columns="name,site",
                            categorical="site")
    with pytest.raises(InputError, match="--drop-columns.*only for --format csv"):
        convert_cli.run(_namespace(src, tmp_path / "e.h5", format="libsvm", drop_columns="0"))
