#!/usr/bin/env bash
# End-to-end check of scripts/slurm/train.sbatch under a real Slurm: starts a throwaway one-node
# cluster (its own munged, slurmctld and slurmd, every file in one temporary directory), submits the
# shipped script the way a user would and checks what comes out:
#   1. the default job (demo data, then `mpiboost doctor`) finds every rank; srun --mpi chosen by the script;
#   2. a training job exits 0 and writes its model;
#   3. with MPIBOOST_REQUEUE=1, (a) a job that runs into its time limit and (b) a job whose ranks get
#      the SIGTERM of --signal stop with their checkpoint (exit 75), requeue themselves, resume and
#      end with the model of an uninterrupted run, byte for byte (cmp), both runs in one output file;
#   4. an array job submitted from a directory outside the checkout runs every task;
#   5. a plain scancel of such a job ends it (it is not requeued).
# Prints a PASS or FAIL line per check and exits 1 when any failed; the cluster is stopped and its
# directory removed on exit, whatever happened. 2 to 4 minutes on 2 cores, most of it spent waiting
# for the 1-minute time limit.
#
#   sudo apt-get install slurmctld slurmd slurm-client munge     # Debian/Ubuntu; nothing to configure
#   sudo bash scripts/slurm/harness.sh                           # as root: slurmd starts the job steps
#
# Environment (all optional):
#   MPIBOOST_PYTHON           python with mpiboost installed (default: the checkout's .venv, else python3)
#   MPIBOOST_HARNESS_RANKS    ranks per job (default 2, at most the CPUs)
#   MPIBOOST_HARNESS_STEPS    the steps to run (default "1 2 3 4 5"; 2 and 4 need 1's data)
#   MPIBOOST_HARNESS_KEEP=1   keep the temporary directory (daemon logs, job output) for a post-mortem
# Needs the Slurm daemons and commands, munged and munge; no systemd and no accounting database. The
# system's Slurm and MUNGE configuration (/etc/slurm, /etc/munge) and daemons are left alone.

# shellcheck disable=SC2317  # functions run from traps and run_step look unreachable to shellcheck 0.9
set -euo pipefail

