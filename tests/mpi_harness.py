"""Run test modules under ``mpiexec -n K python -m pytest`` and trust the verdict.

The parent test (plain pytest) launches K ranks of pytest over the same
modules. Inside that job every rank loads :class:`RankReporter` (registered
by ``conftest.py`` when ``MPIBOOST_COLLECTIVE_RUN=1``), which

* checks that the world really has K ranks (a launcher that starts K
  singletons, each rank 0 of 1, would otherwise pass K times over);
* counts what it collected and each outcome, and writes them to
  ``rank-R.json`` in the report folder, at the end of the session and
  before anything else happens after a failure;
* on the first failed test of any rank prints the failure, prefixed with
  ``[rank R/K]``, to stderr and aborts the whole MPI job: the other ranks are
  most likely waiting for the failed rank in their next collective, and
  would sit there until the launch timeout.

:func:`run_collective` then reads every rank's report: each rank must exist,
see a world of K, have failed nothing and passed every test it collected.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from mpi_util import ROOT, run_mpi

REPORT_ENV = "MPIBOOST_COLLECTIVE_REPORT"
SIZE_ENV = "MPIBOOST_COLLECTIVE_SIZE"


class RankReporter:
    """pytest plugin of one rank of a collective run (see the module docstring)."""

    def __init__(self) -> None:
        from mpiboost.comm import _mpi

        self.MPI = _mpi()
        world = self.MPI.COMM_WORLD
        self.rank, self.size = world.Get_rank(), world.Get_size()
        self.folder = Path(os.environ[REPORT_ENV]) if os.environ.get(REPORT_ENV) else None
        self.counts = {"collected": 0, "passed": 0, "failed": 0, "skipped": 0, "errors": 0}
        self.failures: list = []
        expected = os.environ.get(SIZE_ENV)
        if expected is not None and int(expected) != self.size:
            # Not a test failure: the job itself is wrong (a launcher/MPI mismatch), so say so and stop.
            self._write(status="wrong world size")
            sys.stderr.write(f"[rank {self.rank}/{self.size}] expected a world of {expected} ranks, "
                             f"MPI says {self.size}: mpiexec and mpi4py are not the same MPI?\n")
            sys.stderr.flush()
            os._exit(3)

    # -------------------------------------------------------------- hooks
    def pytest_collection_finish(self, session) -> None:
        self.counts["collected"] = len(session.items)
        self._write(status="running")

    def pytest_collectreport(self, report) -> None:
        if report.failed:
            self.counts["errors"] += 1
            self._fail(report)

    def pytest_runtest_logreport(self, report) -> None:
        if report.when == "call" and report.passed:
            self.counts["passed"] += 1
        elif report.skipped:
            self.counts["skipped"] += 1
        elif report.failed:
            self.counts["failed" if report.when == "call" else "errors"] += 1
            self._fail(report)

    def pytest_sessionfinish(self, session, exitstatus) -> None:
        self._write(status="finished", exitstatus=int(exitstatus))

    # ------------------------------------------------------------ helpers
    def _fail(self, report) -> None:
        text = f"{report.nodeid} ({report.when})\n{report.longreprtext}"
        self.failures.append(text)
        self._write(status="failed")
        prefix = f"[rank {self.rank}/{self.size}] "
        sys.stderr.write("".join(prefix + line + "\n" for line in ("FAILED " + text).splitlines()))
        sys.stderr.flush()
        sys.stdout.flush()
        from mpiboost.watchdog import OUTPUT_GRACE

        time.sleep(OUTPUT_GRACE)  # the launcher forwards the message before the abort ends the job
        self.MPI.COMM_WORLD.Abort(1)

    def _write(self, **extra) -> None:
        if self.folder is None:
            return
        if self.failures and extra.get("status") == "finished":
            extra["status"] = "failed"  # a failed rank's report says so, whatever ran after the failure
        doc = {"rank": self.rank, "size": self.size, **self.counts, "failures": self.failures, **extra}
        tmp = self.folder / f".rank-{self.rank}.json.tmp"
        tmp.write_text(json.dumps(doc), encoding="utf-8")
        os.replace(tmp, self.folder / f"rank-{self.rank}.json")


@dataclass
class CollectiveRun:
    """What a collective run left: the launcher's result and every rank's report."""

    returncode: int
    stdout: str
    stderr: str
    reports: dict  # rank -> its report (dict), for the ranks that wrote one

    def explain(self) -> str:
        lines = [f"exit code {self.returncode}"]
        for r in sorted(self.reports):
            rep = self.reports[r]
            lines.append(f"rank {r}: world {rep['size']}, collected {rep['collected']}, passed {rep['passed']}, "
                         f"failed {rep['failed']}, errors {rep['errors']}, skipped {rep['skipped']}, "
                         f"{rep.get('status')}")
            lines += rep["failures"][:1]
        return "\n".join(lines) + "\n--- stderr (tail) ---\n" + self.stderr[-4000:]


def launch(n: int, paths: Sequence[str], *, extra: Sequence[str] = (), timeout: float = 300,
           env: Optional[dict] = None) -> CollectiveRun:
    """``mpiexec -n n python -m pytest -q -x PATHS`` with every rank reporting to a fresh folder."""
    with tempfile.TemporaryDirectory(prefix="mpiboost-collective-") as folder:
        cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *extra, *paths]
        proc = run_mpi(n, cmd, timeout=timeout, cwd=str(ROOT),
                       env={"MPIBOOST_COLLECTIVE_RUN": "1", REPORT_ENV: folder, SIZE_ENV: str(n), **(env or {})})
        reports = {}
        for path in Path(folder).glob("rank-*.json"):
            doc = json.loads(path.read_text(encoding="utf-8"))
            reports[int(doc["rank"])] = doc
    return CollectiveRun(proc.returncode, proc.stdout, proc.stderr, reports)


def run_collective(n: int, paths: Sequence[str], *, extra: Sequence[str] = (), timeout: float = 300,
                   env: Optional[dict] = None, allowed_skips: int = 0) -> CollectiveRun:
    """:func:`launch`, then assert that every one of the ``n`` ranks passed everything it collected."""
    run = launch(n, paths, extra=extra, timeout=timeout, env=env)
    why = run.explain()
    assert sorted(run.reports) == list(range(n)), "missing rank reports\n" + why
    for r, rep in run.reports.items():
        assert rep["size"] == n, f"rank {r} saw a world of {rep['size']}\n" + why
        assert rep["failed"] == 0 and rep["errors"] == 0, why
        assert rep["status"] == "finished" and rep.get("exitstatus") == 0, why
        assert rep["collected"] > 0 and rep["skipped"] <= allowed_skips, why
        assert rep["passed"] + rep["skipped"] == rep["collected"], why
    assert len({rep["passed"] for rep in run.reports.values()}) == 1, "ranks passed different tests\n" + why
    assert run.returncode == 0, why
    return run
