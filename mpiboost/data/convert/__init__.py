"""Convert LIBSVM, CSV or Amazon review text files to an mpiboost HDF5 data file.

Labels (LIBSVM and CSV) are kept as you have them: if every label of the
file reads as a number the labels are numbers ("1", "+1" and "1.0" are one
class), otherwise every label is its text (stripped, after --label-strip).
Integer labels are stored as they are in y (-1/+1 stays -1/+1, 0/1 stays 0/1,
1..7 stays 1..7); any other labels (text, or numbers such as 2.5) are stored
as indices into the file's attribute `classes`, the class list in canonical
order (numbers ascending, text by code point). At most 256 distinct labels
(more is an error at the first label beyond the cap: usually the wrong label
column). Empty labels (and ?, NA, NaN, nan) are errors. --positive-label V
instead maps the label V to +1 and every other label to -1 (one-vs-rest;
CSV compares text, LIBSVM compares numbers).

LIBSVM (--format libsvm): one row per line, `label idx:val idx:val ...`, with
1-based feature indices; absent entries are 0. `#` starts a comment; blank
lines are skipped. Without --n-features a first pass finds the largest index.

CSV (--format csv): a header row unless --no-header; --delimiter (default ",";
"whitespace" or " " for any run of spaces and tabs, "tab" for tabs). Spaces
after a delimiter are skipped and values are compared stripped, so
comma-plus-space files (UCI Adult) parse. --names A,B,C names the columns of
a file without a header (with --no-header) or replaces the file's header.
--skip-lines N skips the first N lines; --comment-char C skips every line
whose first non-blank character is C (e.g. '|' for adult.test's banner).
The label is the first column unless --label-column names another (a name or
a 0-based index, negative counts from the end). Empty, ?, NA, NaN and nan are
missing values (NaN). --drop-columns C1,C2 (names or indices, like
--label-column) ignores those columns entirely, e.g. an id column; they may
not be the label or the domain column. Every other column is a numeric
feature, unless it is categorical.

  Labels: --label-strip CHARS removes these characters from both ends of
  every label (and of --positive-label V) first: --label-strip . makes the
  test file's '>50K.' the same class as the training file's '>50K'.

  Categorical columns: --categorical C1,C2 (names or indices) or
  --categorical auto (every feature column with a value that is not a
  number) writes each such column one-hot: column c with categories v1..vk
  becomes k features named 'c=v1' .. 'c=vk' in its place, 1 for the row's
  value and 0 for the others. Categories are the distinct (stripped) values
  other than the missing tokens, collected in a first pass and sorted by
  code point. A missing value (?, empty, ...) is NaN in all k features, which
  boosting treats as missing. --categories-out F.json writes the columns and
  their categories; --categories-in F.json reads them instead of collecting
  them (then --categorical may be left out), and --categories-from FILE...
  collects them from other CSV files read with the same options: use one of
  these so a train and a test file get the same columns. A value that is not
  a known category becomes all-zero indicators (--unknown-category zero, the
  default, with a warning), NaN (missing) or an error (error).
  --max-categories K (default 1000) bounds the categories of one column.

  Domains: --domain-column C takes integer domain ids as they are (when the
  first row's value is an integer), or maps any other values to 0, 1, ... in
  order of first appearance (kept as domain_names). --domain-map SPEC maps
  the column's values to named domains instead. SPEC is groups separated by
  ';', each 'VALUE,VALUE,...=NAME' (values separated by ','; a group of one
  value may leave out '=NAME'); '*' as a value takes every value no group
  lists; domain ids follow the order of the groups, whose names are stored as
  domain_names. A value no group takes is an error (FILE:LINE) unless there is
  a '*' group. Quote SPEC in the shell:
    --domain-map "Bachelors,Masters,Doctorate,Prof-school=university;HS-grad=hs;*=other"
  The domain column is not a feature unless --keep-domain-feature (then it is
  numeric or categorical like any other column).

Amazon reviews (--format amazon, one or more input files): one review per line,
`token:count token:count ... #label#:positive` (or negative), as in the
processed multi-domain sentiment data of Blitzer et al. Features are the
counts (--binary: 1 if present) of the V tokens (--vocab-size, default 5000)
that occur in the most reviews of the vocabulary sources (--vocab-from
FILE..., default the input files), ties broken by the token text; column j
is the j-th token. The data file keeps the vocabulary in the dataset
'vocabulary' (and in feature_names up to 4,000 tokens, the most an HDF5
attribute holds here). --vocab-out F writes it (one token a line, a tab and
its document frequency), --vocab-in F reads one instead, so train and test
files share the columns. A token must not repeat within a line and counts are
integers. Positive is +1, negative -1. Rows of several input files are
concatenated in the order given; --domain-per-file adds a domain per parent
directory (books/positive.review and books/negative.review are both domain
'books'), --domain NAME puts every row in one domain NAME (also stored as the
attribute domain_name, which names the domain when several files are
trained on, one domain per file). Give the input files first: --vocab-from
and --categories-from take every file name that follows them.

Files ending in .gz, .bz2 or .xz are decompressed on the fly; rows are streamed
in chunks, so the input never has to fit in memory (the CSV category pass keeps
the categories only; the Amazon vocabulary pass keeps one count per distinct
token). An error names the file and line (FILE:LINE: what is wrong), exits with
code 2 and leaves no output file behind (nor a --categories-out or --vocab-out
file).
"""
from __future__ import annotations

