"""`mpiboost convert` for multi-domain data: categorical CSV columns (one-hot),
domain maps, Adult's label and banner quirks, and Amazon review files.

Real files (UCI Adult, Amazon books) are checked against naive reference
encoders written here; malformed inputs go through the command line in
process (exit code 2, FILE:LINE in the message, nothing left behind).
"""
from __future__ import annotations

import csv
import json
import os
from collections import Counter
from pathlib import Path

import h5py
import numpy as np
import pytest

from mpi_util import DATASETS
from mpiboost.cli import main
from mpiboost.data import convert
from mpiboost.data.format import inspect, read_arrays
from mpiboost.errors import InputError

ADULT_NAMES = (
    "age,workclass,fnlwgt,education,education-num,marital-status,occupation,relationship,race,sex,"
    "capital-gain,capital-loss,hours-per-week,native-country,income"
)
EDUCATION_MAP = "Bachelors,Masters,Doctorate,Prof-school=university;HS-grad=hs;*=other"
# Education counts (train, test), as the datasets' README lists them (section 1).
EDUCATION_COUNTS = {
    "HS-grad": (10501, 5283), "Some-college": (7291, 3587), "Bachelors": (5355, 2670), "Masters": (1723, 934),
    "Assoc-voc": (1382, 679), "11th": (1175, 637), "Assoc-acdm": (1067, 534), "10th": (933, 456),
    "7th-8th": (646, 309), "Prof-school": (576, 258), "9th": (514, 242), "12th": (433, 224),
    "Doctorate": (413, 181), "5th-6th": (333, 176), "1st-4th": (168, 79), "Preschool": (51, 32),
}
UNIVERSITY = ("Bachelors", "Masters", "Doctorate", "Prof-school")
MISSING = {"", "?", "NA", "NaN", "nan"}


def cli(*args) -> int:
    return main(["convert", *map(str, args)])


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def label_counts(y):
    values, counts = np.unique(y, return_counts=True)
    return dict(zip(values.tolist(), counts.tolist()))


def adult_args(src, out, *extra):
    return [src, "--format", "csv", "--no-header", "--names", ADULT_NAMES, "--label-column", "income",
            "--positive-label", ">50K", "--label-strip", ".", "--domain-column", "education",
            "--domain-map", EDUCATION_MAP, "--out", out, *extra]


def reference_adult(path, skip=0):
    """Rows of an Adult file as lists of stripped strings (the naive way)."""
    with open(path) as f:
        rows = [[v.strip() for v in row] for row in csv.reader(f)][skip:]
    return [r for r in rows if r and any(r)]


def reference_one_hot(rows, names, label, domain, categories):
    """Dense X of ``rows``: numeric columns as floats, categorical ones one-hot (NaN row if missing)."""
    X = []
    for row in rows:
        out = []
        for c, v in enumerate(row):
            if c in (label, domain):
                continue
            cats = categories.get(names[c])
            if cats is None:
                out.append(np.nan if v in MISSING else float(v))
            elif v in MISSING:
                out += [np.nan] * len(cats)
            else:
                out += [1.0 if v == cat else 0.0 for cat in cats]
        X.append(out)
    return np.array(X, dtype=np.float32)


# ------------------------------------------------------------------ Adult
@pytest.fixture(scope="module")
def adult(tmp_path_factory, datasets):
    """adult.data converted once: (folder, categories, train reference rows)."""
    root = tmp_path_factory.mktemp("adult")
    src = DATASETS / "adult" / "adult.data"
    assert cli(*adult_args(src, root / "train.h5", "--categorical", "auto",
                           "--categories-out", root / "cats.json")) == 0
    cats = json.loads((root / "cats.json").read_text())["columns"]
    return root, cats, reference_adult(src)


