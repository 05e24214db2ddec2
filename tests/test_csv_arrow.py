"""CSV read by pyarrow gives the file our own parser gives, or the same error naming the same line.

``convert_csv(parser="auto")`` tries pyarrow and starts again with mpiboost's parser wherever
pyarrow refuses or might read otherwise; ``parser="python"`` is ours alone (the slow twin).
"""
from __future__ import annotations

import gzip

import h5py
import numpy as np
import pytest

pytest.importorskip("pyarrow")  # in the test extra: CI has it

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from mpiboost.data.convert import arrowcsv  # noqa: E402
from mpiboost.data.convert.csvfile import convert_csv  # noqa: E402
from mpiboost.errors import InputError  # noqa: E402


@pytest.fixture(autouse=True, params=["whole", "stream"])
def _every_size(request, monkeypatch):
    monkeypatch.setattr(arrowcsv, "MIN_BYTES", 0)  # small files too (by default ours reads them: import costs)
    if request.param == "stream":  # the reader of files too big to parse whole
        monkeypatch.setattr(arrowcsv, "WHOLE_BYTES", 0)


def _outcome(path, out, parser, **kw):
    """The file written (every dataset and attribute) or the error message."""
    try:
        convert_csv(path, out, parser=parser, **kw)
    except InputError as exc:
        return ("error", str(exc).replace(str(out), "OUT"))
    with h5py.File(out, "r") as f:
        data = {k: np.asarray(f[k][...]) for k in f}
        attrs = {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in f.attrs.items()}
    return ("file", data, attrs)


def _same(a, b):
    assert a[0] == b[0], (a, b)
    if a[0] == "error":
        assert a[1] == b[1]
        return
    assert a[1].keys() == b[1].keys()
    for k in a[1]:
        assert a[1][k].dtype == b[1][k].dtype, k
        np.testing.assert_array_equal(a[1][k], b[1][k], err_msg=k)  # NaN equals NaN here
    assert a[2] == b[2]


def _both(tmp_path, text, *, name="f.csv", compress=False, **kw):
    path = tmp_path / name
    if compress:
        with gzip.open(path, "wb") as f:
            f.write(text.encode())
    else:
        path.write_bytes(text.encode())
    ours = _outcome(path, tmp_path / "ours.h5", "python", **kw)
    auto = _outcome(path, tmp_path / "auto.h5", "auto", **kw)
    _same(ours, auto)
    return auto, arrowcsv.last_reader


def _numeric(n, d, seed=0, missing=("", "NA", "?", "nan", "NaN")):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * 10.0 ** rng.integers(-8, 8, size=(n, d))
    cells = np.char.mod("%.17g", X).astype(object)
    hit = rng.random((n, d)) < 0.05
    cells[hit] = np.asarray(missing, dtype=object)[rng.integers(0, len(missing), hit.sum())]
    y = rng.integers(0, 2, n)
    head = "label," + ",".join(f"f{j}" for j in range(d)) + "\n"
    return head + "".join(f"{y[i]}," + ",".join(cells[i]) + "\n" for i in range(n))


def test_a_plain_numeric_file_is_read_by_pyarrow_and_gives_the_same_file(tmp_path, monkeypatch):
    monkeypatch.setattr(arrowcsv, "BLOCK_BYTES", 1 << 12)  # many batches, cut anywhere
    got, reader = _both(tmp_path, _numeric(3000, 7), label_column="label")
    assert got[0] == "file" and reader == "pyarrow"
    got, reader = _both(tmp_path, _numeric(3000, 7), label_column="label", limit=1234)
    assert got[1]["y"].shape == (1234,) and reader == "pyarrow"
    got, reader = _both(tmp_path, _numeric(500, 3), label_column="label", compress=True, name="f.csv.gz")
    assert reader == "pyarrow"
    got, reader = _both(tmp_path, _numeric(500, 3), label_column="label", dtype="float64")
    assert reader == "pyarrow"
    # CRLF line ends, a byte-order mark, blank lines and a quoted number
    text = "\ufefflabel,a,b\r\n1,0.5,\"2.5\"\r\n\r\n-1,NA,3\r\n1,1e-3,-0\r\n\r\n"
    got, reader = _both(tmp_path, text, label_column="label")
    assert reader == "pyarrow" and got[1]["X"].shape == (3, 2)