import argparse

from ...errors import InputError
from .amazon import convert_amazon
from .common import ConvertResult
from .csvfile import convert_csv
from .libsvm import convert_libsvm

# Internals that tests/test_convert.py checks directly (vectorized path vs row checks).
from .common import _BadRow, _LabelMap, _Retry  # noqa: F401
from .csvfile import _CsvParser  # noqa: F401
from .libsvm import _LibsvmBatch, _LibsvmParser  # noqa: F401

__all__ = ["ConvertResult", "add_arguments", "convert_amazon", "convert_csv", "convert_libsvm", "run"]

# (option, attribute) of the options each format accepts beyond the common ones.
_CSV_ONLY = (
    ("--label-column", "label_column"),
    ("--no-label", "no_label"),
    ("--task", "task"),
    ("--encoding", "encoding"),
    ("--domain-column", "domain_column"),
    ("--delimiter", "delimiter"),
    ("--no-header", "no_header"),
    ("--names", "names"),
    ("--skip-lines", "skip_lines"),
    ("--comment-char", "comment_char"),
    ("--label-strip", "label_strip"),
    ("--categorical", "categorical"),
    ("--categories-from", "categories_from"),
    ("--categories-in", "categories_in"),
    ("--categories-out", "categories_out"),
    ("--unknown-category", "unknown_category"),
    ("--max-categories", "max_categories"),
    ("--domain-map", "domain_map"),
    ("--keep-domain-feature", "keep_domain_feature"),
    ("--drop-columns", "drop_columns"),
)
_AMAZON_ONLY = (
    ("--vocab-size", "vocab_size"),
    ("--vocab-from", "vocab_from"),
    ("--vocab-in", "vocab_in"),
    ("--vocab-out", "vocab_out"),
    ("--binary", "binary"),
    ("--domain-per-file", "domain_per_file"),
    ("--domain", "domain"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``convert`` subcommand's arguments to ``parser``."""
    parser.add_argument(
        "input",
        metavar="IN",
        nargs="+",
        help="input text file (.gz, .bz2, .xz are decompressed); --format amazon takes several",
    )
    parser.add_argument("--format", required=True, choices=("libsvm", "csv", "amazon"), help="input format")
    parser.add_argument("--out", required=True, metavar="F.h5", help="output HDF5 file")
    parser.add_argument(
        "--n-features",
        type=int,
        metavar="D",
        help="LIBSVM: number of features (indices 1..D; default: the largest index found, "
        "which takes a first pass); CSV: expected number of features written (after one-hot encoding)",
    )
    parser.add_argument(
        "--positive-label",
        metavar="V",
        help="label mapped to +1, every other label to -1 (default: the labels are kept as they are, "
        "up to 256 classes)",
    )
    csv_opts = parser.add_argument_group("CSV options")
    csv_opts.add_argument(
        "--label-column", metavar="C", help="label column: name or 0-based index (default: first column)"
    )
    csv_opts.add_argument(
        "--no-label", action="store_true",
        help="the file has no label column (new rows to score): every column is a feature; the output is "
        "marked unlabelled, for predict (train and evaluate refuse it)"
    )
    csv_opts.add_argument(
        "--encoding", metavar="E",
        help="the file's text encoding (default utf-8, a byte-order mark allowed); a byte that is not of it is an "
        "error naming the line (e.g. --encoding latin-1)"
    )
    csv_opts.add_argument(
        "--task", choices=("auto", "classification"), default=None,
        help="classification: the label's values are classes even if they are many numbers (auto, the default, "
        "warns when a numeric label has more than 30 values: a continuous target?)"
    )
    csv_opts.add_argument(
        "--domain-column", metavar="C", help="domain column: name or 0-based index (default: none)"
    )
    csv_opts.add_argument(
        "--drop-columns", metavar="C1,C2",
        help="columns to ignore entirely (names or 0-based indices, e.g. an id column)",
    )
    csv_opts.add_argument("--no-header", action="store_true", default=None,
                          help="the first line is data, not column names")
    csv_opts.add_argument(
        "--delimiter", metavar="CHAR", help="field delimiter: one character, 'tab', or 'whitespace' (default ',')"
    )
    csv_opts.add_argument(
        "--names", metavar="A,B,...", help="column names: the header of a file without one (with --no-header), "
        "or a replacement for the file's header"
    )
    csv_opts.add_argument("--skip-lines", type=int, metavar="N", help="skip the first N lines of the file")
    csv_opts.add_argument(
        "--comment-char", metavar="C", help="skip lines whose first non-blank character is C (e.g. '|' or '#')"
    )
    csv_opts.add_argument(
        "--label-strip", metavar="CHARS",
        help="remove these characters from both ends of every label before mapping it (e.g. '.')",
    )
    csv_opts.add_argument(
        "--categorical", metavar="C1,C2|auto",
        help="columns to encode one-hot (names or indices), or 'auto': every column with a non-numeric value",
    )
    csv_opts.add_argument(
        "--categories-from", nargs="+", metavar="FILE",
        help="collect the categories from these CSV files (same options) instead of the input",
    )
    csv_opts.add_argument(
        "--categories-in", metavar="F.json", help="read the categorical columns and their categories from F.json"
    )
    csv_opts.add_argument(
        "--categories-out", metavar="F.json", help="write the categorical columns and their categories to F.json"
    )
    csv_opts.add_argument(
        "--unknown-category", choices=("zero", "missing", "error"),
        help="a value that is not a known category: all-zero indicators (default), NaN, or an error",
    )
    csv_opts.add_argument(
        "--max-categories", type=int, metavar="K", help="most categories of one column (default 1000)"
    )
    csv_opts.add_argument(
        "--domain-map", metavar="SPEC",
        help="map domain-column values to named domains: 'V1,V2=NAME;V3=NAME2;*=OTHER' "
        "(groups by ';', values by ','; '*' takes the rest; ids in group order)",
    )
    csv_opts.add_argument(
        "--keep-domain-feature", action="store_true", default=None,
        help="keep the domain column as a feature too",
    )
    amz = parser.add_argument_group("Amazon review options")
    amz.add_argument("--vocab-size", type=int, metavar="V", help="vocabulary size (default 5000)")
    amz.add_argument(
        "--vocab-from", nargs="+", metavar="FILE",
        help="review files whose document frequencies choose the vocabulary (default: the input files)",
    )
    amz.add_argument("--vocab-in", metavar="F", help="read the vocabulary from F (one token a line)")
    amz.add_argument("--vocab-out", metavar="F", help="write the vocabulary to F (token, tab, document frequency)")
    amz.add_argument("--binary", action="store_true", default=None, help="1 for a token present, not its count")
    amz.add_argument(
        "--domain-per-file", action="store_true", default=None,
        help="a domain per parent directory of the input files, named after it (books, dvd, ...)",
    )
    amz.add_argument("--domain", metavar="NAME", help="put every row in one domain named NAME")
    out_opts = parser.add_argument_group("output options")
    out_opts.add_argument(
        "--dtype", choices=("float32", "float64"), default="float32", help="dtype of X (default float32)"
    )
    out_opts.add_argument(
        "--compression", choices=("none", "gzip", "lzf"), default="none", help="HDF5 compression (default none)"
    )
    out_opts.add_argument("--limit", type=int, metavar="N", help="convert only the first N data rows")


def _given(args: argparse.Namespace, options) -> list[str]:
    return [opt for opt, attr in options if getattr(args, attr, None) not in (None, False)]


def run(args: argparse.Namespace) -> int:
    """Run ``mpiboost convert`` with parsed ``args``; returns the exit code."""
    compression = None if args.compression == "none" else args.compression
    inputs = [args.input] if isinstance(args.input, str) else list(args.input)
    fmt = args.format
    for only, options in (("csv", _CSV_ONLY), ("amazon", _AMAZON_ONLY)):
        given = _given(args, options) if fmt != only else []
        if given:
            raise InputError(f"{', '.join(given)}: only for --format {only}")
    if fmt != "amazon" and len(inputs) != 1:
        raise InputError(f"--format {fmt} converts one input file, got {len(inputs)}: {' '.join(inputs)}")
    if fmt == "libsvm":
        result = convert_libsvm(
            inputs[0],
            args.out,
            n_features=args.n_features,
            positive_label=args.positive_label,
            dtype=args.dtype,
            compression=compression,
            limit=args.limit,
        )
    elif fmt == "csv":
        result = convert_csv(
            inputs[0],
            args.out,
            header=not args.no_header,
            delimiter=args.delimiter if args.delimiter is not None else ",",
            label_column=args.label_column,
            domain_column=args.domain_column,
            positive_label=args.positive_label,
            n_features=args.n_features,
            dtype=args.dtype,
            compression=compression,
            limit=args.limit,
            names=args.names,
            skip_lines=args.skip_lines or 0,
            comment_char=args.comment_char,
            label_strip=args.label_strip,
            categorical=args.categorical,
            categories_from=args.categories_from,
            categories_in=args.categories_in,
            categories_out=args.categories_out,
            unknown_category=args.unknown_category or "zero",
            max_categories=args.max_categories if args.max_categories is not None else 1000,
            domain_map=args.domain_map,
            keep_domain_feature=bool(args.keep_domain_feature),
            drop_columns=args.drop_columns,
            no_label=bool(args.no_label),
            task=args.task or "auto",
            encoding=args.encoding,
        )
    else:
        given = [opt for opt, value in (("--n-features", args.n_features), ("--positive-label", args.positive_label))
                 if value is not None]
        if given:
            raise InputError(
                f"{', '.join(given)}: not for --format amazon (the vocabulary sets the features: --vocab-size; "
                "labels are #label#:positive/negative)"
            )
        result = convert_amazon(
            inputs,
            args.out,
            vocab_size=args.vocab_size,
            vocab_from=args.vocab_from,
            vocab_in=args.vocab_in,
            vocab_out=args.vocab_out,
            binary=bool(args.binary),
            domain_per_file=bool(args.domain_per_file),
            domain=args.domain,
            dtype=args.dtype,
            compression=compression,
            limit=args.limit,
        )
    print(result.summary(), flush=True)
    return 0