def test_adult_train_shape_labels_and_education_domains(adult, capsys):
    root, cats, rows = adult
    names = ADULT_NAMES.split(",")
    # auto: exactly the text columns other than the label and the domain column.
    text_cols = [names[c] for c in range(15) if c not in (3, 14)
                 and any(not _is_number(r[c]) for r in rows if r[c] not in MISSING)]
    assert list(cats) == text_cols == ["workclass", "marital-status", "occupation", "relationship", "race",
                                       "sex", "native-country"]
    for key, values in cats.items():
        c = names.index(key)
        assert values == sorted({r[c] for r in rows} - MISSING)
    n_numeric = 15 - 2 - len(cats)  # label and domain (education) are no features
    d = sum(len(v) for v in cats.values()) + n_numeric
    assert (n_numeric, d) == (6, 89)

    data = read_arrays(root / "train.h5")
    assert data["X"].shape == (32561, d) and data["X"].dtype == np.float32
    assert label_counts(data["y"]) == {-1: 24720, 1: 7841}
    X_ref = reference_one_hot(rows, names, 14, 3, cats)
    np.testing.assert_array_equal(data["X"], X_ref)  # NaN == NaN here
    y_ref = [1 if r[14] == ">50K" else -1 for r in rows]
    np.testing.assert_array_equal(data["y"], y_ref)

    info = inspect(root / "train.h5")
    assert info.domain_names == ["university", "hs", "other"]
    assert info.feature_names[:3] == ["age", "workclass=Federal-gov", "workclass=Local-gov"]
    assert "education-num" in info.feature_names and not any(f.startswith("education=") for f in info.feature_names)
    university = sum(EDUCATION_COUNTS[e][0] for e in UNIVERSITY)
    hs = EDUCATION_COUNTS["HS-grad"][0]
    assert university == 8067  # README: "bachelor or higher ... train 8,067"
    assert label_counts(data["domain"]) == {0: university, 1: hs, 2: 32561 - university - hs}
    np.testing.assert_array_equal(
        data["domain"], [0 if r[3] in UNIVERSITY else 1 if r[3] == "HS-grad" else 2 for r in rows]
    )


def test_adult_test_file_period_labels_banner_and_shared_encoding(adult, tmp_path, capsys):
    root, cats, _ = adult
    src = DATASETS / "adult" / "adult.test"
    out = tmp_path / "test.h5"
    assert cli(*adult_args(src, out, "--comment-char", "|", "--categories-in", root / "cats.json")) == 0
    captured = capsys.readouterr()
    assert "16,281 rows x 89 features" in captured.out and "labels -1: 12,435 / 1: 3,846" in captured.out
    assert "warning" not in captured.err  # every test value is a training category
    data = read_arrays(out)
    assert data["X"].shape == (16281, 89)
    assert label_counts(data["y"]) == {-1: 12435, 1: 3846}
    train, test = inspect(root / "train.h5"), inspect(out)
    assert test.feature_names == train.feature_names and test.domain_names == train.domain_names
    # Holand-Netherlands occurs in adult.data only: its column exists, and is all zero here.
    j = train.feature_names.index("native-country=Holand-Netherlands")
    assert not np.nansum(data["X"][:, j])
    university = sum(EDUCATION_COUNTS[e][1] for e in UNIVERSITY)
    hs = EDUCATION_COUNTS["HS-grad"][1]
    assert label_counts(data["domain"]) == {0: university, 1: hs, 2: 16281 - university - hs}
    X_ref = reference_one_hot(reference_adult(src, skip=1), ADULT_NAMES.split(","), 14, 3, cats)
    np.testing.assert_array_equal(data["X"], X_ref)

    # Skipping the banner by count, and taking the categories from the train file
    # directly, give the same file.
    out2 = tmp_path / "test2.h5"
    assert cli(*adult_args(src, out2, "--skip-lines", "1", "--categorical", "auto",
                           "--categories-from", DATASETS / "adult" / "adult.data")) == 0
    other = read_arrays(out2)
    np.testing.assert_array_equal(other["X"], data["X"])
    np.testing.assert_array_equal(other["y"], data["y"])
    np.testing.assert_array_equal(other["domain"], data["domain"])
    assert inspect(out2).feature_names == train.feature_names

    # Without the period stripped, no test label matches >50K.
    args = adult_args(src, tmp_path / "t3.h5", "--comment-char", "|", "--categories-in", root / "cats.json",
                      "--limit", "50")
    i = args.index("--label-strip")
    del args[i : i + 2]
    capsys.readouterr()
    assert cli(*args) == 0
    assert "matched no row" in capsys.readouterr().err


def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


# ----------------------------------------------------------------- Amazon
def parse_review(line):
    *entries, label = line.split()
    pairs = [t.rpartition(":") for t in entries]
    return {k: int(v) for k, _, v in pairs}, label


