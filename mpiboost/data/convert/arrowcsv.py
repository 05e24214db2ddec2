"""CSV records parsed by pyarrow (multi-threaded, in C++), where it reads a file exactly as ours does.

mpiboost's own parser (the csv module, then ``float`` on every token) gives
the errors a user needs — the file, the line, the column and why — but is
several times slower than pyarrow's reader. So ``convert`` reads a plain
delimited UTF-8 file with pyarrow when it is installed, and hands the columns
to the same checks (:meth:`_CsvParser.assemble`). pyarrow accepts a subset of
what ours does and gives the same values (both round decimal text to the
nearest double), and everything it might read otherwise is sent back:

* any pyarrow error (a row of another width, a value it does not take for a
  number, bytes that are not UTF-8), any batch the checks refuse, a token that
  keeps a quote after the spaces ours skips, and a first row that is not the
  one our reader found: :class:`Fallback`, and the conversion starts again
  with our parser, which then names the line;
* comment characters, whitespace delimiters, other encodings and ``.xz``
  files are never tried here.

``scripts/bench/bench_convert.py`` measures both against pandas.
"""
from __future__ import annotations

import os
from typing import Iterator, NamedTuple, Optional

import numpy as np

from .categories import MISSING_TOKENS

BLOCK_BYTES = 1 << 24  # pyarrow's unit of parallel parsing: 16 MiB of text per batch
# Smaller files are read by ours: importing pyarrow (about 0.3 s) costs more than it saves below this size
# (ours parses about 50 ns a byte, pyarrow about 15 on two cores; bench_convert.py measures both).
MIN_BYTES = 16 << 20
# A file up to this size is parsed whole (its columns held as float64: about its own size in memory),
# a larger one as a stream of blocks, which pyarrow parses one after another (about 5x slower)
WHOLE_BYTES = 1 << 30
ROWS_PER_BATCH = 1 << 16  # rows handed to the checks and the writer at a time
UTF8 = (None, "utf-8", "utf8", "utf-8-sig", "utf_8", "utf_8_sig")


last_reader = ""  # who read the last file converted: "pyarrow" or "mpiboost" (for the tests)


class Coded(NamedTuple):
    """A column of text tokens as its distinct ``values`` (in order of first appearance) and each row's
    ``index`` into them: the checks map each distinct token once (:meth:`_CsvParser.assemble`)."""

    values: list
    index: np.ndarray


class Fallback(Exception):
    """pyarrow's reading is not certain to be ours: convert with our parser instead."""


def available() -> bool:
    try:
        import pyarrow.csv  # noqa: F401
    except ImportError:
        return False
    return os.environ.get("MPIBOOST_CSV_PARSER", "auto") != "python"  # "python": ours only (tests, comparisons)


def usable(path, delim: Optional[str], comment: Optional[str], encoding: Optional[str]) -> bool:
    """Whether this file and these options may be read by pyarrow at all."""
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    try:
        big = os.path.getsize(path) >= MIN_BYTES
    except OSError:
        return False  # ours gives the message
    return (big and delim is not None and comment is None and (encoding or None) in UTF8
            and suffix not in (".xz", ".lzma", ".zst", ".zip") and available())


def batches(path, first_line: int, ncols: int, delim: str, text_columns, numeric_columns,
            block_bytes: Optional[int] = None) -> Iterator:
    """pyarrow record batches of the rows from physical line ``first_line`` on, every column named by index."""
    import pyarrow as pa
    import pyarrow.csv as pc

    names = [f"c{i}" for i in range(ncols)]
    # Numbers parsed by pyarrow as it reads (it takes spaces around a number, as float() does), the rest as text
    types = {name: pa.string() for name in names}  # also the columns not read (dropped): text never fails
    types.update({names[c]: pa.float64() for c in numeric_columns if c not in set(text_columns)})
    read = pc.ReadOptions(skip_rows=first_line - 1, column_names=names, block_size=block_bytes or BLOCK_BYTES)
    parse = pc.ParseOptions(delimiter=delim, newlines_in_values=True)
    convert = pc.ConvertOptions(column_types=types, null_values=sorted(MISSING_TOKENS), strings_can_be_null=False,
                                include_columns=names)
    try:
        if os.path.getsize(path) <= WHOLE_BYTES:  # parsed in parallel over its blocks: about 5x the stream's speed
            table = pc.read_csv(os.fspath(path), read_options=read, parse_options=parse, convert_options=convert)
            yield from table.to_batches(max_chunksize=ROWS_PER_BATCH)
            return
        for batch in pc.open_csv(os.fspath(path), read_options=read, parse_options=parse, convert_options=convert):
            yield batch
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise Fallback(str(exc)) from None


def limited(batches: Iterator, limit: Optional[int]) -> Iterator:
    """The non-empty batches of the first ``limit`` rows (all rows without a limit)."""
    total = 0
    for batch in batches:
        if limit is not None:
            if total >= limit:
                return
            batch = batch.slice(0, limit - total)
        if batch.num_rows:
            total += batch.num_rows
            yield batch


def floats(arr) -> np.ndarray:
    """A float64 pyarrow array as numpy, NaN where null; from its buffers (``to_numpy`` would import pandas)."""
    n, off = len(arr), arr.offset
    validity, data = arr.buffers()[:2]
    out = np.frombuffer(data, dtype=np.float64, count=off + n)[off:]
    if arr.null_count:
        valid = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")[off:off + n].astype(bool)
        out = np.where(valid, out, np.nan)
    return out