HERE=$(cd "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
SBATCH_SCRIPT=$HERE/train.sbatch
T0=$SECONDS
FAILED=0

say() { printf '%s\n' "$*"; }
elapsed() { echo $((SECONDS - $1)); }
die() {
    printf 'harness: error: %s\n' "$*" >&2
    exit 2
}

# A job launched inside another Slurm job (the harness run on a real cluster) would otherwise talk to
# that cluster: drop every inherited SLURM_* setting before ours is exported.
while IFS= read -r var; do
    unset "$var"
done < <(compgen -e | grep '^SLURM_' || true)

# ------------------------------------------------------------------ prerequisites
[ "$(id -u)" = 0 ] || die "run as root (sudo bash $0): slurmd must be root to start job steps"
for cmd in munged munge slurmctld slurmd sbatch scontrol squeue scancel pgrep ps setsid cmp; do
    command -v "$cmd" >/dev/null 2>&1 ||
        die "$cmd not found; install Slurm and MUNGE (Debian/Ubuntu: apt-get install slurmctld slurmd slurm-client munge)"
done
if [ -z "${MPIBOOST_PYTHON:-}" ] && [ -x "$ROOT/.venv/bin/python" ]; then
    MPIBOOST_PYTHON=$ROOT/.venv/bin/python
fi
# jobs run in other directories: the python must be an absolute path
PY=$(command -v -- "${MPIBOOST_PYTHON:-python3}") || die "python ${MPIBOOST_PYTHON:-python3} not found; set MPIBOOST_PYTHON"
case $PY in /*) ;; *) PY=$PWD/$PY ;; esac
"$PY" -c 'import mpiboost' 2>/dev/null || die "$PY cannot import mpiboost; set MPIBOOST_PYTHON to the venv's python"
export MPIBOOST_PYTHON=$PY
MPIEXEC=$(dirname -- "$PY")/mpiexec
[ -x "$MPIEXEC" ] || MPIEXEC=$(command -v mpiexec) || die "no mpiexec next to $PY nor on PATH (the uninterrupted reference run of step 3 needs one)"

NODE=$(hostname -s)
NCPU=$(nproc)
RANKS=${MPIBOOST_HARNESS_RANKS:-2}
[[ $RANKS =~ ^[1-9][0-9]*$ ]] || die "MPIBOOST_HARNESS_RANKS=$RANKS: not a positive integer"
if [ "$RANKS" -gt "$NCPU" ]; then
    RANKS=$NCPU
fi
STEPS=${MPIBOOST_HARNESS_STEPS:-1 2 3 4 5}

# ------------------------------------------------------------------ cluster
TMP=$(mktemp -d "${TMPDIR:-/tmp}/mpiboost-slurm.XXXXXX")
DAEMON_PIDS=()
STEP_PID=

stop_cluster() {
    local rc=$? pid i
    trap - EXIT INT TERM
    if [ -n "${STEP_PID:-}" ]; then
        kill_tree "$STEP_PID" # a step cut short: its reference run, its polling
    fi
    if [ -n "${SLURM_CONF:-}" ] && [ -f "$SLURM_CONF" ]; then
        # Jobs first: a slurmstepd outlives the slurmd that started it.
        scancel --quiet --full --partition=harness >/dev/null 2>&1 || true
        for ((i = 0; i < 20; i++)); do
            [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
            sleep 1
        done
    fi
    for ((i = ${#DAEMON_PIDS[@]} - 1; i >= 0; i--)); do
        stop_pid "${DAEMON_PIDS[$i]}"
    done
    # Step daemons of this cluster only: they carry its SLURM_CONF in their environment.
    for pid in $(pgrep -x slurmstepd 2>/dev/null || true); do
        if { tr '\0' '\n' <"/proc/$pid/environ"; } 2>/dev/null | grep -qxF "SLURM_CONF=${SLURM_CONF:-/nonexistent}"; then
            stop_pid "$pid"
        fi
    done
    if [ "${MPIBOOST_HARNESS_KEEP:-0}" = 1 ]; then
        say "harness: kept $TMP"
    else
        rm -rf "$TMP"
    fi
    exit "$rc"
}
trap stop_cluster EXIT
trap 'say "harness: interrupted"; exit 130' INT
trap 'say "harness: terminated"; exit 143' TERM

# Process $1 and its descendants, the deepest first.
tree() {
    local child
    for child in $(pgrep -P "$1" 2>/dev/null || true); do
        tree "$child"
    done
    echo "$1"
}

# True while process $1 runs (a zombie has ended).
alive() {
    local stat
    stat=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
    [[ $stat != Z* ]]
}

# SIGTERM to process $1 and its descendants; SIGKILL to those left after 10 s.
kill_tree() {
    local pids pid i
    pids=$(tree "$1")
    for pid in $pids; do
        kill "$pid" 2>/dev/null || true
    done
    for ((i = 0; i < 50; i++)); do
        for pid in $pids; do
            alive "$pid" && break
            pid=
        done
        [ -z "$pid" ] && return 0
        sleep 0.2
    done
    for pid in $pids; do
        kill -9 "$pid" 2>/dev/null || true
    done
}

# SIGTERM, then SIGKILL after 10 s.
stop_pid() {
    local pid=$1 i
    kill "$pid" 2>/dev/null || return 0
    for ((i = 0; i < 50; i++)); do
        alive "$pid" || break
        sleep 0.2
    done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

# A TCP port nothing listens on (connecting to it is refused), other than those in "$@".
free_port() {
    local port taken i
    for ((i = 0; i < 200; i++)); do
        port=$((20000 + RANDOM % 30000))
        for taken in "$@"; do
            [ "$port" = "$taken" ] && continue 2
        done
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            echo "$port"
            return 0
        fi
    done
    die "no free TCP port found"
}

start_cluster() {
    local t=$SECONDS i state ctld_port slurmd_port
    mkdir -p "$TMP"/{etc,munge,state,spool,log,run,work,outside}
    chmod 755 "$TMP" # jobs and step daemons read and write under it

    # MUNGE with its own key and socket: the system's munged (if any) is left alone.
    dd if=/dev/urandom of="$TMP/munge/munge.key" bs=1024 count=1 status=none
    chmod 700 "$TMP/munge"
    chmod 400 "$TMP/munge/munge.key"
    MUNGE_SOCKET=$TMP/munge/munge.socket
    # Each daemon in a session of its own: a Ctrl-C at the terminal must not stop it before the jobs
    # are cancelled (setsid execs in place, so $! is the daemon).
    setsid munged --foreground --force --socket="$MUNGE_SOCKET" --key-file="$TMP/munge/munge.key" \
        --pid-file="$TMP/munge/munged.pid" --log-file="$TMP/log/munged.log" \
        --seed-file="$TMP/munge/munged.seed" >"$TMP/log/munged.out" 2>&1 &
    DAEMON_PIDS+=($!)
    for ((i = 0; i < 50; i++)); do
        munge --socket="$MUNGE_SOCKET" -n >/dev/null 2>&1 && break
        sleep 0.2
    done
    munge --socket="$MUNGE_SOCKET" -n >/dev/null 2>&1 || {
        cat "$TMP/log/munged.log" "$TMP/log/munged.out" >&2 2>/dev/null || true
        die "munged did not start"
    }

    ctld_port=$(free_port)
    slurmd_port=$(free_port "$ctld_port")
    export SLURM_CONF=$TMP/etc/slurm.conf
    : >"$TMP/etc/plugstack.conf" # no SPANK plugins from /etc/slurm
    # cred_expire is also how long Slurm holds a requeued job before it may start again (default 120 s).
    # KillWait: seconds between the SIGTERM at the time limit and the SIGKILL, for the last round and
    # the checkpoint. MinJobAge keeps finished jobs visible to scontrol while they are checked.
    cat >"$SLURM_CONF" <<EOF
ClusterName=mpiboost-harness
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCKET,cred_expire=10
PlugStackConfig=$TMP/etc/plugstack.conf
StateSaveLocation=$TMP/state
SlurmdSpoolDir=$TMP/spool
MailProg=/bin/true
SlurmctldPidFile=$TMP/run/slurmctld.pid
SlurmdPidFile=$TMP/run/slurmd.pid
SlurmctldLogFile=$TMP/log/slurmctld.log
SlurmdLogFile=$TMP/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=2
MpiDefault=none
JobRequeue=1
KillWait=30
OverTimeLimit=0
MinJobAge=600
ReturnToService=2
InactiveLimit=0
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$NCPU State=UNKNOWN
PartitionName=harness Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF

    # -D: in the foreground of a background job, so that the pid is ours to stop; -i: no saved state.
    setsid slurmctld -D -i -f "$SLURM_CONF" >"$TMP/log/slurmctld.out" 2>&1 &
    DAEMON_PIDS+=($!)
    setsid slurmd -D -f "$SLURM_CONF" -N "$NODE" >"$TMP/log/slurmd.out" 2>&1 &
    DAEMON_PIDS+=($!)
    state=
    for ((i = 0; i < 120; i++)); do
        state=$(scontrol -o show node "$NODE" 2>/dev/null | sed -n 's/.* State=\([^ ]*\).*/\1/p') || true
        [ "$state" = IDLE ] && break
        sleep 0.5
    done
    if [ "$state" != IDLE ]; then
        tail -n 20 "$TMP/log/slurmctld.log" "$TMP/log/slurmd.log" "$TMP/log/slurmctld.out" "$TMP/log/slurmd.out" >&2 2>/dev/null || true
        die "node $NODE not idle after 60 s (state: ${state:-unknown})"
    fi
    say "cluster: node $NODE ($NCPU CPUs) idle after $(elapsed "$t") s; slurmctld port $ctld_port, slurmd port $slurmd_port, $(sbatch --version)"
}