def test_amazon_books_vocabulary_counts_and_round_trip(datasets, tmp_path, capsys):
    books = datasets / "amazon-multidomain-sentiment" / "books"
    files = [books / "positive.review", books / "negative.review"]
    out, vocab_file = tmp_path / "books.h5", tmp_path / "books.vocab"
    assert cli(*files, "--format", "amazon", "--domain", "books", "--vocab-out", vocab_file, "--out", out) == 0
    assert "2,000 rows x 5000 features" in capsys.readouterr().out
    data = read_arrays(out)
    assert data["X"].shape == (2000, 5000) and data["X"].dtype == np.float32
    assert label_counts(data["y"]) == {-1: 1000, 1: 1000}
    np.testing.assert_array_equal(data["y"][:1000], 1)  # rows in file order: positive.review first
    assert label_counts(data["domain"]) == {0: 2000}
    info = inspect(out)
    assert info.domain_names == ["books"] and info.attrs["domain_name"] == "books"

    reviews = [parse_review(line) for f in files for line in open(f) if line.strip()]
    df = Counter(tok for bag, _ in reviews for tok in bag)
    ranked = sorted(df.items(), key=lambda kv: (-kv[1], kv[0]))[:5000]
    vocab = [tok for tok, _ in ranked]
    assert vocab_file.read_text().splitlines() == [f"{tok}\t{n}" for tok, n in ranked]
    with h5py.File(out) as f:
        assert [v.decode() for v in f["vocabulary"][:]] == vocab
    col = {tok: j for j, tok in enumerate(vocab)}
    for r in range(0, 2000, 20):  # a twentieth of the rows keeps the test quick
        bag, label = reviews[r]
        ref = np.zeros(5000, np.float32)
        for tok, n in bag.items():
            if tok in col:
                ref[col[tok]] = n
        np.testing.assert_array_equal(data["X"][r], ref)
        assert data["y"][r] == (1 if label == "#label#:positive" else -1)

    # --vocab-in: the same columns, and the same rows for the same files (the
    # first 300 and the last 300 keep it quick).
    for name, args in (("head", files), ("tail", files[::-1])):
        again = tmp_path / f"{name}.h5"
        assert cli(*args, "--format", "amazon", "--vocab-in", vocab_file, "--limit", 300, "--out", again) == 0
        other = read_arrays(again)
        rows = slice(0, 300) if name == "head" else slice(1000, 1300)
        np.testing.assert_array_equal(other["X"], data["X"][rows])
        np.testing.assert_array_equal(other["y"], data["y"][rows])
    assert "domain" not in other
    with h5py.File(again) as f:
        assert [v.decode() for v in f["vocabulary"][:]] == vocab


# --------------------------------------------------------------- CSV, small
def test_categorical_columns_one_hot_with_missing_values(tmp_path):
    src = write(
        tmp_path / "c.csv",
        "label, color, size, shape\n"
        "yes, red, 1.5, round\n"
        "no, blue, ?, square\n"
        "yes, ?, 2, round\n"
        "no, red, 3, \n",
    )
    r = convert.convert_csv(src, tmp_path / "c.h5", label_column="label", positive_label="yes",
                            categorical="color,3")
    assert (r.n, r.d) == (4, 5)
    nan = np.nan
    np.testing.assert_array_equal(
        read_arrays(tmp_path / "c.h5")["X"],
        np.array([[0, 1, 1.5, 1, 0], [1, 0, nan, 0, 1], [nan, nan, 2, 1, 0], [0, 1, 3, nan, nan]], np.float32),
    )
    assert inspect(tmp_path / "c.h5").feature_names == ["color=blue", "color=red", "size", "shape=round",
                                                         "shape=square"]


