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
  --categorical-encoding native writes each categorical column as one
  feature of category codes 0..k-1 instead (k <= 255; missing and unknown
  values NaN), declared categorical in the file: gbdt's trees (one output:
  binary classes, regression) split such a column many categories against
  the rest, as LightGBM's categorical_feature; other learners read the codes
  as ordered numbers.

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

from ...errors import InputError
from .amazon import convert_amazon
from .common import ConvertResult
from .csvfile import convert_csv
from .libsvm import convert_libsvm

# Internals that tests/test_convert.py checks directly (vectorized path vs row checks).
from .common import _BadRow, _LabelMap, _Retry  # noqa: F401
from .csvfile import _CsvParser  # noqa: F401
from .libsvm import _LibsvmBatch, _LibsvmParser  # noqa: F401

__all__ = ["ConvertResult", "convert_amazon", "convert_csv", "convert_libsvm", "read_recipe"]

def read_recipe(path, fmt: str = "csv") -> dict:
    """The conversion recipe a converted file records (``convert`` stores it), checked (InputError)."""
    import json

    from ..format import inspect

    info = inspect(path)
    text = info.attrs.get("recipe")
    if text is None:
        raise InputError(f"--recipe {path}: the file records no conversion recipe (converted by an older "
                         "mpiboost, or not from a CSV file)")
    try:
        recipe = json.loads(text.decode() if isinstance(text, bytes) else str(text))
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"--recipe {path}: its recipe is not readable ({exc})") from None
    if not isinstance(recipe, dict) or recipe.get("format") != fmt:
        raise InputError(f"--recipe {path}: not the recipe of a --format {fmt} conversion")
    return recipe