def test_text_labels_domains_categories_and_no_label(tmp_path, monkeypatch):
    monkeypatch.setattr(arrowcsv, "BLOCK_BYTES", 1 << 10)
    rng = np.random.default_rng(3)
    rows = ["id,kind,x,colour,site"]
    for i in range(800):
        rows.append(f"{i},{rng.choice(['cat', 'dog'])},{rng.normal():.6f},{rng.choice(['red', 'green', ''])},"
                    f"{rng.choice(['north', 'south', 'east'])}")
    text = "\n".join(rows) + "\n"
    got, reader = _both(tmp_path, text, label_column="kind", domain_column="site", categorical="colour",
                        drop_columns="id")
    assert got[0] == "file" and reader == "pyarrow"
    got, reader = _both(tmp_path, text, no_label=True, categorical="colour,kind,site")
    assert got[0] == "file" and reader == "pyarrow"
    got, reader = _both(tmp_path, text, label_column="kind", categorical="colour,site", max_categories=2)
    assert got[0] == "error" and "categories" in got[1], got
    spaced = text.replace(",red,", ", red,").replace(",green,", ',  "green",')
    got, reader = _both(tmp_path, spaced, label_column="kind", categorical="colour,site")
    assert got[0] == "file" and reader == "mpiboost", got[:2]  # a quoted category after spaces: ours
    got, reader = _both(tmp_path, text.replace(",red,", ", red,"), label_column="kind", categorical="colour,site")
    assert got[0] == "file" and reader == "pyarrow"
    ints = text.replace("north", "0").replace("south", "1").replace("east", "2")
    got, reader = _both(tmp_path, ints, label_column="kind", domain_column="site", categorical="colour")
    assert reader == "pyarrow"


def test_what_pyarrow_reads_otherwise_falls_back_to_ours(tmp_path):
    cases = {
        "spaces after the delimiter": "y,a,b\n1, 0.5, 2\n-1, 1, 3\n",  # (pyarrow reads this one too)
        "a quoted text after spaces": 'y,a,c\n1,0.5, "x y"\n-1,1, "z"\n',
        "a quoted line break": 'y,a,c\n1,0.5,"x\ny"\n-1,1,z\n',
        "underscores in a number": "y,a\n1,1_000\n-1,2\n",
        "a row of spaces": "y,a\n1,1\n   \n-1,2\n",
    }
    for what, text in cases.items():
        kw = {"categorical": "c"} if ",c\n" in text.split("\n")[0] + "\n" else {}
        got, reader = _both(tmp_path, text, label_column="y", **kw)
        assert got[0] == "file", (what, got)
        assert reader == ("pyarrow" if what == "spaces after the delimiter" else "mpiboost"), what


def test_errors_are_ours_and_name_the_line(tmp_path, monkeypatch):
    monkeypatch.setattr(arrowcsv, "BLOCK_BYTES", 1 << 10)
    good = _numeric(400, 3, missing=("",))
    lines = good.splitlines()
    cases = {
        "a short row": (lines[:300] + ["1,2"] + lines[300:], "f.csv:301: expected 4 columns"),
        "a word": (lines[:200] + ["1,2,abc,3"] + lines[200:], "f.csv:201: column 'f1': value 'abc' is not a number"),
        "an infinite value": (lines[:100] + ["1,inf,2,3"] + lines[100:], "f.csv:101:"),
        "a float32 overflow": (lines[:50] + ["1,1e39,2,3"] + lines[50:], "f.csv:51:"),
        "an empty label": (lines[:20] + [",1,2,3"] + lines[20:], "f.csv:21:"),
    }
    for what, (rows, words) in cases.items():
        got, reader = _both(tmp_path, "\n".join(rows) + "\n", label_column="label")
        assert got[0] == "error" and words in got[1], (what, got)
    raw = tmp_path / "latin.csv"
    raw.write_bytes(b"y,a,c\n1,0.5,caf\xe9\n-1,1,b\n")
    ours = _outcome(raw, tmp_path / "o.h5", "python", label_column="y", categorical="c")
    auto = _outcome(raw, tmp_path / "a.h5", "auto", label_column="y", categorical="c")
    _same(ours, auto)
    assert auto[0] == "error" and "latin.csv:2" in auto[1]