def test_auto_names_comments_label_strip_and_categories_round_trip(tmp_path, capsys):
    # No header: --names; a banner skipped as a comment; numbers and text in one
    # column make it categorical, with the numbers as categories (sorted as text).
    train = write(tmp_path / "train.txt", "|banner\n1, a, 10, x.\n2, b, 9, y.\n3, 10, 8, x.\n")
    assert cli(train, "--format", "csv", "--no-header", "--names", "n,cat,m,lab", "--comment-char", "|",
               "--label-column", "lab", "--positive-label", "x", "--label-strip", ".",
               "--categorical", "auto", "--categories-out", tmp_path / "cats.json", "--out", tmp_path / "a.h5") == 0
    assert json.loads((tmp_path / "cats.json").read_text())["columns"] == {"cat": ["10", "a", "b"]}
    data = read_arrays(tmp_path / "a.h5")
    np.testing.assert_array_equal(data["y"], [1, -1, 1])
    np.testing.assert_array_equal(data["X"], [[1, 0, 1, 0, 10], [2, 0, 0, 1, 9], [3, 1, 0, 0, 8]])
    assert inspect(tmp_path / "a.h5").feature_names == ["n", "cat=10", "cat=a", "cat=b", "m"]

    # A header replaced by --names; an unseen category: zeros (warned), NaN, or an error.
    test = write(tmp_path / "test.csv", "A,B,C,D\n4, c, 7, y\n5, a, 6, x\n")
    common = ["--format", "csv", "--names", "n,cat,m,lab", "--label-column", "lab", "--positive-label", "x",
              "--categories-in", tmp_path / "cats.json"]
    capsys.readouterr()
    assert cli(test, *common, "--out", tmp_path / "z.h5") == 0
    assert "1 rows have a value that is not one of its 3 categories" in capsys.readouterr().err
    np.testing.assert_array_equal(read_arrays(tmp_path / "z.h5")["X"], [[4, 0, 0, 0, 7], [5, 0, 1, 0, 6]])
    assert cli(test, *common, "--unknown-category", "missing", "--out", tmp_path / "m.h5") == 0
    np.testing.assert_array_equal(read_arrays(tmp_path / "m.h5")["X"],
                                  [[4, np.nan, np.nan, np.nan, 7], [5, 0, 1, 0, 6]])
    assert cli(test, *common, "--unknown-category", "error", "--out", tmp_path / "e.h5") == 2
    err = capsys.readouterr().err
    assert "test.csv:2: column 'cat': value 'c' is not one of its 3 categories" in err
    assert not (tmp_path / "e.h5").exists()


def test_domain_map_keep_domain_feature_and_unused_value_warning(tmp_path, capsys):
    src = write(tmp_path / "d.csv", "y,edu,x\n1,BS,1\n-1,HS,2\n1,MS,3\n-1,none,4\n1,HS,5\n")
    r = convert.convert_csv(src, tmp_path / "d.h5", domain_column="edu",
                            domain_map="BS,MS,PhD=uni; HS ; *=other", keep_domain_feature=True,
                            categorical="edu")
    data = read_arrays(tmp_path / "d.h5")
    np.testing.assert_array_equal(data["domain"], [0, 1, 0, 2, 1])
    assert r.domain_counts == {"uni": 2, "HS": 2, "other": 1} and r.n_domains == 3
    info = inspect(tmp_path / "d.h5")
    assert info.domain_names == ["uni", "HS", "other"]
    assert info.feature_names == ["edu=BS", "edu=HS", "edu=MS", "edu=none", "x"]
    assert "'PhD'" in capsys.readouterr().err  # listed but never found: probably a typo

    # Without '*' every value must be listed; ids follow the group order.
    r = convert.convert_csv(src, tmp_path / "e.h5", domain_column="edu", domain_map="none=a;HS=b;BS,MS=c")
    np.testing.assert_array_equal(read_arrays(tmp_path / "e.h5")["domain"], [2, 1, 2, 0, 1])
    assert r.d == 1


@pytest.mark.parametrize(
    "spec, text",
    [("a,b", "name it"), ("a=x;a=y", "in two groups"), ("*=x;*=y", "'*' appears twice"), ("a=x;b=x", "used twice"),
     (";", "no groups"), ("a,,b=x", "empty value")],
)
def test_domain_map_syntax_errors(spec, text):
    with pytest.raises(InputError, match=text):
        convert.domainmap._DomainMap(spec)


def test_max_categories_names_the_line(tmp_path):
    src = write(tmp_path / "w.csv", "y,c\n" + "".join(f"{i % 2},v{i % 6}\n" for i in range(30)))  # two classes
    with pytest.raises(InputError, match=r"w\.csv:7: categorical column 'c' has more than 5 distinct values"):
        convert.convert_csv(src, tmp_path / "w.h5", categorical="c", max_categories=5)
    assert convert.convert_csv(src, tmp_path / "w.h5", categorical="c", max_categories=6).d == 6


