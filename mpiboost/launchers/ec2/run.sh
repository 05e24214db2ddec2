#!/bin/bash
# mpiboost on a set of EC2 instances (or any hosts reachable by passwordless
# ssh): runs `mpiboost ARGS` over the hosts of a host file. See README.md here.
#
#   HOSTFILE=hosts NP=8 scripts/ec2/run.sh doctor
#   HOSTFILE=hosts scripts/ec2/run.sh train --algo ALGO --data /mnt/efs/F.h5 --rounds T --model /mnt/efs/M.h5
#   NP=2 scripts/ec2/run.sh doctor                 # no HOSTFILE: this machine only
#
# The host file may use MPICH's form (`host` or `host:N`) or Open MPI's
# (`host slots=N`), with # comments; it is rewritten for the launcher found
# (`mpiexec -f` for MPICH, `mpirun --hostfile` for Open MPI). Before launching,
# every remote host is checked, in parallel, for passwordless ssh and for
# mpiboost under the same python path.
#
# Environment (all optional):
#   HOSTFILE                  host file (default: none, run on this machine)
#   NP                        ranks (default: the slots of the host file; without one 2)
#   MPIBOOST_PYTHON           python with mpiboost, at the same path on every host
#                             (default: python3)
#   MPIBOOST_ARGS             mpiboost arguments when none are given on the command line
#   MPIBOOST_THREADS          OpenMP threads per rank (default: cores / ranks on each host)
#   MPIBOOST_SKIP_SSH_CHECK=1 skip the ssh check
#   MPIBOOST_SSH_TIMEOUT      ssh connect timeout of the check, seconds (default 5)
#   MPIBOOST_SSH_OPTS         extra ssh options for the check (e.g. "-i key.pem")
#   MPIBOOST_MPIEXEC_ARGS     extra launcher arguments (e.g. network interface selection)
#   MPIBOOST_DRY_RUN=1        print the commands, run nothing
# and those of scripts/lib/launch.sh (MPIBOOST_MPIEXEC, MPIBOOST_MPI_FLAVOUR).
set -euo pipefail

usage() {
    cat <<'EOF'
usage: [HOSTFILE=FILE] [NP=N] scripts/ec2/run.sh [MPIBOOST ARGS...]

Runs `mpiboost MPIBOOST ARGS` on NP ranks over the hosts of HOSTFILE
(`mpiexec -f` for MPICH, `mpirun --hostfile` for Open MPI, found next to
MPIBOOST_PYTHON), after checking passwordless ssh to every remote host.
Without HOSTFILE it runs `mpiexec -n ${NP:-2}` on this machine. With no
arguments (and MPIBOOST_ARGS unset) it runs the default job: write a small
synthetic data set (mpiboost-demo.h5, if missing), describe it, run
`mpiboost doctor` on all ranks.

host file lines: `host`, `host:N` (MPICH form) or `host slots=N` (Open MPI form).

examples:
  HOSTFILE=hosts MPIBOOST_PYTHON=/opt/mpiboost/venv/bin/python scripts/ec2/run.sh doctor
  HOSTFILE=hosts NP=16 scripts/ec2/run.sh train --algo ALGO --data /mnt/efs/F.h5 \
      --rounds 200 --model /mnt/efs/M.h5 --dedicated-coordinator

environment: HOSTFILE, NP, MPIBOOST_PYTHON, MPIBOOST_ARGS, MPIBOOST_THREADS,
MPIBOOST_SKIP_SSH_CHECK=1, MPIBOOST_SSH_TIMEOUT, MPIBOOST_SSH_OPTS,
MPIBOOST_MPIEXEC_ARGS, MPIBOOST_DRY_RUN=1 (see scripts/ec2/README.md).
The exit code is mpiboost's (2: bad input, 1: internal error).
EOF
}

case ${1:-} in
-h | --help)
    usage
    exit 0
    ;;
esac

# ---------------------------------------------------------------- default job
# Used when the script gets no arguments and MPIBOOST_ARGS is empty: writes a
# small synthetic training set to DEMO_DATA (when missing), describes it, then
# runs `mpiboost DEFAULT_JOB...` on all ranks. To make the default a training
# run, swap the two DEFAULT_JOB lines; the data must then be at the same path
# on every host (EFS/FSx, or copied), e.g. MPIBOOST_DATA=/mnt/efs/mpiboost-demo.h5.
DEMO_DATA=${MPIBOOST_DATA:-mpiboost-demo.h5}
DEMO_ROWS=${MPIBOOST_DEMO_ROWS:-100000}
DEFAULT_JOB=(doctor)
# DEFAULT_JOB=(train --algo smoothboost --data "$DEMO_DATA" --rounds 100 --model mpiboost-demo-model.h5)

# ---------------------------------------------------------------- launch
lib=${MPIBOOST_SCRIPTS_DIR:-$(cd "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)}/lib/launch.sh
if [ ! -f "$lib" ]; then
    echo "run.sh: error: $lib not found; run the script from the mpiboost checkout or set MPIBOOST_SCRIPTS_DIR=/path/to/mpiboost/scripts" >&2
    exit 2
fi
MB_PROG=run.sh
# shellcheck source-path=SCRIPTDIR source=../lib/launch.sh
source "$lib"

mb_find_python
mb_select_job "$@"
if [ -n "${NP:-}" ] && ! mb_is_posint "$NP"; then
    mb_die "NP=$NP: not a positive integer"
fi
mb_apply_threads
mb_setup_mpiexec

tmpdir=$(mktemp -d)
trap 'rm -rf "$tmpdir"' EXIT

if [ -n "${HOSTFILE:-}" ]; then
    mb_convert_hostfile "$HOSTFILE" "$tmpdir/hostfile"
    np=${NP:-$MB_SLOTS}
    mb_ssh_check "${MB_HOSTS[@]}"
    mb_hostfile_cmd "$tmpdir/hostfile" "$np"
    mb_log "${np:-one per slot,} rank(s) on ${#MB_HOSTS[@]} host(s) (${MB_SLOTS:-?} slot(s)) with $MB_MPIEXEC ($MB_FLAVOUR), mpiboost $MB_VERSION"
    if [ "${MPIBOOST_DRY_RUN:-0}" = 1 ]; then
        mb_log "host file as the launcher reads it:"
        sed 's/^/    /' "$tmpdir/hostfile" >&2
    fi
else
    np=${NP:-2}
    mb_local_cmd "$np"
    mb_log "no HOSTFILE: $np rank(s) on this machine, mpiboost $MB_VERSION"
fi
launch=("${MB_CMD[@]}")

rc=0
if [ "$MB_DEFAULT" = 1 ]; then
    mb_prepare_demo_data "$DEMO_DATA" "$DEMO_ROWS" || rc=$?
fi
if [ "$rc" = 0 ]; then
    mb_run_job "${launch[@]}" "$MB_PYTHON" -m mpiboost "${MB_JOB[@]}" || rc=$?
fi
mb_finish "$rc"
exit "$rc"
