"""Convert a LIBSVM or CSV text file to an mpiboost HDF5 data file.

LIBSVM (--format libsvm): one row per line, `label idx:val idx:val ...`, with
1-based feature indices; absent entries are 0. `#` starts a comment; blank
lines are skipped. Labels +1/-1 or 1/0 (written as 1, +1, 1.0, -1, 0 ...)
become +1/-1. Without --n-features a first pass finds the largest index.

CSV (--format csv): a header row unless --no-header; --delimiter (default ",";
"whitespace" or " " for any run of spaces and tabs, "tab" for tabs). The label
is the first column unless --label-column names another (a header name or a
0-based index, negative counts from the end). --domain-column takes integer
domain ids as they are (when the first row's value is an integer), or maps
any other values to 0, 1, ... in order of first appearance (kept as
domain_names). Empty, ?, NA, NaN and nan are missing values (NaN). Every
other column is a numeric feature.

--positive-label V maps the label V to +1 and every other label to -1 (for
multiclass or text labels; CSV compares text, LIBSVM compares numbers).

Files ending in .gz, .bz2 or .xz are decompressed on the fly; rows are streamed
in chunks, so the input never has to fit in memory. An error names the file
and line (FILE:LINE: what is wrong), exits with code 2 and leaves no output
file behind.
"""
from __future__ import annotations

import argparse

from ...errors import InputError
from .common import ConvertResult
from .csvfile import convert_csv
from .libsvm import convert_libsvm

# Internals that tests/test_convert.py checks directly (vectorized path vs row checks).
from .common import _BadRow, _LabelMap, _Retry  # noqa: F401
from .csvfile import _CsvParser  # noqa: F401
from .libsvm import _LibsvmBatch, _LibsvmParser  # noqa: F401

__all__ = ["ConvertResult", "add_arguments", "convert_csv", "convert_libsvm", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``convert`` subcommand's arguments to ``parser``."""
    parser.add_argument("input", metavar="IN", help="input text file (.gz, .bz2, .xz are decompressed)")
    parser.add_argument("--format", required=True, choices=("libsvm", "csv"), help="input format")
    parser.add_argument("--out", required=True, metavar="F.h5", help="output HDF5 file")
    parser.add_argument(
        "--n-features",
        type=int,
        metavar="D",
        help="LIBSVM: number of features (indices 1..D; default: the largest index found, "
        "which takes a first pass); CSV: expected number of feature columns",
    )
    parser.add_argument(
        "--positive-label",
        metavar="V",
        help="label mapped to +1, every other label to -1 (default: labels must be +1/-1 or 1/0)",
    )
    csv_opts = parser.add_argument_group("CSV options")
    csv_opts.add_argument(
        "--label-column", metavar="C", help="label column: header name or 0-based index (default: first column)"
    )
    csv_opts.add_argument(
        "--domain-column", metavar="C", help="domain column: header name or 0-based index (default: none)"
    )
    csv_opts.add_argument("--no-header", action="store_true", help="the first line is data, not column names")
    csv_opts.add_argument(
        "--delimiter", metavar="CHAR", help="field delimiter: one character, 'tab', or 'whitespace' (default ',')"
    )
    out_opts = parser.add_argument_group("output options")
    out_opts.add_argument(
        "--dtype", choices=("float32", "float64"), default="float32", help="dtype of X (default float32)"
    )
    out_opts.add_argument(
        "--compression", choices=("none", "gzip", "lzf"), default="none", help="HDF5 compression (default none)"
    )
    out_opts.add_argument("--limit", type=int, metavar="N", help="convert only the first N data rows")


def run(args: argparse.Namespace) -> int:
    """Run ``mpiboost convert`` with parsed ``args``; returns the exit code."""
    compression = None if args.compression == "none" else args.compression
    if args.format == "libsvm":
        given = [
            opt
            for opt, value in (
                ("--label-column", args.label_column),
                ("--domain-column", args.domain_column),
                ("--delimiter", args.delimiter),
                ("--no-header", args.no_header or None),
            )
            if value is not None
        ]
        if given:
            raise InputError(f"{', '.join(given)}: only for --format csv")
        result = convert_libsvm(
            args.input,
            args.out,
            n_features=args.n_features,
            positive_label=args.positive_label,
            dtype=args.dtype,
            compression=compression,
            limit=args.limit,
        )
    else:
        result = convert_csv(
            args.input,
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
        )
    print(result.summary(), flush=True)
    return 0