def test_csv_categorical_vectorized_path_agrees_with_row_checks():
    rng = np.random.default_rng(5)
    values = ["a", "b", " c", "?", "", "NA", "zz", "1", "x y"]
    known = ["1", "a", "b", "c"]
    for _ in range(300):
        rows = []
        for _ in range(int(rng.integers(1, 5))):
            row = [str(rng.choice(["1", "-1"] if rng.random() < 0.9 else ["1", "maybe"]))]
            row += [str(rng.choice(values)), str(rng.choice(["2", "?", "3.5"] if rng.random() < 0.9 else ["x"]))]
            rows.append(row)
        policy = str(rng.choice(["zero", "missing", "error"]))

        def parser():
            return convert._CsvParser("f", 3, ["y", "'c'", "'n'"], 0, None, False, convert._LabelMap(None, False),
                                      np.dtype(np.float32), "", categorical={1: ("c", known)}, unknown=policy)

        try:
            X, y, _, _ = parser()._fast(rows)
        except convert._Retry:
            with pytest.raises(convert._BadRow):
                parser()._check_rows(rows)
            continue
        parser()._check_rows(rows)
        for r, row in enumerate(rows):
            v = row[1].strip()
            if v in MISSING or (v not in known and policy == "missing"):
                expect = [np.nan] * 4
            else:
                expect = [1.0 if v == k else 0.0 for k in known]
            n = row[2].strip()
            np.testing.assert_array_equal(X[r], expect + [np.nan if n in MISSING else float(n)])


# ------------------------------------------------------------ Amazon, small
def test_amazon_domains_per_directory_binary_ties_and_limit(tmp_path, capsys):
    a = write(tmp_path / "dvd" / "pos.review", "good:2 great:1 a_b:1 #label#:positive\ngood:1 #label#:positive\n")
    b = write(tmp_path / "dvd" / "neg.review", "bad:3 good:1 #label#:negative\n\n")
    c = write(tmp_path / "books" / "all.review", "bad:1 zz:4 #label#:negative\ngreat:2 #label#:positive\n")
    out = tmp_path / "x.h5"
    assert cli(a, b, c, "--format", "amazon", "--vocab-size", "3", "--domain-per-file", "--binary",
               "--vocab-out", tmp_path / "v.txt", "--out", out) == 0
    assert "5 rows x 3 features" in capsys.readouterr().out
    # df: good 3, bad 2, great 2, a_b 1, zz 1 -> good, then bad before great (tie, by text)
    assert (tmp_path / "v.txt").read_text() == "good\t3\nbad\t2\ngreat\t2\n"
    data = read_arrays(out)
    np.testing.assert_array_equal(data["X"], [[1, 0, 1], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 1]])
    np.testing.assert_array_equal(data["y"], [1, 1, -1, -1, 1])
    np.testing.assert_array_equal(data["domain"], [0, 0, 0, 1, 1])
    info = inspect(out)
    assert info.domain_names == ["dvd", "books"] and info.feature_names == ["good", "bad", "great"]

    # Counts; a larger vocabulary than there are tokens; --limit over files.
    r = convert.convert_amazon([a, b, c], tmp_path / "y.h5", vocab_size=100, vocab_from=[c], limit=4)
    assert (r.n, r.d) == (4, 3)
    assert inspect(tmp_path / "y.h5").feature_names == ["bad", "great", "zz"]
    np.testing.assert_array_equal(read_arrays(tmp_path / "y.h5")["X"], [[0, 1, 0], [0, 0, 0], [3, 0, 0], [1, 0, 4]])


