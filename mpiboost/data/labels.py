"""Labels as users have them: class lists, their canonical order, internal codes.

A data file's ``y`` is an integer dataset. If the file has the attribute
``classes`` (a JSON list of label values, numbers or strings), ``y[i]`` is an
index into that list; otherwise the integers in ``y`` are the labels
themselves (``-1/+1``, ``0/1``, ``1..7`` ...). Either way a row's *label
value* is a number or a string, and a training run's **class list** is the
union of the values of its rows in canonical order: numbers ascending, or
strings by code point (a run whose labels mix numbers and strings is an
error). Class ``k`` of a run is the k-th value of that list; the model stores
the list, and ``predict``/``evaluate`` answer in its values.

Internally a binary run (two classes) labels its rows ``-1`` (the first
class) and ``+1`` (the second): ``-1/+1``, ``0/1`` and ``"neg"/"pos"`` give
the same codes, hence the same model. A multiclass run uses the class
indices ``0..K-1``.
"""
from __future__ import annotations

import json
import math
from typing import Iterable, Optional, Sequence, Union

import numpy as np

Label = Union[int, float, str]

MAX_CLASSES = 256  # most classes of one run (a multiclass histogram holds d x 256 x K sums)
CLASSES_ATTR = "classes"  # the file attribute naming the values that y indexes
# Longest ``classes`` JSON text parsed: MAX_CLASSES labels of up to 64 KiB
# each. Parsing costs several times the text in memory, so a longer
# attribute (necessarily not a class list) is refused before it is parsed.
MAX_CLASSES_TEXT = MAX_CLASSES << 16


