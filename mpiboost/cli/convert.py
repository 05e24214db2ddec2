"""``mpiboost convert``: its options, checked against the format (each format's own options refused for the
others), and the run of the converter (:mod:`mpiboost.data.convert`) they ask for."""
from __future__ import annotations

import argparse

from ..data.convert import convert_amazon, convert_csv, convert_libsvm, read_recipe
from ..errors import InputError


# (option, attribute) of the options each format accepts beyond the common ones.
_CSV_ONLY = (
    ("--label-column", "label_column"),
    ("--no-label", "no_label"),
    ("--recipe", "recipe"),
    ("--encoding", "encoding"),
    ("--domain-column", "domain_column"),
    ("--weight-column", "weight_column"),
    ("--delimiter", "delimiter"),
    ("--no-header", "no_header"),
    ("--names", "names"),
    ("--skip-lines", "skip_lines"),
    ("--comment-char", "comment_char"),
    ("--label-strip", "label_strip"),
    ("--categorical", "categorical"),
    ("--categorical-encoding", "categorical_encoding"),
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
    parser.add_argument("--format", required=True, choices=("libsvm", "csv", "amazon", "parquet", "npy"),
                        help="input format (parquet: also .feather / .arrow files, through pyarrow)")
    parser.add_argument("--labels", metavar="Y.npy", help="npy: the labels, a .npy of one value per row "
                        "(default: none, rows to score)")
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
        "--recipe", metavar="TRAIN.h5",
        help="convert as TRAIN.h5 was converted (its columns, label column, dropped columns, categories, "
        "dtype, delimiter, encoding; options given here win); columns are matched by name, in any order, and a "
        "missing or extra one is an error; without the label column the rows are converted to score (--no-label)"
    )
    csv_opts.add_argument(
        "--encoding", metavar="E",
        help="the file's text encoding (default utf-8, a byte-order mark allowed); a byte that is not of it is an "
        "error naming the line (e.g. --encoding latin-1)"
    )
    csv_opts.add_argument(
        "--task", choices=("auto", "classification", "regression"), default=None,
        help="(csv, libsvm, parquet, npy) regression: the label is a numeric target, written as numbers (for "
        "--algo gbdt --objective regression); classification: the label's values are classes even if they are many numbers; auto (the "
        "default) refuses a numeric label of more than 30 values (a continuous target?) and asks for one of them"
    )
    csv_opts.add_argument(
        "--domain-column", metavar="C", help="domain column: name or 0-based index (default: none)"
    )
    csv_opts.add_argument(
        "--weight-column", metavar="C",
        help="(csv, parquet) a column of sample weights (finite numbers >= 0): written as the file's weight "
        "dataset, not a feature (every batch algorithm trains on them)"
    )
    parser.add_argument(
        "--weights", metavar="W",
        help="(libsvm) a text file of sample weights, one a line in the rows' order (LightGBM's .weight file): "
        "written as the file's weight dataset",
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
        "--categorical-encoding", choices=("onehot", "native"),
        help="onehot (default): k indicator features a column; native: one feature of category codes 0..k-1 "
        "(k <= 255), which gbdt's trees split many categories against the rest, as LightGBM's categorical_feature",
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


def _given_or(value, recipe: dict, key: str, default):
    """The option as given; else the recipe's value; else the default."""
    if value is not None:
        return value
    got = recipe.get(key)
    return default if got is None else got


def _recipe(args: argparse.Namespace, source: str) -> dict:
    """The recipe of ``--recipe``, with the label and weight columns made optional: absent from ``source``, no
    labels (rows to score), no weights."""
    recipe = dict(read_recipe(args.recipe))
    label = recipe.get("label_column")
    if recipe.get("weight_column") is not None and recipe.get("header", True):
        from ..data.convert.csvfile import header_names

        names = header_names(source, recipe)
        if names is not None and recipe["weight_column"] not in names:
            recipe["weight_column"] = None
    if args.label_column is None and not args.no_label and label is not None and recipe.get("header", True):
        from ..data.convert.csvfile import header_names

        names = header_names(source, recipe)
        if names is not None and label not in names:
            recipe["_no_label"] = True  # rows to score: the training file's label column is not there
            for key in ("label_column", "positive_label", "label_strip"):
                recipe[key] = None
    return recipe


def run(args: argparse.Namespace) -> int:
    """Run ``mpiboost convert`` with parsed ``args``; returns the exit code."""
    compression = None if args.compression == "none" else args.compression
    inputs = [args.input] if isinstance(args.input, str) else list(args.input)
    fmt = args.format
    table_ok = {"--label-column", "--no-label", "--drop-columns", "--recipe", "--weight-column"}  # parquet's too
    for only, options in (("csv", _CSV_ONLY), ("amazon", _AMAZON_ONLY)):
        given = _given(args, options) if fmt != only else []
        if fmt == "parquet" and only == "csv":
            given = [g for g in given if g not in table_ok]
        if given:
            raise InputError(f"{', '.join(given)}: only for --format {only}")
    if fmt != "amazon" and len(inputs) != 1:
        raise InputError(f"--format {fmt} converts one input file, got {len(inputs)}: {' '.join(inputs)}")
    if args.labels is not None and fmt != "npy":
        raise InputError("--labels: only for --format npy")
    if args.weights is not None and fmt != "libsvm":
        raise InputError("--weights: only for --format libsvm (CSV and Parquet: --weight-column)")
    if args.task is not None and fmt == "amazon":
        raise InputError("--task: not for --format amazon (its labels are the reviews' classes)")
    if fmt == "parquet":
        from ..data.convert.csvfile import _split_list
        from ..data.convert.tables import convert_table

        result = convert_table(inputs[0], args.out, label_column=args.label_column, no_label=bool(args.no_label),
                               drop_columns=_split_list(args.drop_columns, "--drop-columns"), dtype=args.dtype,
                               recipe=read_recipe(args.recipe, "parquet") if args.recipe else None, task=args.task,
                               weight_column=args.weight_column)
    elif fmt == "npy":
        from ..data.convert.tables import convert_npy

        result = convert_npy(inputs[0], args.out, labels=args.labels, dtype=args.dtype, task=args.task)
    elif fmt == "libsvm":
        result = convert_libsvm(
            inputs[0],
            args.out,
            n_features=args.n_features,
            positive_label=args.positive_label,
            dtype=args.dtype,
            compression=compression,
            limit=args.limit,
            task=args.task or "auto",
            weights=args.weights,
        )
    elif fmt == "csv":
        recipe = _recipe(args, inputs[0]) if args.recipe else {}
        result = convert_csv(
            inputs[0],
            args.out,
            header=recipe.get("header", True) if args.no_header is None else not args.no_header,
            delimiter=_given_or(args.delimiter, recipe, "delimiter", ","),
            label_column=_given_or(args.label_column, recipe, "label_column", None),
            domain_column=_given_or(args.domain_column, recipe, "domain_column", None),
            positive_label=_given_or(args.positive_label, recipe, "positive_label", None),
            n_features=args.n_features,
            dtype=recipe.get("dtype", args.dtype) if args.recipe and args.dtype == "float32" else args.dtype,
            compression=compression,
            limit=args.limit,
            names=_given_or(args.names, recipe, "names", None),
            skip_lines=_given_or(args.skip_lines, recipe, "skip_lines", 0),
            comment_char=_given_or(args.comment_char, recipe, "comment_char", None),
            label_strip=_given_or(args.label_strip, recipe, "label_strip", None),
            categorical=args.categorical,
            categories_from=args.categories_from,
            categories_in=args.categories_in,
            categories_out=args.categories_out,
            unknown_category=_given_or(args.unknown_category, recipe, "unknown_category", "zero"),
            max_categories=args.max_categories if args.max_categories is not None else 1000,
            domain_map=_given_or(args.domain_map, recipe, "domain_map", None),
            keep_domain_feature=bool(_given_or(args.keep_domain_feature, recipe, "keep_domain_feature", False)),
            drop_columns=_given_or(args.drop_columns, recipe, "drop_columns", None),
            no_label=bool(args.no_label) or bool(recipe.get("_no_label")),
            task=_given_or(args.task, recipe, "task", "auto"),
            weight_column=_given_or(args.weight_column, recipe, "weight_column", None),
            categorical_encoding=_given_or(args.categorical_encoding, recipe, "categorical_encoding", "onehot"),
            encoding=_given_or(args.encoding, recipe, "encoding", None),
            categories=recipe.get("categories") if args.recipe and not (args.categorical or args.categories_in)
            else None,
            feature_order=recipe.get("feature_names") if args.recipe else None,
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