# ------------------------------------------------------------------ checks
STEP_BAD=0
pass() { say "PASS  $*"; }
fail() {
    say "FAIL  $*"
    STEP_BAD=1
}
check() {
    local what=$1
    shift
    if "$@"; then pass "$what"; else fail "$what"; fi
}

# The value of KEY in one `scontrol -o show job` line.
field() {
    local re=" $2=([^ ]*)"
    [[ " $1" =~ $re ]] && echo "${BASH_REMATCH[1]}"
}

# Submit train.sbatch from directory $1 with sbatch options and script arguments "${@:2}"; prints the job id.
submit() {
    local dir=$1
    shift
    (cd "$dir" && sbatch --parsable "$@") | cut -d';' -f1
}

# Wait up to $2 s for every task of job $1 to end; logs each change of state. Leaves the final
# `scontrol -o show job` lines in JOB_LINES. A requeued job passes through COMPLETING and PENDING,
# which are not ends.
wait_job() {
    local id=$1 limit=$2 t=$SECONDS lines line state summary last='' finished
    while :; do
        lines=$(scontrol -o show job "$id" 2>/dev/null) || lines=
        summary=
        finished=1
        while IFS= read -r line; do
            [ -n "$line" ] || continue
            state=$(field "$line" JobState)
            summary+=" $(field "$line" JobId)${state:+:$state}"
            if [ "$(field "$line" Restarts)" != 0 ]; then
                summary+="(restarts=$(field "$line" Restarts))"
            fi
            case $state in
            COMPLETED | FAILED | TIMEOUT | CANCELLED | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE | PREEMPTED) ;;
            *) finished=0 ;;
            esac
        done <<<"$lines"
        [ -n "$lines" ] || finished=0
        if [ "$summary" != "$last" ]; then
            say "      t=$(elapsed "$t")s job$summary"
            last=$summary
        fi
        if [ "$finished" = 1 ]; then
            JOB_LINES=$lines
            return 0
        fi
        if [ $((SECONDS - t)) -ge "$limit" ]; then
            JOB_LINES=$lines
            return 1
        fi
        sleep 1
    done
}