TOKENS = ["0", "1.5", "-2e-3", "1e308", "1e39", "3.4e38", "-0", "+7", ".5", "5.", "NA", "?", "", "nan", "NaN",
          "inf", "-Infinity", "abc", "1_0", " 2", "2 ", '"4.5"', '" 4"', "0x1p3", "1e", "--1", "١"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["1", "-1", "0", " 1", "x", ""]),
                          st.lists(st.sampled_from(TOKENS), min_size=2, max_size=3)), min_size=1, max_size=12),
       st.sampled_from(["float32", "float64"]))
def test_any_tokens_give_the_same_file_or_the_same_error(tmp_path, rows, dtype):
    text = "y,a,b\n" + "".join(lab + "," + ",".join(cells) + "\n" for lab, cells in rows)
    _both(tmp_path, text, label_column="y", dtype=dtype)


@pytest.mark.realdata
def test_the_real_csv_files_read_alike(datasets, tmp_path):
    """Adult (spaces after commas, text categories), abalone, car: the same file from either parser."""
    names = ("age,workclass,fnlwgt,education,education_num,marital_status,occupation,relationship,race,sex,"
             "capital_gain,capital_loss,hours_per_week,native_country,income")
    cases = [
        (datasets / "adult" / "adult.data", dict(header=False, names=names, label_column="income",
                                                  categorical="auto", domain_column="sex")),
        (datasets / "abalone" / "abalone.data", dict(header=False, label_column=-1, categorical="0")),
        (datasets / "car" / "car.data", dict(header=False, label_column=-1, categorical="auto")),
    ]
    for path, kw in cases:
        ours = _outcome(path, tmp_path / "ours.h5", "python", **kw)
        auto = _outcome(path, tmp_path / "auto.h5", "auto", **kw)
        _same(ours, auto)
        assert ours[0] == "file" and arrowcsv.last_reader == "pyarrow", (path, ours)


def test_categorical_auto_decides_as_ours_does(tmp_path, monkeypatch):
    monkeypatch.setattr(arrowcsv, "BLOCK_BYTES", 1 << 11)  # the late text value lies in a later batch
    rng = np.random.default_rng(5)
    n = 3000
    rows = ["y,num,flag,late,many,word"]
    for i in range(n):
        late = "unknown" if i == n - 7 else str(rng.integers(0, 3))  # numbers, then one text value
        many = f"{rng.normal():.9f}" if i != n - 3 else "text"  # thousands of numbers, then text: too many
        rows.append(f"{rng.integers(0, 2)},{rng.normal():.6f},{rng.integers(0, 2)},{late},{many},"
                    f"{rng.choice(['a', 'b', ' c', 'NA'])}")
    text = "\n".join(rows) + "\n"
    got, reader = _both(tmp_path, text, label_column="y", categorical="auto", drop_columns="many")
    assert got[0] == "file" and reader == "pyarrow"
    assert got[2]["categorical_columns"] == "late,word", got[2]
    got, reader = _both(tmp_path, text, label_column="y", categorical="auto")
    assert got[0] == "error" and "more than 1,000 distinct values" in got[1] and reader == "mpiboost", got
    got, reader = _both(tmp_path, text, label_column="y", categorical="auto", drop_columns="many",
                        max_categories=3)
    assert got[0] == "error" and "more than 3 distinct values" in got[1], got
    got, reader = _both(tmp_path, text, label_column="y", categorical="auto", drop_columns="many", limit=2000)
    # (pyarrow parses past the limit, where 'late' has its text value: ours converts this one)
    assert got[0] == "file" and got[2]["categorical_columns"] == "word", got[2]
