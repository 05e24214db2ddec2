"""The algorithms page of the docs, generated from the registry's declarations.

``python -m mpiboost.doc`` writes ``docs/algorithms.md`` (the tests check that
the committed page is the generated one, so it cannot drift from the code).
"""
from __future__ import annotations

from .param import SAME

import sys
from pathlib import Path

HEADER = """# Algorithms and their options

This page is generated from the algorithms' declarations
(`python -m mpiboost.doc` writes it; do not edit it by hand). Every option below
is an option of `mpiboost train --algo NAME`; `mpiboost train --algo NAME --help`
lists the same. Tasks: **binary** (two classes), **multiclass** (more than two),
**multi-domain** (rows from several domains: one file per domain or a `domain`
column), **transfer** (a target domain and source domains: `--target T.h5
--source S.h5 ...`).
"""


def _cell(v) -> str:
    if v is None:
        return "unset"
    if isinstance(v, bool):
        return "off" if not v else "on"
    if isinstance(v, list):
        return "none" if not v else ", ".join(map(str, v))
    return f"`{v}`"


def algorithms_markdown() -> str:
    """The page, as Markdown."""
    from .boost import ALGORITHMS

    out = [HEADER, "## Overview", "",
           "| algorithm | tasks | labels | weak learners | losses | raw features | learners per round | what it is |",
           "|---|---|---|---|---|---|---|---|"]
    for name, cls in ALGORITHMS.items():
        out.append(
            f"| `{name}` | {', '.join(cls.tasks)} | {'-1/+1' if cls.labels == 'signed' else 'class indices'} | "
            f"{', '.join(cls.weak_learners)} | {', '.join(cls.losses)} | "
            f"{'yes' if cls.needs_raw else 'no'} | {'several' if cls.multi_stump_rounds else 'one'} | {cls.summary} |"
        )
    options = []
    for cls in ALGORITHMS.values():
        for p in cls.parameters:
            if p.cli and p.flag not in options:
                options.append(p.flag)
    names = list(ALGORITHMS)
    out += ["", "## Options by algorithm", "",
            "Each cell is the option's default for that algorithm, and after a slash the paper's value where it "
            "differs (what `--preset paper` takes); an empty cell: not an option of that algorithm "
            "(giving it is an error, exit code 2).", "",
            "| option | " + " | ".join(f"`{n}`" for n in names) + " |",
            "|---|" + "---|" * len(names)]
    for flag in options:
        row = []
        for cls in ALGORITHMS.values():
            p = next((q for q in cls.parameters if q.cli and q.flag == flag), None)
            row.append("" if p is None else _cell(p.default) + ("" if p.paper is SAME else f" / {_cell(p.paper)}"))
        out.append(f"| `{flag}` | " + " | ".join(row) + " |")
    for name, cls in ALGORITHMS.items():
        caps = [c for c, on in (("needs a target and sources", cls.needs_target),
                                ("no --best-round / --early-stop: the final vote depends on every round",
                                 not cls.curve_scores_model),
                                ("a model of no vote is a failed run", cls.empty_model_fails),
                                ("makes choices of its own on the validation rows (the baseline guard trains it "
                                 "once per half of them)", cls.chooses_on_valid)) if on]
        out += ["", f"## `{name}`", "", cls.summary + ".", "", f"From: {cls.paper}.", "",
                f"Tasks: {', '.join(cls.tasks)}; vote: {cls.vote}" + (f"; {'; '.join(caps)}" if caps else "") + ".",
                "", "Sample weights: " + (cls.weight_rule + "." if cls.weight_rule else "not taken (a file with a "
                                          "'weight' dataset exits 2)."),
                "", "Options marked *beyond* are mpiboost's own, beyond the paper.", "",
                "| option | type | default | allowed | what it does |", "|---|---|---|---|---|"]
        for p in cls.parameters:
            if not p.cli:
                continue
            kind = "flag" if p.type is bool else ("files" if p.type is list else p.type.__name__)
            allowed = p.range_text()
            if p.when is not None:
                other = cls.declared(p.when[0])
                allowed = (allowed + "; " if allowed else "") + f"only with `{other.flag} {p.when[1]}`"
            beyond = " *(beyond)*" if p.origin == "beyond" else ""
            default = _cell(p.default) + ("" if p.paper is SAME else f" (paper: {_cell(p.paper)})")
            out.append(f"| `{p.flag}`{beyond} | {kind} | {default} | {allowed} | {p.help} |")
    return "\n".join(out + _online_markdown()) + "\n"


ONLINE_HEADER = """# Online algorithms

An online booster makes one prequential pass over a stream: every example is
predicted, then learnt. `--data` gives the stream (the files' rows in order, or
`--shuffle SEED`'s permutation); there is no `--rounds`. The weak learners are
online naive-Bayes-adaptive leaves (naive Bayes, or the majority class, whichever
has been right more often). The run prints a JSON summary line (`acc_test`: the
accuracy of the randomised predictions on the last `--test-fraction` of the
stream; `acc_all`; `exp_test`: the mean probability of the true class;
`argmax_test`: the deterministic rule) and saves a model that `predict`,
`evaluate` and `export` read."""


def _online_markdown() -> list:
    from .online import ONLINE
    if not ONLINE:
        return []
    out = ["", ONLINE_HEADER, "", "| algorithm | tasks | what it is |", "|---|---|---|"]
    out += [f"| `{name}` | {', '.join(cls.tasks)} | {cls.summary} |" for name, cls in ONLINE.items()]
    from .online.options import STREAM_PARAMS

    out += ["", "## Stream options (every online algorithm)", "", "| option | type | default | allowed | what it does |",
            "|---|---|---|---|---|"]
    for p in STREAM_PARAMS:
        allowed = p.range_text()
        if p.when is not None:
            allowed = (allowed + "; " if allowed else "") + f"only with `--{p.when[0].replace('_', '-')} {p.when[1]}`"
        beyond = " *(beyond)*" if p.origin == "beyond" else ""
        out.append(f"| `{p.flag}`{beyond} | {p.type.__name__} | {_cell(p.default)} | {allowed} | {p.help} |")
    out.append("| `--predictions` | path | | | write every example's prequential predictions: position, row (in "
               "the files), label, randomised prediction, argmax (command line only) |")
    for name, cls in ONLINE.items():
        out += ["", f"## `{name}`", "", cls.summary + ".", "", f"From: {cls.paper}.", "",
                "| option | type | default | allowed | what it does |", "|---|---|---|---|---|"]
        for p in cls.parameters:
            out.append(f"| `{p.flag}` | {p.type.__name__} | {_cell(p.default)} | {p.range_text()} | {p.help} |")
    return out


def main() -> int:
    root = Path(__file__).resolve().parent.parent
    target = root / "docs" / "algorithms.md"
    if len(sys.argv) > 1:
        target = Path(sys.argv[1])
    from .atomic import atomic_path

    with atomic_path(target) as tmp:
        Path(tmp).write_text(algorithms_markdown(), encoding="utf-8")
    print(target)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