# Wait up to $2 s until job $1 has been requeued (Restarts >= 1), logging each change of state.
wait_restart() {
    local id=$1 limit=$2 t=$SECONDS line state last=''
    while :; do
        line=$(scontrol -o show job "$id" 2>/dev/null) || line=
        state="$(field "$line" JobState) restarts=$(field "$line" Restarts)"
        if [ "$state" != "$last" ]; then
            say "      t=$(elapsed "$t")s job $id: $state"
            last=$state
        fi
        [ "$(field "$line" Restarts)" -ge 1 ] 2>/dev/null && return 0
        [ $((SECONDS - t)) -ge "$limit" ] && return 1
        sleep 1
    done
}

# Run step function $2 (titled $1) in a subshell with errexit on, timed; a command that fails
# unexpectedly ends the step as a FAIL.
# In the background, so that a SIGTERM or SIGINT to the harness is acted on at once (bash waits for a
# foreground command to end before it runs a trap); stop_cluster ends the step's processes.
run_step() {
    local title=$1 fn=$2 t=$SECONDS rc=0
    say ""
    say "== $title"
    set +e
    (
        set -e
        STEP_BAD=0
        "$fn"
        exit "$STEP_BAD"
    ) &
    STEP_PID=$!
    wait "$STEP_PID"
    rc=$?
    STEP_PID=
    set -e
    if [ "$rc" = 0 ]; then
        say "-- $title: PASS ($(elapsed "$t") s)"
    else
        say "-- $title: FAIL ($(elapsed "$t") s, exit $rc)"
        FAILED=1
    fi
}

W=$TMP/work
DEMO=$W/mpiboost-demo.h5

step_doctor() {
    local id out line ec
    id=$(submit "$ROOT" --chdir="$W" --output="$W/doctor-%j.out" --ntasks="$RANKS" \
        --export=ALL,MPIBOOST_DATA="$DEMO",MPIBOOST_DEMO_ROWS=20000 "$SBATCH_SCRIPT")
    say "      sbatch --ntasks=$RANKS scripts/slurm/train.sbatch (no arguments: the default job) -> job $id"
    check "job $id ended in time" wait_job "$id" 120
    out=$W/doctor-$id.out
    line=$JOB_LINES
    ec=$(field "$line" ExitCode)
    say "      state $(field "$line" JobState), exit code $ec"
    sed 's/^/      | /' "$out"
    check "job state COMPLETED, exit code 0:0" test "$(field "$line" JobState):$ec" = COMPLETED:0:0
    check "the script chose srun --mpi=pmi2 (the MPICH wheel)" grep -q 'srun --mpi=pmi2' "$out"
    check "demo data written" test -s "$DEMO"
    check "doctor: $RANKS rank(s) in one job" grep -q "^mpiboost .*, $RANKS rank(s), MPI" "$out"
    check "doctor: one line per rank" test "$(grep -c '^rank ' "$out")" = "$RANKS"
    check "doctor: exact sum check ok" grep -q '^exact sum check: ok' "$out"
}

evaluates() { "$PY" -m mpiboost evaluate --model "$1" --data "$2" >/dev/null 2>&1; }

