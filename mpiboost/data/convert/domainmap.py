"""``--domain-map``: text values of a domain column to domain ids.

Syntax: groups separated by ``;``, each ``VALUE,VALUE,...=NAME``. The values of
a group (compared after stripping spaces) all become one domain named NAME;
the domain ids are 0, 1, ... in the order the groups are listed. ``*`` as a
value catches every value no other group lists. A group of one value may
leave out ``=NAME`` (the value is the name). Example (UCI Adult, education)::

    Bachelors,Masters,Doctorate,Prof-school=university;HS-grad=hs;*=other
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ... import log
from ...errors import InputError
from .common import _Retry

_CACHE_MAX = 10_000


class _DomainMap:
    """A parsed ``--domain-map``; maps tokens to ids, remembering the values used."""

    def __init__(self, spec: str):
        self.spec = spec
        self.names: list[str] = []
        self.ids: dict[str, int] = {}
        self.star: Optional[int] = None
        groups = [g.strip() for g in spec.split(";") if g.strip()]  # a trailing ';' is fine
        if not groups:
            raise InputError(f"--domain-map {spec!r}: no groups (expected 'V1,V2=NAME;V3=NAME2;*=OTHER')")
        for g in groups:
            values_text, eq, name = g.rpartition("=")
            if not eq:
                values_text, name = g, ""
            values = [v.strip() for v in values_text.split(",")]
            name = name.strip()
            if any(not v for v in values):
                raise InputError(
                    f"--domain-map {spec!r}: empty value in group {g!r} "
                    "(groups are separated by ';', values by ',', and '=NAME' names the group)"
                )
            if not name:
                if len(values) != 1:
                    raise InputError(f"--domain-map {spec!r}: group {g!r} has several values; name it with '=NAME'")
                name = values[0]
            if name in self.names:
                raise InputError(f"--domain-map {spec!r}: domain name {name!r} is used twice")
            k = len(self.names)
            self.names.append(name)
            for v in values:
                if v == "*":
                    if self.star is not None:
                        raise InputError(f"--domain-map {spec!r}: '*' appears twice")
                    self.star = k
                elif v in self.ids:
                    raise InputError(f"--domain-map {spec!r}: value {v!r} is in two groups")
                else:
                    self.ids[v] = k
        self.used: set[str] = set()
        self._cache: dict[str, int] = {}

    def lookup(self, token: str) -> Optional[int]:
        """Domain id of ``token``, or None when no group takes it."""
        s = token.strip()
        k = self.ids.get(s)
        if k is not None:
            self.used.add(s)
        else:
            k = self.star
        if k is not None and len(self._cache) < _CACHE_MAX:
            self._cache[token] = k
        return k

    def map_all(self, tokens: Sequence[str]) -> np.ndarray:
        """Ids of ``tokens``; raises ``_Retry`` if one is unmapped (the row checks name it)."""
        cache = self._cache
        try:
            out = [cache[t] for t in tokens]
        except KeyError:
            out = [cache[t] if t in cache else self.lookup(t) for t in tokens]
            if None in out:
                raise _Retry from None
        return np.asarray(out, dtype=np.int32)

    def unmapped_message(self, column: str, token: str) -> str:
        listed = ", ".join(repr(v) for v in list(self.ids)[:12]) + (", ..." if len(self.ids) > 12 else "")
        what = f"value '{token.strip()}'" if token.strip() else "an empty value"
        return (
            f"domain column {column}: {what} is in no group of --domain-map (listed: {listed}); "
            "add it to a group, or add a '*=NAME' group for every other value"
        )

    def warn_unused(self) -> None:
        unused = [v for v in self.ids if v not in self.used]
        if unused:
            log.warning(
                "--domain-map values never found in the domain column: "
                + ", ".join(repr(v) for v in unused),
            )
