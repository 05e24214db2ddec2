"""The launch scripts (Slurm, PBS, EC2), run end to end outside their schedulers.

Each script falls back to a local ``mpiexec -n NP`` when it is not inside a
job of its scheduler; that path is run for real here. The scheduler paths are
exercised with a simulated job environment (PBS node file, a stand-in ``srun``)
and with a stand-in ``mpiexec`` that records its arguments, so the MPICH and
Open MPI command lines are both checked whatever MPI this machine has.
"""
from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from mpi_util import ROOT, flavour, mpi_env, mpiexec

SCRIPTS = ROOT / "scripts"
SLURM = SCRIPTS / "slurm" / "train.sbatch"
PBS = SCRIPTS / "pbs" / "train.pbs"
EC2 = SCRIPTS / "ec2" / "run.sh"
LIB = SCRIPTS / "lib" / "launch.sh"
ALL = [SLURM, PBS, EC2]
IDS = ["slurm", "pbs", "ec2"]
TIMEOUT = 120

BASH = shutil.which("bash")
pytestmark = pytest.mark.skipif(BASH is None, reason="bash not found")

_SCHEDULER_VARS = re.compile(r"^(SLURM_|SRUN_|SBATCH_|PBS_|MPIBOOST_)")


def script_env(extra: dict | None = None) -> dict:
    """A job environment with no scheduler in it and this interpreter as the mpiboost python."""
    env = {k: v for k, v in mpi_env().items() if not _SCHEDULER_VARS.match(k)}
    for var in ("HOSTFILE", "NP", "NCPUS"):
        env.pop(var, None)
    env["MPIBOOST_PYTHON"] = sys.executable
    if extra:
        env.update({k: str(v) for k, v in extra.items()})
    return env