step_train() {
    local id out line ec
    id=$(submit "$ROOT" --chdir="$W" --output="$W/train-%j.out" --ntasks="$RANKS" "$SBATCH_SCRIPT" \
        train --algo smoothboost --data "$DEMO" --rounds 100 --model "$W/model-train.h5")
    say "      sbatch --ntasks=$RANKS scripts/slurm/train.sbatch train --algo smoothboost --data mpiboost-demo.h5 --rounds 100 -> job $id"
    check "job $id ended in time" wait_job "$id" 120
    out=$W/train-$id.out
    line=$JOB_LINES
    ec=$(field "$line" ExitCode)
    say "      state $(field "$line" JobState), exit code $ec"
    tail -n 4 "$out" | sed 's/^/      | /'
    check "job state COMPLETED, exit code 0:0" test "$(field "$line" JobState):$ec" = COMPLETED:0:0
    check "model written" test -s "$W/model-train.h5"
    check "$RANKS rank(s) trained" grep -q "100 rounds on .* $RANKS rank(s)" "$out"
    check "the model evaluates (mpiboost evaluate)" evaluates "$W/model-train.h5" "$DEMO"
}

# Wait up to $2 s for file $1 to exist (a job's first checkpoint: its ranks are in their rounds).
wait_file() {
    local i
    for ((i = 0; i < $2 * 5; i++)); do
        [ -e "$1" ] && return 0
        sleep 0.2
    done
    return 1
}

# The job line's state and exit code, then its log (indented).
show_job() {
    local line=$1 out=$2
    say "      final: JobState=$(field "$line" JobState) ExitCode=$(field "$line" ExitCode) Restarts=$(field "$line" Restarts) RunTime=$(field "$line" RunTime)"
    grep -v '^mpiboost: round ' "$out" | sed 's/^/      | /'
}

# Steps 3a and 3b train the same model; REF is the uninterrupted run's, trained once directly under mpiexec.
LIMIT_DATA=$W/limit.h5
REF=$W/model-reference.h5
# 60 rounds: a few seconds each side of the first checkpoint (--checkpoint-every 5), which shows the ranks
# are in their rounds (a SIGTERM before then would end them before they can catch it).
train_args() {
    TRAIN=(train --algo softmax --data "$LIMIT_DATA" --rounds 60 --checkpoint-every 5 --model "$1" --checkpoint "$2")
}

reference() {
    local t=$SECONDS rc=0
    [ -s "$REF" ] && return 0
    train_args "$REF" "$W/ckpt-reference.h5"
    say "      reference: mpiexec -n $RANKS mpiboost ${TRAIN[*]} (uninterrupted)"
    "$MPIEXEC" -n "$RANKS" "$PY" -m mpiboost "${TRAIN[@]}" --quiet >"$REF.log" 2>&1 || rc=$?
    say "      reference: exit $rc in $(elapsed "$t") s"
    check "reference run exit 0" test "$rc" = 0
}

same_model() {
    local rc=0
    cmp "$1" "$2" || rc=$?
    say "      cmp $(basename "$1") $(basename "$2"): exit $rc ($([ "$rc" = 0 ] && echo identical || echo DIFFERENT))"
    check "the resumed job's model is byte-identical to the uninterrupted run's (cmp)" test "$rc" = 0
}