# ---------------------------------------------------- malformed, via the CLI
# (case id, files {name: content}, extra args, file:line or None, text in the message)
MALFORMED = [
    ("unmapped-domain-value", {"d.csv": "y,e,x\n1,BS,1\n-1,HS,2\n1,PhD,3\n"},
     ["--format", "csv", "--domain-column", "e", "--domain-map", "BS=uni;HS=hs"], "d.csv:4",
     "value 'PhD' is in no group of --domain-map"),
    ("unknown-categorical-column", {"c.csv": "y,color\n1,red\n"},
     ["--format", "csv", "--categorical", "colour"], "c.csv:1", "no column named 'colour'"),
    ("categorical-label-column", {"c.csv": "y,color\n1,red\n"},
     ["--format", "csv", "--categorical", "y"], "c.csv:1", "is the label column"),
    ("categorical-domain-column", {"c.csv": "y,g,color\n1,a,red\n"},
     ["--format", "csv", "--domain-column", "g", "--categorical", "g,color"], "c.csv:1", "--keep-domain-feature"),
    ("categories-in-column-absent", {"c.csv": "y,shade\n1,red\n", "cats.json":
     '{"mpiboost": "categories", "version": 1, "columns": {"color": ["red"]}}'},
     ["--format", "csv", "--categories-in", "{dir}/cats.json"], "c.csv:1", "column 'color'"),
    ("categories-in-not-json", {"c.csv": "y,color\n1,red\n", "cats.json": "color: red\n"},
     ["--format", "csv", "--categories-in", "{dir}/cats.json"], "cats.json", "not a categories file"),
    ("text-in-numeric-column", {"n.csv": "y,a\n1,1\n-1,red\n"}, ["--format", "csv"], "n.csv:3",
     "--categorical 'a'"),
    ("names-count", {"n.csv": "1,2,3\n"}, ["--format", "csv", "--no-header", "--names", "a,b"], "n.csv:1",
     "expected 2 columns (as in --names), found 3"),
    ("domain-map-needs-column", {"n.csv": "y,a\n1,1\n"}, ["--format", "csv", "--domain-map", "a=b"], None,
     "--domain-map needs --domain-column"),
    ("amazon-bad-token", {"r.review": "good:1 #label#:positive\nnice:2 oops #label#:negative\n"},
     ["--format", "amazon"], "r.review:2", "entry 'oops' is not token:count"),
    ("amazon-bad-count", {"r.review": "good:1.5 #label#:positive\n"}, ["--format", "amazon"], "r.review:1",
     "count '1.5' of token 'good'"),
    ("amazon-no-label", {"r.review": "good:1 #label#:positive\n\nnice:2 bad:1\n"}, ["--format", "amazon"],
     "r.review:3", "is not the label"),
    ("amazon-bad-label", {"r.review": "good:1 #label#:neutral\n"}, ["--format", "amazon"], "r.review:1",
     "label 'neutral'"),
    ("amazon-token-twice", {"r.review": "good:1 good:2 #label#:positive\n"}, ["--format", "amazon"],
     "r.review:1", "'good' appears twice"),
    ("amazon-label-not-last", {"r.review": "#label#:positive good:1 #label#:negative\n"},
     ["--format", "amazon"], "r.review:1", "the label must be the last entry"),
    ("amazon-vocab-in-duplicate", {"r.review": "good:1 #label#:positive\n", "v.txt": "good\nbad\ngood\t4\n"},
     ["--format", "amazon", "--vocab-in", "{dir}/v.txt"], "v.txt:3", "already on line 1"),
    ("amazon-csv-option", {"r.review": "good:1 #label#:positive\n"}, ["--format", "amazon", "--categorical", "a"],
     None, "--categorical: only for --format csv"),
    ("csv-amazon-option", {"n.csv": "y,a\n1,1\n"}, ["--format", "csv", "--vocab-size", "10"], None,
     "--vocab-size: only for --format amazon"),
]


@pytest.mark.parametrize("case, files, extra, where, text", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_input(tmp_path, capsys, case, files, extra, where, text):
    for name, content in files.items():
        write(tmp_path / name, content)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    first = tmp_path / next(iter(files))
    extra = [str(a).replace("{dir}", str(tmp_path)) for a in extra]
    code = cli(first, *extra, "--out", out_dir / "data.h5")
    _check_failure(code, capsys.readouterr(), where, text, out_dir)


def _check_failure(code, captured, where, text, out_dir):
    err = captured.err
    assert code == 2, err
    assert captured.out == ""
    assert err.startswith("mpiboost: error: ") and len(err.strip().splitlines()) == 1, err
    if where is not None:
        assert f"{where}: " in err, err
    assert text in err, err
    assert os.listdir(out_dir) == []  # no data file, no side file, no temporary file


def test_failures_leave_no_side_files(tmp_path, capsys):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    # Fails in the second pass, after the categories were collected.
    src = write(tmp_path / "d.csv", "y,e,c\n1,BS,red\n-1,HS,blue\n1,PhD,red\n")
    code = cli(src, "--format", "csv", "--domain-column", "e", "--domain-map", "BS=uni;HS=hs", "--categorical",
               "auto", "--categories-out", out_dir / "cats.json", "--out", out_dir / "d.h5")
    _check_failure(code, capsys.readouterr(), "d.csv:4", "'PhD'", out_dir)
    # Fails while converting, after the vocabulary was chosen.
    good = write(tmp_path / "a" / "good.review", "nice:1 #label#:positive\n")
    bad = write(tmp_path / "b" / "bad.review", "nice:1 #label#:positive\nnice:x #label#:negative\n")
    code = cli(good, bad, "--format", "amazon", "--vocab-from", good, "--vocab-out", out_dir / "v.txt",
               "--out", out_dir / "r.h5")
    _check_failure(code, capsys.readouterr(), "bad.review:2", "count 'x' of token 'nice'", out_dir)