def run_script(script, args=(), *, env=None, cwd=None, timeout=TIMEOUT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [BASH, str(script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=script_env(env),
        cwd=str(cwd or ROOT),
    )


def output(proc: subprocess.CompletedProcess) -> str:
    return proc.stdout + proc.stderr


def assert_doctor(proc: subprocess.CompletedProcess, n: int) -> None:
    text = output(proc)
    assert proc.returncode == 0, text
    assert f", {n} rank(s)," in proc.stdout, text
    assert "exact sum check: ok" in proc.stdout, text
    ranks = sorted(int(m) for m in re.findall(r"^rank\s+(\d+)\s+host", proc.stdout, flags=re.M))
    assert ranks == list(range(n)), text


def write_exe(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


# ------------------------------------------------------------ no MPI needed
def test_bash_syntax():
    for script in [*ALL, LIB]:
        proc = subprocess.run([BASH, "-n", str(script)], capture_output=True, text=True, timeout=30)
        assert proc.returncode == 0, f"{script}: {proc.stderr}"


@pytest.mark.parametrize("script", ALL, ids=IDS)
def test_help(script):
    proc = run_script(script, ["-h"], timeout=30)
    assert proc.returncode == 0, output(proc)
    assert proc.stdout.startswith("usage:"), proc.stdout
    assert "MPIBOOST_PYTHON" in proc.stdout


@pytest.mark.parametrize("script", ALL, ids=IDS)
def test_missing_python_is_reported(script, tmp_path):
    proc = run_script(script, ["doctor"], env={"MPIBOOST_PYTHON": tmp_path / "no-such-python"}, timeout=30)
    assert proc.returncode == 2
    assert "MPIBOOST_PYTHON" in proc.stderr


@pytest.mark.parametrize("script", ALL, ids=IDS)
def test_bad_np_is_reported(script):
    proc = run_script(script, ["doctor"], env={"NP": "two", "MPIBOOST_MPIEXEC": "true"}, timeout=30)
    assert proc.returncode == 2
    assert "NP=two" in proc.stderr


# A stand-in mpiexec: answers --version like the MPI named in FAKE_VERSION,
# otherwise records its arguments (one per line) and the host file it was
# given, and exits with FAKE_RC.
FAKE_MPIEXEC = r"""#!/bin/bash
if [ "${1:-}" = --version ]; then printf '%s\n' "$FAKE_VERSION"; exit 0; fi
printf '%s\n' "$@" > "$FAKE_LOG"
prev=
for a in "$@"; do
    if [ "$prev" = -f ] || [ "$prev" = --hostfile ]; then cat "$a" > "$FAKE_LOG.hostfile"; fi
    prev=$a
done
exit "${FAKE_RC:-0}"
"""
OPENMPI_VERSION = "mpirun (Open MPI) 5.0.5\n\nReport bugs to https://www.open-mpi.org/community/help/"
MPICH_VERSION = "HYDRA build details:\n    Version:                                 4.2.2"


@pytest.fixture
def fake_mpiexec(tmp_path):
    exe = write_exe(tmp_path / "fake-mpiexec", FAKE_MPIEXEC)
    log = tmp_path / "fake.log"

    def run(script, args, *, version, env=None, cwd=None):
        full = {"MPIBOOST_MPIEXEC": exe, "FAKE_LOG": log, "FAKE_VERSION": version, **(env or {})}
        proc = run_script(script, args, env=full, cwd=cwd, timeout=60)
        argv = log.read_text().splitlines() if log.exists() else []
        hostfile = Path(f"{log}.hostfile")
        hosts = hostfile.read_text().splitlines() if hostfile.exists() else None
        return proc, argv, hosts

    return run


def test_ec2_hostfile_openmpi(fake_mpiexec, tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("# two nodes\nnode-a:4   # MPICH form\n\nnode-b slots=4\n")
    proc, argv, written = fake_mpiexec(
        EC2,
        ["doctor"],
        version=OPENMPI_VERSION,
        env={"HOSTFILE": hosts, "MPIBOOST_SKIP_SSH_CHECK": "1", "MPIBOOST_THREADS": "3", "FAKE_RC": "7"},
    )
    assert proc.returncode == 7, output(proc)  # the job's exit code comes back
    assert "ssh check skipped" in proc.stderr
    assert written == ["node-a slots=4", "node-b slots=4"]
    assert Path(argv[argv.index("--hostfile") + 1]).name == "hostfile"  # the rewritten host file
    assert argv[argv.index("-np") + 1] == "8"  # NP defaults to the slots
    assert ("--allow-run-as-root" in argv) == (os.geteuid() == 0)
    assert "--oversubscribe" not in argv
    assert argv[argv.index("--bind-to") + 1] == "none"
    assert argv[argv.index("OMP_NUM_THREADS") - 1] == "-x"
    assert argv[-4:] == [sys.executable, "-m", "mpiboost", "doctor"]


def test_ec2_hostfile_mpich(fake_mpiexec, tmp_path):
    hosts = tmp_path / "hosts"
    hosts.write_text("node-a slots=2\nnode-b:3\nnode-c\n")
    proc, argv, written = fake_mpiexec(
        EC2, ["info", "x.h5"], version=MPICH_VERSION, env={"HOSTFILE": hosts, "NP": 9, "MPIBOOST_SKIP_SSH_CHECK": "1"}
    )
    assert proc.returncode == 0, output(proc)
    assert written == ["node-a:2", "node-b:3", "node-c"]
    assert argv[0] == "-f"
    assert argv[2:4] == ["-n", "9"]
    assert argv[-5:] == [sys.executable, "-m", "mpiboost", "info", "x.h5"]
    assert not any(a.startswith("--allow") or a == "-x" for a in argv)


def test_openmpi_local_oversubscribe(fake_mpiexec):
    proc, argv, _ = fake_mpiexec(SLURM, ["doctor"], version=OPENMPI_VERSION, env={"NP": 512})
    assert proc.returncode == 0, output(proc)
    assert "--oversubscribe" in argv
    assert argv[argv.index("-n") + 1] == "512"
    assert ("--allow-run-as-root" in argv) == (os.geteuid() == 0)


def test_pbs_openmpi_nodefile(fake_mpiexec, tmp_path):
    nodefile = tmp_path / "nodes"
    nodefile.write_text("n1\nn1\nn2\nn2\n")
    proc, argv, written = fake_mpiexec(
        PBS,
        [],
        version=OPENMPI_VERSION,
        env={
            "PBS_JOBID": "7.server",
            "PBS_NODEFILE": nodefile,
            "PBS_O_WORKDIR": tmp_path,
            "NCPUS": 8,
            "MPIBOOST_ARGS": "doctor --threads 4",
        },
    )
    assert proc.returncode == 0, output(proc)
    assert "4 rank(s) on 2 node(s), OMP_NUM_THREADS=4" in proc.stderr
    assert argv[:2] == ["--hostfile", str(nodefile)]
    assert argv[argv.index("-np") + 1] == "4"
    assert written == ["n1", "n1", "n2", "n2"]
    assert argv[-3:] == ["doctor", "--threads", "4"]


def test_ssh_check_fails_fast_for_unreachable_host(tmp_path):
    if shutil.which("ssh") is None:
        pytest.skip("no ssh client")
    hosts = tmp_path / "hosts"
    hosts.write_text("localhost:1\nno-such-host.invalid:1\n")
    proc = run_script(
        EC2, ["doctor"], env={"HOSTFILE": hosts, "MPIBOOST_SSH_TIMEOUT": "2", "MPIBOOST_MPIEXEC": "true"}, timeout=60
    )
    assert proc.returncode == 2, output(proc)
    assert "no-such-host.invalid" in proc.stderr
    assert "MPIBOOST_SKIP_SSH_CHECK" in proc.stderr


# ------------------------------------------------------------ real MPI runs
@pytest.mark.mpi
@pytest.mark.parametrize("np_", [2, 3])
@pytest.mark.parametrize("script", ALL, ids=IDS)
def test_doctor_locally(script, np_):
    assert_doctor(run_script(script, ["doctor"], env={"NP": np_}), np_)


@pytest.mark.mpi
def test_slurm_default_job(tmp_path):
    proc = run_script(SLURM, [], cwd=tmp_path)
    assert_doctor(proc, 2)
    assert (tmp_path / "mpiboost-demo.h5").is_file()
    assert "rows        100,000" in proc.stdout  # `mpiboost info` of the demo data


@pytest.mark.mpi
@pytest.mark.parametrize("script", ALL, ids=IDS)
def test_job_exit_code_propagates(script):
    proc = run_script(script, ["info", "/nonexistent.h5"])
    assert proc.returncode == 2, output(proc)
    assert "/nonexistent.h5" in proc.stderr
    assert "job failed with exit code 2" in proc.stderr


@pytest.mark.mpi
@pytest.mark.parametrize("hosts", ["localhost\n", "127.0.0.1:3\n", "localhost slots=3\n"])
def test_ec2_local_hostfile(hosts, tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_text(hosts)
    proc = run_script(EC2, ["doctor"], env={"HOSTFILE": hostfile, "NP": 3, "MPIBOOST_SKIP_SSH_CHECK": "1"})
    assert_doctor(proc, 3)


@pytest.mark.mpi
def test_pbs_job_from_spool_copy(tmp_path):
    """Inside a (simulated) PBS job: a copy of the script run elsewhere, ranks from the node file."""
    spool = tmp_path / "spool"
    spool.mkdir()
    shutil.copy(PBS, spool / "7.server.SC")
    nodefile = tmp_path / "nodes"
    nodefile.write_text("localhost\n" * 3)
    env = {
        "PBS_JOBID": "7.server",
        "PBS_NODEFILE": nodefile,
        "PBS_O_WORKDIR": ROOT,
        "NCPUS": 3,
        "MPIBOOST_ARGS": "doctor",
    }
    proc = run_script(spool / "7.server.SC", env=env, cwd=tmp_path)
    assert_doctor(proc, 3)
    assert "OMP_NUM_THREADS=1" in proc.stderr
    assert "threads 1" in proc.stdout


@pytest.mark.mpi
def test_pbs_changes_to_workdir(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    made = subprocess.run(
        [sys.executable, "-m", "mpiboost", "synth", "longservedio", "--n", "1000", "--out", str(work / "small.h5")],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=script_env(),
    )
    assert made.returncode == 0, made.stderr
    nodefile = tmp_path / "nodes"
    nodefile.write_text("localhost\nlocalhost\n")
    env = {
        "PBS_JOBID": "8.server",
        "PBS_NODEFILE": nodefile,
        "PBS_O_WORKDIR": work,
        "MPIBOOST_ARGS": "info small.h5",
    }
    proc = run_script(PBS, env=env, cwd=tmp_path)
    assert proc.returncode == 0, output(proc)
    assert "rows        1,000" in proc.stdout


# Stands in for srun: records its arguments, then starts the command after
# the srun options on $SLURM_NTASKS local ranks with the real mpiexec (with
# the Slurm variables removed, so that mpiexec does not look for Slurm).
FAKE_SRUN = r"""#!/bin/bash
printf '%s\n' "$@" > "$FAKE_LOG"
while [ $# -gt 0 ] && [[ $1 == -* ]]; do shift; done
n=$SLURM_NTASKS
for v in $(compgen -e | grep '^SLURM_'); do unset "$v"; done
exec "$REAL_MPIEXEC" -n "$n" "$@"
"""


@pytest.mark.mpi
@pytest.mark.parametrize("srun_mpi", [None, "pmix", "none"])
def test_slurm_job_from_spool_copy(srun_mpi, tmp_path):
    """Inside a (simulated) Slurm job: sbatch runs a copy of the script from its spool directory."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    write_exe(bindir / "srun", FAKE_SRUN)
    spool = tmp_path / "spool"
    spool.mkdir()
    shutil.copy(SLURM, spool / "slurm_script")
    log = tmp_path / "srun.log"
    env = {
        "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
        "REAL_MPIEXEC": mpiexec(),
        "FAKE_LOG": log,
        "SLURM_JOB_ID": "42",
        "SLURM_NTASKS": "3",
        "SLURM_CPUS_PER_TASK": "1",
        "SLURM_JOB_NUM_NODES": "1",
        "SLURM_SUBMIT_DIR": ROOT,
    }
    if srun_mpi:
        env["MPIBOOST_SRUN_MPI"] = srun_mpi
    proc = run_script(spool / "slurm_script", ["doctor"], env=env, cwd=tmp_path)
    assert_doctor(proc, 3)
    argv = log.read_text().splitlines()
    mpi_flags = [a for a in argv if a.startswith("--mpi")]
    # by default the plugin of the MPI mpi4py loads: pmi2 for MPICH (whose pip wheel has no PMIx), pmix for Open MPI
    default = {"mpich": "pmi2", "openmpi": "pmix"}.get(flavour())
    expected = srun_mpi or default
    assert mpi_flags == ([] if expected in ("none", None) else [f"--mpi={expected}"])
    if srun_mpi is None:
        assert f"srun --mpi={default or 'none'} (MPIBOOST_SRUN_MPI overrides)" in proc.stderr
    assert "--kill-on-bad-exit=1" in argv
    assert "--cpus-per-task=1" in argv
    assert argv[-4:] == [sys.executable, "-m", "mpiboost", "doctor"]


@pytest.mark.mpi
def test_an_array_task_submitted_outside_the_checkout_finds_the_scripts(tmp_path):
    """``scontrol show job ARRAY_ID`` lists every task of the array, one line each: the script is the first's."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    write_exe(bindir / "srun", FAKE_SRUN)
    line = f"JobId=43 ArrayJobId=42 ArrayTaskId={{}} Command={SLURM} WorkDir={tmp_path}"
    write_exe(bindir / "scontrol", "#!/bin/bash\n" + "".join(f"echo '{line.format(k)}'\n" for k in (1, 2, 3)))
    spool = tmp_path / "spool"
    spool.mkdir()
    shutil.copy(SLURM, spool / "slurm_script")
    env = {"PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}", "REAL_MPIEXEC": mpiexec(),
           "FAKE_LOG": tmp_path / "srun.log", "SLURM_JOB_ID": "42", "SLURM_ARRAY_JOB_ID": "42",
           "SLURM_ARRAY_TASK_ID": "2", "SLURM_NTASKS": "2", "SLURM_CPUS_PER_TASK": "1", "SLURM_JOB_NUM_NODES": "1",
           "SLURM_SUBMIT_DIR": tmp_path}  # submitted from outside the checkout
    proc = run_script(spool / "slurm_script", ["doctor"], env=env, cwd=tmp_path)
    assert "cannot find scripts/lib/launch.sh" not in proc.stderr
    assert_doctor(proc, 2)


def test_the_slurm_header_runs_on_one_small_node_and_appends_to_its_output():
    header = [ln for ln in SLURM.read_text().splitlines() if ln.startswith("#SBATCH ")]
    assert "#SBATCH --nodes=1" in header and "#SBATCH --open-mode=append" in header
    assert "#SBATCH --ntasks=2" in header and "#SBATCH --cpus-per-task=1" in header


def test_the_installed_scripts_are_listed_printed_and_copied_to_a_folder_where_they_run(tmp_path):
    """`mpiboost scripts`: the package data are the scripts of the checkout; a copy runs on its own."""
    from mpiboost.cli.commands import LAUNCHERS, launchers_dir

    for name, rel in LAUNCHERS.items():
        assert (launchers_dir() / rel).read_bytes() == (SCRIPTS / rel).read_bytes()  # scripts/ points there
    listed = subprocess.run([sys.executable, "-m", "mpiboost", "scripts"], capture_output=True, text=True,
                            env=mpi_env())
    assert listed.returncode == 0 and all(name in listed.stdout for name in LAUNCHERS)
    shown = subprocess.run([sys.executable, "-m", "mpiboost", "scripts", "--show", "slurm"], capture_output=True,
                           text=True, env=mpi_env())
    assert shown.stdout == SLURM.read_text() and "#SBATCH --signal=TERM@120" in shown.stdout
    dest = tmp_path / "cluster"
    copied = subprocess.run([sys.executable, "-m", "mpiboost", "scripts", "--copy", str(dest)], capture_output=True,
                            text=True, env=mpi_env())
    assert copied.returncode == 0, copied.stderr
    proc = run_script(dest / "slurm" / "train.sbatch", ["doctor"], env={"MPIBOOST_DRY_RUN": "1"}, cwd=tmp_path)
    assert proc.returncode == 0 and "doctor" in output(proc), output(proc)
    again = subprocess.run([sys.executable, "-m", "mpiboost", "scripts", "--copy", str(dest)], capture_output=True,
                           text=True, env=mpi_env())
    assert again.returncode == 2 and "exists" in again.stderr


def test_the_package_data_glob_takes_every_script():
    import glob

    text = (ROOT / "pyproject.toml").read_text()
    section = text.split("[tool.setuptools.package-data]", 1)[1].split("\n[", 1)[0]
    globs = re.findall(r'"([^"]+)"', re.search(r"^mpiboost\s*=\s*\[(.*?)\]", section, re.M | re.S).group(1))
    taken = {os.path.relpath(p, ROOT / "mpiboost") for g in globs for p in glob.glob(str(ROOT / "mpiboost" / g))}
    on_disk = {os.path.relpath(p, ROOT / "mpiboost")
               for p in glob.glob(str(ROOT / "mpiboost" / "launchers" / "**" / "*"), recursive=True)
               if os.path.isfile(p)}
    assert on_disk and on_disk <= taken


def test_the_slurm_harness_parses_and_says_what_it_needs(tmp_path):
    """scripts/slurm/harness.sh (run by hand as root with Slurm installed, see README) is valid bash, and
    without Slurm's commands on PATH it stops before starting anything, naming the packages (exit 2)."""
    harness = SCRIPTS / "slurm" / "harness.sh"
    assert subprocess.run(["bash", "-n", str(harness)]).returncode == 0
    tools = tmp_path / "bin"
    tools.mkdir()
    for name in ("id", "grep", "dirname"):  # what the script runs before it checks for Slurm
        os.symlink(shutil.which(name), tools / name)
    proc = subprocess.run([shutil.which("bash"), str(harness)], capture_output=True, text=True, timeout=60,
                          env={"PATH": str(tools), "HOME": str(tmp_path)})
    assert proc.returncode == 2, proc.stderr
    assert "run as root" in proc.stderr or "apt-get install slurmctld slurmd slurm-client munge" in proc.stderr