step_limit() {
    local id out line t
    train_args "$W/model-limit.h5" "$W/ckpt-limit.h5"
    # --signal=TERM@0 replaces the header's TERM@120, which would come first with a 1-minute limit:
    # at 0 s Slurm sends no early signal, so the SIGTERM is the time limit's own (KillWait before SIGKILL).
    id=$(MPIBOOST_REQUEUE=1 submit "$ROOT" --chdir="$W" --output="$W/limit-%j.out" --ntasks="$RANKS" \
        --time=1 --signal=TERM@0 "$SBATCH_SCRIPT" "${TRAIN[@]}" --resume)
    say "      MPIBOOST_REQUEUE=1 sbatch --time=1 --signal=TERM@0 --ntasks=$RANKS scripts/slurm/train.sbatch ${TRAIN[*]} --resume -> job $id"
    t=$SECONDS
    check "the job's first checkpoint was written (its ranks are in their rounds)" wait_file "$W/ckpt-limit.h5" 120
    # However fast this machine is, the job must still be in its rounds when Slurm enforces the limit
    # (60-90 s after the start: the limit is checked every 30 s): its ranks wait stopped until then.
    # Slurm's kill sends SIGCONT before the SIGTERM, so they go on and stop as any rank would.
    scancel --signal=STOP "$id"
    say "      t=$(elapsed "$t")s: scancel --signal=STOP $id: the ranks wait (stopped) for the time limit; meanwhile the reference run"
    reference
    # Once requeued, the job is given 10 minutes: Slurm's limit counts per run, and the point is the
    # first run's; on a loaded machine the resumed run could otherwise time out in its turn.
    if wait_restart "$id" 200; then
        pass "job $id requeued after its time limit"
        scontrol update JobId="$id" TimeLimit=10
        say "      scontrol update JobId=$id TimeLimit=10 (for the resumed run)"
    else
        fail "job $id requeued after its time limit"
    fi
    check "job $id ended in time" wait_job "$id" 600
    out=$W/limit-$id.out
    line=$JOB_LINES
    show_job "$line" "$out"
    say "      job wall time (submit to end): $(elapsed "$t") s"
    check "job state COMPLETED, exit code 0:0" test "$(field "$line" JobState):$(field "$line" ExitCode)" = COMPLETED:0:0
    check "Slurm ended the first run at its time limit" grep -q 'CANCELLED AT .* DUE TO TIME LIMIT' "$out"
    check "train stopped at the SIGTERM with its checkpoint (exit 75)" grep -q 'stopped by SIGTERM after round .*(exit 75)' "$out"
    check "the script requeued the job" grep -q "requeueing job $id" "$out"
    check "requeued: same job id, Restarts >= 1" test "$(field "$line" Restarts)" -ge 1
    check "--open-mode=append: the output holds both runs (2+ job headers)" test "$(grep -c "^train.sbatch: Slurm job $id:" "$out")" -ge 2
    check "the resumed run wrote the model" test -s "$W/model-limit.h5"
    same_model "$W/model-limit.h5" "$REF"
}

step_signal() {
    local id out line
    train_args "$W/model-signal.h5" "$W/ckpt-signal.h5"
    id=$(MPIBOOST_REQUEUE=1 submit "$ROOT" --chdir="$W" --output="$W/signal-%j.out" --ntasks="$RANKS" \
        "$SBATCH_SCRIPT" "${TRAIN[@]}" --resume)
    say "      MPIBOOST_REQUEUE=1 sbatch --ntasks=$RANKS scripts/slurm/train.sbatch ${TRAIN[*]} --resume -> job $id"
    check "the job's first checkpoint was written" wait_file "$W/ckpt-signal.h5" 120
    # What the header's --signal=TERM@120 makes Slurm do: SIGTERM to the job's steps, not to the script.
    scancel --signal=TERM "$id"
    say "      scancel --signal=TERM $id (the job step's ranks get SIGTERM, as from --signal=TERM@120)"
    check "job $id ended in time" wait_job "$id" 180
    out=$W/signal-$id.out
    line=$JOB_LINES
    show_job "$line" "$out"
    check "job state COMPLETED, exit code 0:0" test "$(field "$line" JobState):$(field "$line" ExitCode)" = COMPLETED:0:0
    check "train stopped at the SIGTERM with its checkpoint (exit 75)" grep -q 'stopped by SIGTERM after round .*(exit 75)' "$out"
    check "the script requeued the job" grep -q "requeueing job $id" "$out"
    check "requeued: same job id, Restarts >= 1" test "$(field "$line" Restarts)" -ge 1
    check "--open-mode=append: the output holds both runs (2+ job headers)" test "$(grep -c "^train.sbatch: Slurm job $id:" "$out")" -ge 2
    reference
    same_model "$W/model-signal.h5" "$REF"
}

