"""The ``mpiboost`` command line with probes: what the product did, seen from outside it.

The reliability tests run ``python tests/probe.py ARGS`` where a user runs
``mpiboost ARGS``. It is the real command (``mpiboost.cli.main``), with the
entries of real work wrapped so that they report themselves on stdout, one
flushed line each, prefixed with ``PROBE rank R:`` (R: the launcher's rank):

* ``work started (WHAT)``: the first read of a data file (schema, fingerprint,
  rows), a synthetic data set generated or a conversion begun: a refused run
  must never print it;
* ``round T``: each boosting round (its metrics computed, before the callbacks
  see it);
* ``watchdog on S`` / ``watchdog off``: what the command started;
* ``exit C, MPI started yes|no``: the command returned C (an agreed error
  returns on every rank; an abort never gets here), and whether mpi4py's MPI
  (MPI_Init) was ever imported.

Faults and pauses the tests need, from the environment:

* ``PROBE_FSIZE=BYTES``: RLIMIT_FSIZE of the process from just after MPI_Init
  (the MPI library sizes its shared-memory files there): from then on a write
  past BYTES in any file fails with EFBIG, as on a full disk (Python ignores
  SIGXFSZ);
* ``PROBE_GATE=DIR:K1,K2,...``: rank 0 stops at the end of round K (before the
  callbacks see it), writes ``DIR/reached-K`` and waits, making progress, until
  ``DIR/go-K`` exists; with ``PROBE_GATE_HEARTBEATS=H`` it also waits until its
  watchdog has sent H heartbeats;
* ``PROBE_SIGNAL=R:K1,K2,...``: rank R (``all``: every rank) sends itself SIGTERM at the end of its K-th
  round (counted over every round loop of the process: a selection phase's candidates too), as a
  scheduler's signal arriving then; ``K = start``: while MPI starts (before the command's own setup);
* ``PROBE_STALL=R:S``: rank R, once its watchdog runs, makes progress for S
  seconds, then stops (sleeps for ever outside MPI, as a rank stuck in I/O).

Importing this module (``run``, ``lines``) patches nothing: only running it does.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Optional, Sequence

HERE = Path(__file__).resolve()
PREFIX = "PROBE rank "


def command(args: Sequence[str]) -> list[str]:
    return [sys.executable, str(HERE), *[str(a) for a in args]]


def run(args: Sequence[str], *, n: int = 0, timeout: float = 180, env: Optional[dict] = None, cwd=None):
    """``mpiboost ARGS`` through the probe, as one process (``n == 0``) or under ``mpiexec -n n``."""
    from mpi_util import mpi_env, run_mpi

    if n:
        return run_mpi(n, command(args), timeout=timeout, env=env, cwd=cwd)
    return subprocess.run(command(args), capture_output=True, text=True, timeout=timeout, env=mpi_env(env), cwd=cwd)


_LINE = re.compile(r"PROBE (rank \d+: .*?)(?=PROBE rank |\n|$)")


def lines(stdout: str, what: str = "") -> list[str]:
    """The probe's lines (``rank R: ...``) that contain ``what`` (the launcher may run two ranks' lines together)."""
    return [m.group(1) for m in _LINE.finditer(stdout) if what in m.group(1)]


def worked(stdout: str) -> bool:
    """True if any rank started real work (read data, generated, converted, ran a round)."""
    return bool(lines(stdout, ": work started") or lines(stdout, ": round "))


def exits(stdout: str) -> dict:
    """``{rank: (exit code, MPI started)}`` of the ranks whose command returned."""
    out = {}
    for ln in lines(stdout, ": exit "):
        head, tail = ln.split(": exit ", 1)
        code, started = tail.split(", MPI started ")
        out[int(head.split()[1])] = (int(code), started.strip() == "yes")
    return out


# ---------------------------------------------------------------- in the probe
def _rank() -> int:
    from mpiboost.cli import launch_rank

    return launch_rank()


def _say(text: str) -> None:
    sys.stdout.write(f"{PREFIX}{_rank()}: {text}\n")  # one write: a line of its own
    sys.stdout.flush()


_state = {"worked": False, "heartbeats": 0, "round": 0}


def _work(what: str, func):
    def wrapper(*args, **kwargs):
        if not _state["worked"]:
            _state["worked"] = True
            _say(f"work started ({what})")
        return func(*args, **kwargs)

    wrapper.__wrapped__ = func
    return wrapper


def _rebind(original, replacement) -> None:
    """Replace ``original`` wherever an mpiboost module holds it (``from x import f`` copies included)."""
    for name, mod in list(sys.modules.items()):
        if not name.startswith("mpiboost") or mod is None:
            continue
        for attr, value in list(vars(mod).items()):
            if value is original:
                setattr(mod, attr, replacement)


def _gate(t: int) -> None:
    spec = os.environ.get("PROBE_GATE")
    if not spec or _rank() != 0:
        return
    folder, rounds = spec.rsplit(":", 1)
    if str(t) not in rounds.split(","):
        return
    import time

    from mpiboost import watchdog

    want = int(os.environ.get("PROBE_GATE_HEARTBEATS") or 0)
    Path(folder, f"reached-{t}").write_text(str(t))
    go = Path(folder, f"go-{t}")
    deadline = time.monotonic() + 600  # a hang guard only: the test opens the gate in a second
    while time.monotonic() < deadline and not (go.exists() and _state["heartbeats"] >= want):
        watchdog.tick()  # waiting for the test is not a stall
        time.sleep(0.02)


def _install() -> None:
    import importlib
    import pkgutil

    import mpiboost
    from mpiboost.driver import rounds as train_mod  # the rounds' loop calls round_metrics from there
    from mpiboost import watchdog
    from mpiboost.cli import convert as convert_cli
    from mpiboost.data import convert, fingerprint, format as fmt, load, synth

    for sub in ("mpiboost.cli", "mpiboost.cli.train", "mpiboost.cli.online", "mpiboost.evaluate",
                "mpiboost.driver.online"):
        importlib.import_module(sub)
    for info in pkgutil.iter_modules(convert.__path__, convert.__name__ + "."):
        importlib.import_module(info.name)

    for mod, name, what in [
        (fmt, "inspect", "data file schema"),
        (fmt, "summarize", "data file summary"),
        (fingerprint, "fingerprint_file", "data fingerprint"),
        (load, "load", "data rows"),
        (load, "load_raw", "data rows"),
        (convert_cli, "run", "conversion"),
    ]:
        original = getattr(mod, name)
        _rebind(original, _work(what, original))
    for gen in synth.NAMES:
        m = synth.module(gen)
        m.generate = _work("synthetic data", m.generate)

    limit = os.environ.get("PROBE_FSIZE")
    if limit:
        # The MPI library's own shared-memory files are sized at MPI_Init: the limit (the "full disk")
        # comes right after it, before the command checks or writes anything.
        from mpiboost import comm as comm_mod

        mpi = comm_mod._mpi

        def limited():
            started = comm_mod._MPI is not None
            out = mpi()
            if not started:
                _fsize(int(limit))
            return out

        _rebind(mpi, limited)

    spec = os.environ.get("PROBE_SIGNAL", "")
    if "start" in spec.partition(":")[2].split(","):
        from mpiboost import comm as comm_mod

        starting = comm_mod._mpi

        def signalled():
            rank = spec.partition(":")[0]
            if comm_mod._MPI is None and (rank == "all" or int(rank) == _rank()):
                import signal

                _say("SIGTERM while MPI starts")
                os.kill(os.getpid(), signal.SIGTERM)
            return starting()

        _rebind(starting, signalled)

    round_metrics = train_mod.round_metrics

    def rounds(t, *args, **kwargs):
        out = round_metrics(t, *args, **kwargs)
        _state["worked"] = True
        _say(f"round {t}")
        _state["round"] += 1
        _signal(_state["round"])
        _gate(t)
        return out

    train_mod.round_metrics = rounds

    state = watchdog.Watchdog._state

    def counted(self):
        _state["heartbeats"] += 1
        return state(self)

    watchdog.Watchdog._state = counted

    start = watchdog.start

    def started(*args, **kwargs):
        w = start(*args, **kwargs)
        _say(f"watchdog on {w.timeout:g}" if w is not None else "watchdog off")
        _stall()
        return w

    watchdog.start = started
    assert "mpi4py.MPI" not in sys.modules, "the probe itself must not start MPI"
    del mpiboost


def _fsize(limit: int) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def _signal(count: int) -> None:
    spec = os.environ.get("PROBE_SIGNAL")
    if not spec:
        return
    rank, counts = spec.split(":")
    if (rank == "all" or int(rank) == _rank()) and str(count) in counts.split(","):
        import signal

        _say(f"SIGTERM at round call {count}")
        os.kill(os.getpid(), signal.SIGTERM)


def _stall() -> None:
    spec = os.environ.get("PROBE_STALL")
    if not spec:
        return
    rank, seconds = spec.split(":")
    if int(rank) != _rank():
        return
    import time

    from mpiboost import watchdog

    end = time.monotonic() + float(seconds)
    while time.monotonic() < end:  # healthy at first: ticking, while the others wait in a collective
        watchdog.tick()
        time.sleep(0.02)
    _say("stuck")
    while True:  # then stuck outside MPI, as in a hung read
        time.sleep(3600)


def main() -> int:
    _install()
    from mpiboost.cli import main as cli_main

    code = cli_main()
    _say(f"exit {code}, MPI started {'yes' if 'mpi4py.MPI' in sys.modules else 'no'}")
    return code


if __name__ == "__main__":
    if sys.path and Path(sys.path[0]).resolve() == HERE.parent:
        del sys.path[0]  # the tests' helper modules are not the product's
    sys.exit(main())
