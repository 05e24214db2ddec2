"""Reading an input file: decompression by extension, line iteration with line
numbers for error messages, and a progress bar on a terminal."""
from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import sys
import time
import zlib
from typing import Iterator, Optional

from ...errors import InputError
from .common import PathLike

# Opened on the raw file object, so progress can follow the compressed bytes read.
_DECOMPRESSORS = {
    ".gz": lambda raw: gzip.GzipFile(fileobj=raw, mode="rb"),
    ".bz2": lambda raw: bz2.BZ2File(raw, mode="rb"),
    ".xz": lambda raw: lzma.LZMAFile(raw, mode="rb"),
}
_READ_ERRORS = (OSError, EOFError, lzma.LZMAError, zlib.error)


class _Source:
    """A text input file, decompressed by extension, read line by line."""

    def __init__(self, path: PathLike, newline: Optional[str] = None, encoding: Optional[str] = None):
        self.name = os.fspath(path)
        self.encoding = encoding
        if not os.path.exists(self.name):
            raise InputError(f"{self.name}: no such file")
        if os.path.isdir(self.name):
            raise InputError(f"{self.name}: is a directory, not a file")
        if not os.path.isfile(self.name):
            # a FIFO or device would block or never end
            raise InputError(f"{self.name}: not a regular file (a FIFO, device or socket)")
        self.size = os.path.getsize(self.name)
        try:
            self._raw = open(self.name, "rb")
        except OSError as exc:
            raise InputError(f"{self.name}: cannot open ({exc.strerror or exc})") from None
        opener = _DECOMPRESSORS.get(os.path.splitext(self.name)[1].lower())
        binary = opener(self._raw) if opener else self._raw
        # utf-8-sig drops a byte-order mark (spreadsheet exports). With an ``encoding`` (tables: their names
        # matter) undecodable bytes are an error naming the line; without one (review texts, LIBSVM) they
        # become U+FFFD, which a number never contains, so a bad value still fails with its line number.
        if encoding is not None:
            try:
                self.text = io.TextIOWrapper(binary, encoding=encoding, errors="strict", newline=newline)
            except LookupError:
                self._raw.close()
                raise InputError(f"--encoding {encoding!r}: not an encoding Python knows (e.g. utf-8, latin-1, "
                                 "cp1252)") from None
        else:
            self.text = io.TextIOWrapper(binary, encoding="utf-8-sig", errors="replace", newline=newline)
        self.lines_read = 0
        self.progress: Optional["_Progress"] = None

    def lines(self) -> Iterator[str]:
        """The file's lines; a corrupt compressed stream is an InputError."""
        try:
            for line in self.text:
                self.lines_read += 1
                if self.progress is not None and not self.lines_read & 0xFFF:
                    self.progress.update()
                if "\0" in line:
                    raise InputError(f"{self.name}:{self.lines_read}: a NUL byte: this is not a text file")
                yield line
        except UnicodeDecodeError as exc:
            bad = exc.object[exc.start:exc.start + 4]
            # The failed chunk continues line lines_read + 1 (the lines before it were all yielded); the bad
            # byte lies as many lines further as the chunk has line ends before it.
            line = self.lines_read + 1 + bytes(exc.object[:exc.start]).count(b"\n")
            raise InputError(
                f"{self.name}:{line}: bytes {bad!r} are not {self.encoding} text; give the file's "
                "encoding, e.g. --encoding latin-1 (or cp1252 for spreadsheet exports)"
            ) from None
        except _READ_ERRORS as exc:
            raise InputError(
                f"{self.name}:{self.lines_read + 1}: cannot read or decompress ({exc}); "
                "is the file truncated or corrupt?"
            ) from None

    def tell(self) -> int:
        try:
            return self._raw.tell()
        except (OSError, ValueError):
            return 0

    def close(self) -> None:
        self.text.close()  # closes the decompressor, which leaves the raw file open
        self._raw.close()

    def __enter__(self) -> "_Source":
        return self

    def __exit__(self, *exc) -> None:
        self.close()



class _Progress:
    """A tqdm bar over the input bytes, only when stderr is a terminal.

    The bar appears only once a pass has run for a second, so short
    conversions stay quiet even on a terminal (tqdm's own ``delay`` needs a
    newer tqdm than the package requires).
    """

    DELAY = 1.0

    def __init__(self, src: _Source, desc: str):
        self.src = src
        self.desc = desc
        self.bar = None
        self.start = time.perf_counter()
        self.enabled = sys.stderr.isatty()
        if self.enabled:
            src.progress = self

    def update(self) -> None:
        if self.bar is None:
            if time.perf_counter() - self.start < self.DELAY:
                return
            from tqdm import tqdm

            self.bar = tqdm(
                total=self.src.size, desc=self.desc, unit="B", unit_scale=True, leave=False, file=sys.stderr
            )
        self.bar.update(max(0, self.src.tell() - self.bar.n))

    def __enter__(self) -> "_Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.src.progress = None
        if self.bar is not None:
            self.bar.close()