def columns(batch, parser) -> tuple:
    """``(m, labels, domains, numbers, categorical tokens)`` of one batch, as :meth:`assemble` takes them."""
    import pyarrow.compute as pc

    def trimmed(c: int):
        col = pc.utf8_ltrim(batch.column(c), characters=" ")  # ours skips the spaces after a delimiter
        if pc.any(pc.match_substring(col, '"')).as_py():  # a quoted field after spaces: ours unquotes it
            raise Fallback(f"column {c}: a quote after spaces")
        return col

    def text(c: int) -> Coded:
        enc = trimmed(c).dictionary_encode()  # the distinct tokens in order of first appearance, and an index
        return Coded(enc.dictionary.to_pylist(), np.asarray(enc.indices.to_numpy(zero_copy_only=False),
                                                            dtype=np.intp))

    m = batch.num_rows
    labels = text(parser.label) if parser._get_label is not None else None
    doms = text(parser.domain) if parser._get_domain is not None else None
    num = None
    if parser.n_num:
        num = np.empty((m, parser.n_num), dtype=np.float64)
        for j, c in enumerate(parser.numeric):
            num[:, j] = floats(batch.column(c))  # a missing token: NaN
    cats = {c: text(c) for c in parser.cat}
    return m, labels, doms, num, cats


def check_first_row(parts: tuple, first: list, parser) -> None:
    """Raise :class:`Fallback` unless pyarrow's first row is the row our reader found first (``first``, its
    fields), token for token and value for value."""
    _, labels, doms, num, cats = parts

    def first_of(col) -> str:
        return col.values[col.index[0]] if isinstance(col, Coded) else col[0]

    if len(first) != parser.ncols:
        raise Fallback("the first row's width")
    if labels is not None and first_of(labels) != first[parser.label]:
        raise Fallback("the first row's label")
    if doms is not None and first_of(doms) != first[parser.domain]:
        raise Fallback("the first row's domain")
    if any(first_of(cats[c]) != first[c] for c in cats):
        raise Fallback("the first row's categories")
    if num is not None:
        for j, c in enumerate(parser.numeric):
            tok = first[c]
            try:
                want = np.nan if tok in MISSING_TOKENS or tok.strip() in MISSING_TOKENS else float(tok)
            except ValueError:
                raise Fallback("the first row's numbers") from None
            got = num[0, j]
            if not (got == want or (np.isnan(got) and np.isnan(want))):
                raise Fallback("the first row's numbers")


def distinct(path, first_line: int, ncols: int, delim: str, columns, limit: Optional[int]) -> dict:
    """The distinct tokens (as read, before any stripping) of ``columns`` in the rows from ``first_line`` on,
    the first ``limit`` rows only if given: ``{column: set}``; :class:`Fallback` as :func:`batches`."""
    import pyarrow.compute as pc

    out: dict = {c: set() for c in columns}
    for batch in limited(batches(path, first_line, ncols, delim, columns, []), limit):
        for c in columns:
            out[c].update(pc.unique(batch.column(c)).to_pylist())
    return out


def auto_categories(path, first_line: int, first: list, ncols: int, delim: str, columns, limit: Optional[int],
                    max_categories: int) -> dict:
    """``--categorical auto`` read by pyarrow: ``{column: its categories}`` for each of ``columns`` holding a
    value that is not a number (the others stay numeric), as the row-by-row collector decides it.

    A column whose values all parse as numbers by pyarrow is numeric in that batch (pyarrow takes a subset
    of what ``float`` does); otherwise its distinct tokens are judged by ``float`` itself. Any doubt — a
    categorical column past ``max_categories`` (whose message names a line), a quote, a first row other
    than ours — is :class:`Fallback`.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from .categories import is_number

    missing = pa.array(sorted(MISSING_TOKENS), type=pa.string())
    vals: dict = {c: set() for c in columns}  # None: more than max_categories values while numeric
    cat = {c: False for c in columns}
    checked = False
    for batch in limited(batches(path, first_line, ncols, delim, columns, []), limit):
        for c in columns:
            raw = batch.column(c)
            if not checked and raw[0].as_py().strip() != first[c].strip():
                raise Fallback("the first row")
            trimmed = pc.utf8_trim_whitespace(raw)
            try:
                pc.cast(pc.filter(trimmed, pc.invert(pc.is_in(trimmed, value_set=missing))), pa.float64())
                numeric = True
            except pa.ArrowException:
                numeric = False
            if numeric and vals[c] is None:
                continue  # numeric so far and too many values to become categorical: nothing to keep
            if numeric and pc.count_distinct(raw).as_py() > 4 * max_categories + len(MISSING_TOKENS):
                new = None  # more distinct values than any spelling of max_categories values
            else:
                new = {t.strip() for t in pc.unique(raw).to_pylist()} - MISSING_TOKENS
            if new is not None and not numeric and any(not is_number(v) for v in new):
                cat[c] = True
            if new is None or vals[c] is None:
                if cat[c]:
                    raise Fallback("a categorical column with too many values")
                vals[c] = None
                continue
            vals[c] |= new
            if len(vals[c]) > max_categories:
                if cat[c]:
                    raise Fallback("a categorical column with too many values")
                vals[c] = None
        checked = True
    out = {c: vals[c] for c in columns if cat[c]}
    if any('"' in v for s in out.values() for v in s):
        raise Fallback("a quote after spaces")
    return out