def is_number(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def plain(v) -> Label:
    """A label value as a plain Python int, float or str (integral floats become ints)."""
    if isinstance(v, (bytes, np.bytes_)):
        v = v.decode()
    if isinstance(v, (str, np.str_)):
        return str(v)
    if isinstance(v, (bool, np.bool_)):
        raise ValueError(f"label {v!r}: a boolean is not a label value")
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if not math.isfinite(f):
            raise ValueError(f"label {v!r} is not finite")
        return int(f) if f.is_integer() and abs(f) < 2**53 else f
    raise ValueError(f"label {v!r} is neither a number nor a string")


def canonical(values: Iterable) -> list:
    """The distinct label values in canonical order (numbers ascending, or strings by code point)."""
    vals = {plain(v) for v in values}
    numbers = [v for v in vals if not isinstance(v, str)]
    if numbers and len(numbers) != len(vals):
        texts = sorted(v for v in vals if isinstance(v, str))
        raise ValueError(
            f"the labels mix numbers ({', '.join(map(str, sorted(numbers)[:3]))}) and text "
            f"({', '.join(repr(t) for t in texts[:3])}): give every file its labels in one form"
        )
    return sorted(vals)


def parse_token(token: str) -> Label:
    """A label as written in a text file: a number if it reads as one, else the (stripped) text."""
    text = token.strip()
    try:
        f = float(text)
    except ValueError:
        return text
    if not math.isfinite(f):
        return text
    return plain(f)


def classes_from_tokens(tokens: Sequence[str]) -> tuple[list, np.ndarray]:
    """Class list and per-token class index for the distinct label tokens of a text file.

    If every token reads as a number the labels are numbers (``"1"``, ``"+1"``
    and ``"1.0"`` are one class); otherwise every label is its text.
    Returns ``(classes, index)`` with ``classes[index[t]]`` the value of ``tokens[t]``.
    """
    parsed = [parse_token(t) for t in tokens]
    if any(isinstance(v, str) for v in parsed):
        parsed = [t.strip() for t in tokens]
    classes = canonical(parsed)
    pos = {v: k for k, v in enumerate(classes)}
    return classes, np.array([pos[v] for v in parsed], dtype=np.int64)


def stores_as_values(classes: Sequence[Label]) -> bool:
    """True if ``y`` can hold the labels themselves (all integers of int32): no ``classes`` attribute needed."""
    return all(isinstance(v, int) and -(2**31) <= v < 2**31 for v in classes)


def y_dtype(classes: Sequence[Label]) -> np.dtype:
    """The smallest integer dtype for ``y``: the values (see :func:`stores_as_values`) or indices."""
    if stores_as_values(classes):
        lo, hi = (min(classes), max(classes)) if classes else (0, 0)
    else:
        lo, hi = 0, len(classes) - 1
    for t in (np.int8, np.int16, np.int32):
        if np.iinfo(t).min <= lo and hi <= np.iinfo(t).max:
            return np.dtype(t)
    return np.dtype(np.int64)


def encode_attr(classes: Sequence[Label]) -> str:
    """The ``classes`` attribute: a JSON list."""
    return json.dumps([plain(v) for v in classes], ensure_ascii=False)


def decode_attr(raw, where: str, name: str = "attribute 'classes'") -> list:
    """Parse and check a class list: a ``classes`` attribute or a model header's ``classes``.

    Parameters
    ----------
    raw : str, bytes, list or ndarray
        The JSON text of a list of label values, or the list itself.
    where : str
        The file, for the messages.
    name : str
        What ``raw`` is, for the messages.

    Returns
    -------
    list
        Between 1 and :data:`MAX_CLASSES` distinct plain label values (see
        :func:`plain`), all numbers or all strings.

    Raises
    ------
    ValueError
        Naming ``where`` and ``name``.
    """
    if isinstance(raw, (bytes, np.bytes_)):
        try:
            raw = raw.decode()
        except UnicodeDecodeError as exc:
            raise ValueError(f"{where}: {name} is not UTF-8 text ({exc})") from None
    if isinstance(raw, np.ndarray):
        raw = raw.tolist()
    if isinstance(raw, str):
        if len(raw) > MAX_CLASSES_TEXT:
            raise ValueError(f"{where}: {name} is {len(raw):,} characters long (at most {MAX_CLASSES_TEXT:,})")
        try:
            raw = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            raise ValueError(f"{where}: {name} is not a JSON list ({exc})") from None
    if not isinstance(raw, list) or not raw:
        raise ValueError(f"{where}: {name} must be a non-empty list of label values")
    if len(raw) > MAX_CLASSES:
        raise ValueError(f"{where}: {name} lists {len(raw)} classes (at most {MAX_CLASSES})")
    try:
        values = [plain(v) for v in raw]
        canonical(values)
    except ValueError as exc:
        raise ValueError(f"{where}: {name}: {exc}") from None
    if len(set(values)) != len(values):
        raise ValueError(f"{where}: {name} lists a value twice")
    return values


def values_of(y: np.ndarray, file_classes: Optional[Sequence[Label]]) -> list:
    """The distinct label values of rows ``y`` of a file (``file_classes``: its ``classes`` attribute)."""
    u = np.unique(np.asarray(y))
    if file_classes is None:
        return [int(v) for v in u]
    return [file_classes[int(i)] for i in u if 0 <= i < len(file_classes)]


def lookup(y: np.ndarray, file_classes: Optional[Sequence[Label]], classes: Sequence[Label]) -> np.ndarray:
    """Class index (into ``classes``) of every row ``y`` of a file; -1 where the value is not a class.

    Rows of a file with a ``classes`` attribute whose index is out of range get -2.
    """
    y = np.asarray(y)
    if file_classes is not None:
        pos = {v: k for k, v in enumerate(classes)}
        table = np.array([pos.get(v, -1) for v in file_classes] + [-2], dtype=np.int32)
        idx = np.where((y >= 0) & (y < len(file_classes)), y, len(file_classes)).astype(np.intp)
        return table[idx]
    ints = [v for v in classes if isinstance(v, int)]
    if len(ints) != len(classes):
        return np.full(y.shape, -1, dtype=np.int32)  # text classes: no integer is one
    ref = np.asarray(ints, dtype=np.int64)
    at = np.searchsorted(ref, y.astype(np.int64))
    at_c = np.minimum(at, max(len(ref) - 1, 0))
    hit = (at < len(ref)) & (ref[at_c] == y) if len(ref) else np.zeros(y.shape, dtype=bool)
    return np.where(hit, at_c, -1).astype(np.int32)


def signed(index: np.ndarray) -> np.ndarray:
    """Binary codes: class 0 -> -1, class 1 -> +1 (int8); -1 (not a class) -> 0, which no prediction equals."""
    index = np.asarray(index)
    return np.where(index == 1, 1, np.where(index == 0, -1, 0)).astype(np.int8)


def text(v: Label) -> str:
    """A label value as a JSON object key / CSV field."""
    return str(v)


def as_array(classes: Sequence[Label]) -> np.ndarray:
    """The class values as a numpy array (int64, float64 or unicode), for predictions."""
    if all(isinstance(v, int) for v in classes):
        return np.asarray(classes, dtype=np.int64)
    if all(is_number(v) for v in classes):
        return np.asarray(classes, dtype=np.float64)
    return np.asarray([str(v) for v in classes])