step_array() {
    local id task line out state ec n=0 dir=$TMP/outside
    # Nothing of the checkout here: the script must find scripts/lib from its own path. The quoted
    # $SLURM_ARRAY_TASK_ID is for the script to expand, per task.
    # shellcheck disable=SC2016
    id=$(submit "$dir" --array=0-1 --ntasks="$RANKS" "$SBATCH_SCRIPT" train --algo smoothboost --data "$DEMO" \
        --rounds 50 --seed '$SLURM_ARRAY_TASK_ID' --model 'model-$SLURM_ARRAY_TASK_ID.h5')
    say "      cd $dir; sbatch --array=0-1 --ntasks=$RANKS $SBATCH_SCRIPT train --algo smoothboost ... --seed '\$SLURM_ARRAY_TASK_ID' --model 'model-\$SLURM_ARRAY_TASK_ID.h5' -> job $id"
    check "array job $id ended in time" wait_job "$id" 180
    while IFS= read -r line; do
        [ -n "$line" ] || continue
        task=$(field "$line" ArrayTaskId)
        state=$(field "$line" JobState)
        ec=$(field "$line" ExitCode)
        out=$dir/mpiboost-$(field "$line" JobId).out # the header's --output=mpiboost-%j.out, in the submit dir
        say "      task $task: job $(field "$line" JobId), JobState=$state ExitCode=$ec, log $(basename "$out")"
        grep -E '^\+ srun|model ->| error: ' "$out" | sed 's/^/      | /' || true
        check "task $task: COMPLETED, exit code 0:0" test "$state:$ec" = COMPLETED:0:0
        check "task $task: seed and model name expanded per task" grep -q -- "--seed $task --model model-$task.h5" "$out"
        check "task $task: model-$task.h5 written in the submit directory" test -s "$dir/model-$task.h5"
        n=$((n + 1))
    done <<<"$JOB_LINES"
    check "both tasks listed" test "$n" = 2
}

step_cancel() {
    local id out line
    train_args "$W/model-cancel.h5" "$W/ckpt-cancel.h5"
    id=$(MPIBOOST_REQUEUE=1 submit "$ROOT" --chdir="$W" --output="$W/cancel-%j.out" --ntasks="$RANKS" \
        "$SBATCH_SCRIPT" "${TRAIN[@]}" --resume)
    say "      MPIBOOST_REQUEUE=1 sbatch --ntasks=$RANKS scripts/slurm/train.sbatch ${TRAIN[*]} --resume -> job $id"
    check "the job's first checkpoint was written" wait_file "$W/ckpt-cancel.h5" 120
    scancel "$id"
    say "      scancel $id"
    check "job $id ended in time" wait_job "$id" 90
    sleep 3 # a requeue would show by now
    line=$(scontrol -o show job "$id")
    out=$W/cancel-$id.out
    show_job "$line" "$out"
    check "job state CANCELLED, Restarts=0: not requeued" test "$(field "$line" JobState):$(field "$line" Restarts)" = CANCELLED:0
    check "the script said why it did not requeue" grep -q "was cancelled: not requeued" "$out"
    check "the checkpoint is kept" test -s "$W/ckpt-cancel.h5"
}

# Steps 3 and 5 train on rows enough for a softmax round to take a noticeable time.
prepare_limit_data() {
    local t=$SECONDS
    "$PY" -m mpiboost synth longservedio --n 500000 --noise 0.1 --seed 1 --out "$LIMIT_DATA" >/dev/null
    say "setup: 500,000-row data set for steps 3 and 5 in $(elapsed "$t") s"
}

main() {
    start_cluster
    case " $STEPS " in
    *" 3 "* | *" 5 "*) prepare_limit_data ;;
    esac
    case " $STEPS " in
    *" 2 "* | *" 4 "*)
        case " $STEPS " in *" 1 "*) ;; *) die "steps 2 and 4 train on step 1's demo data: run step 1 too" ;; esac
        ;;
    esac
    for step in $STEPS; do
        case $step in
        1) run_step "step 1: doctor (the default job) under srun" step_doctor ;;
        2) run_step "step 2: a training job" step_train ;;
        3)
            run_step "step 3a: time limit -> SIGTERM -> exit 75 -> requeue -> resume == uninterrupted model" step_limit
            run_step "step 3b: SIGTERM before the limit (as --signal sends it) -> requeue -> resume == uninterrupted model" step_signal
            ;;
        4) run_step "step 4: array job submitted from outside the checkout" step_array ;;
        5) run_step "step 5: scancel of a MPIBOOST_REQUEUE=1 job ends it (no requeue)" step_cancel ;;
        *) die "MPIBOOST_HARNESS_STEPS: unknown step $step" ;;
        esac
    done
    say ""
    if [ "$FAILED" = 0 ]; then
        say "harness: all steps PASS in $(elapsed "$T0") s"
    else
        say "harness: FAIL ($(elapsed "$T0") s)"
    fi
    exit "$FAILED"
}

main
