#!/bin/bash
# Two "hosts" on one machine: two Linux network namespaces joined by a veth
# pair, for rehearsing a multi-host MPI job (TCP between the hosts, a host
# list, an ssh-style launcher) without a second machine. Needs root.
#
#   scripts/lib/netns-hosts.sh up              # create host A (10.213.0.1) and host B (10.213.0.2)
#   scripts/lib/netns-hosts.sh exec a CMD...   # run CMD on host A (a, b, hA, hB or the address)
#   scripts/lib/netns-hosts.sh link down|up    # cut / restore the cable between them
#   scripts/lib/netns-hosts.sh bytes           # bytes received and sent by host A's interface
#   scripts/lib/netns-hosts.sh status          # namespaces, addresses, link state, counters
#   scripts/lib/netns-hosts.sh down            # remove everything (idempotent)
#
# Called the way ssh is called ([ssh options] HOST COMMAND...), it runs
# COMMAND on HOST through a shell, as ssh does, so it can be a launcher's ssh:
#
#   scripts/lib/netns-hosts.sh exec a mpiexec -launcher ssh \
#       -launcher-exec "$PWD/scripts/lib/netns-hosts.sh" -hosts 10.213.0.1:2,10.213.0.2:2 -n 4 ...
#
# Each host is a network namespace (named mpiboost-hA-ID / mpiboost-hB-ID)
# holding one end of a veth pair, called mb0 on both hosts, and lo. The
# addresses (10.213.0.1/24 on A, 10.213.0.2/24 on B) exist only inside the two
# namespaces: the veth pair is created inside them, and nothing in the root
# namespace (interfaces, addresses, routes) is changed. Commands run by `exec`
# also get their own UTS namespace with the host name mpiboost-hA / mpiboost-hB,
# so MPI and `mpiboost doctor` see two machines. Files, processes and
# /dev/shm stay shared: only the network is split.
#
# Environment:
#   MPIBOOST_NETNS_ID  suffix of the namespace names, so that several sets can
#                      exist at once (default: 0); letters, digits, '.', '_', '-'.
#                      Launchers pass their environment to this script, so
#                      setting it once for mpiexec is enough.
set -euo pipefail

PROG=netns-hosts.sh
ID=${MPIBOOST_NETNS_ID:-0}
NET=10.213.0
IFACE=mb0
ADDR_A=$NET.1
ADDR_B=$NET.2
NS_A=mpiboost-hA-$ID
NS_B=mpiboost-hB-$ID

die() {
    printf '%s: error: %s\n' "$PROG" "$*" >&2
    exit 2
}

usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
}

check_id() {
    [[ $ID =~ ^[A-Za-z0-9._-]{1,40}$ ]] || die "MPIBOOST_NETNS_ID='$ID': use 1 to 40 letters, digits, '.', '_' or '-'"
}

need_root() {
    [ "$(id -u)" = 0 ] || die "needs root (network namespaces); run it with sudo"
    command -v ip >/dev/null 2>&1 || die "'ip' (iproute2) not found"
}

ns_exists() { [ -e "/run/netns/$1" ] || ip netns list 2>/dev/null | awk '{print $1}' | grep -qx -- "$1"; }

# host name or address -> "namespace short-name"
resolve() {
    case $1 in
    a | A | hA | mpiboost-hA | "$ADDR_A" | "$NS_A") echo "$NS_A hA" ;;
    b | B | hB | mpiboost-hB | "$ADDR_B" | "$NS_B") echo "$NS_B hB" ;;
    *) return 1 ;;
    esac
}

# Run a step of `up`; on failure undo everything and stop.
mk() {
    "$@" || {
        cmd_down >/dev/null 2>&1 || true
        die "'$*' failed; nothing was left behind"
    }
}

cmd_up() {
    need_root
    if ns_exists "$NS_A" || ns_exists "$NS_B"; then
        die "$NS_A or $NS_B exists already; run '$PROG down' first (or set another MPIBOOST_NETNS_ID)"
    fi
    # On any failure, take down what was made.
    mk ip netns add "$NS_A"
    mk ip netns add "$NS_B"
    mk ip -n "$NS_A" link set lo up
    mk ip -n "$NS_B" link set lo up
    # Created inside A with its peer moved straight into B: never in the root namespace.
    mk ip -n "$NS_A" link add "$IFACE" type veth peer name "$IFACE" netns "$NS_B"
    mk ip -n "$NS_A" addr add "$ADDR_A/24" dev "$IFACE"
    mk ip -n "$NS_B" addr add "$ADDR_B/24" dev "$IFACE"
    mk ip -n "$NS_A" link set "$IFACE" up
    mk ip -n "$NS_B" link set "$IFACE" up
    mk wait_link up
    echo "host A: namespace $NS_A, $IFACE $ADDR_A (host name mpiboost-hA)"
    echo "host B: namespace $NS_B, $IFACE $ADDR_B (host name mpiboost-hB)"
}

cmd_down() {
    need_root
    local ns pids
    for ns in "$NS_A" "$NS_B"; do
        ns_exists "$ns" || continue
        # A namespace outlives its name while processes are in it: end those
        # (all of them were started in it through this script).
        pids=$(ip netns pids "$ns" 2>/dev/null || true)
        if [ -n "$pids" ]; then
            # shellcheck disable=SC2086
            kill -TERM $pids 2>/dev/null || true
            sleep 1
            pids=$(ip netns pids "$ns" 2>/dev/null || true)
            # shellcheck disable=SC2086
            [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
        fi
        ip netns del "$ns" 2>/dev/null || true
    done
}

# exec HOST CMD...: CMD's own argv (no shell)
cmd_exec() {
    [ $# -ge 2 ] || die "usage: $PROG exec HOST CMD..."
    local target ns name
    target=$(resolve "$1") || die "unknown host '$1' (a, b, hA, hB, $ADDR_A or $ADDR_B)"
    read -r ns name <<<"$target"
    shift
    need_root
    ns_exists "$ns" || die "host $name: namespace $ns does not exist; run '$PROG up' first"
    exec ip netns exec "$ns" unshare --uts /bin/sh -c \
        'hostname "$0" 2>/dev/null || echo "$0" > /proc/sys/kernel/hostname; exec "$@"' "mpiboost-$name" "$@"
}

# [ssh options] HOST COMMAND...: what ssh does, COMMAND joined and run by a shell
cmd_ssh() {
    while [ $# -gt 0 ]; do
        case $1 in
        -[bcDEeFIiJLlmOoPpQRSWw]) shift 2 ;; # options with an argument
        -[bcDEeFIiJLlmOoPpQRSWw]?*) shift ;;
        --) shift && break ;;
        -*) shift ;;
        *) break ;;
        esac
    done
    [ $# -ge 1 ] || die "usage: $PROG [ssh options] HOST COMMAND..."
    local host=${1#*@}
    shift
    [ $# -ge 1 ] || die "$host: no command (an interactive shell is not supported)"
    cmd_exec "$host" /bin/sh -c "$*"
}

# Wait until the interface of both hosts reports state up/down: the kernel
# passes a link change on with a delay (up to a second), and MPI libraries
# that list interfaces at start-up skip one that is not up yet.
wait_link() {
    local want=$1 ns state i
    for i in $(seq 100); do
        state=ok
        for ns in "$NS_A" "$NS_B"; do
            [ "$(ip netns exec "$ns" cat "/sys/class/net/$IFACE/operstate" 2>/dev/null)" = "$want" ] || state=wait
        done
        [ "$state" = ok ] && return 0
        sleep 0.1
    done
    printf '%s: error: %s did not become %s within 10 s\n' "$PROG" "$IFACE" "$want" >&2
    return 1
}

cmd_link() {
    need_root
    case ${1:-} in
    up | down) ;;
    *) die "usage: $PROG link down|up" ;;
    esac
    ns_exists "$NS_A" || die "namespace $NS_A does not exist; run '$PROG up' first"
    ip -n "$NS_A" link set "$IFACE" "$1"
    ip -n "$NS_B" link set "$IFACE" "$1"
    wait_link "$1"
}

cmd_bytes() {
    need_root
    ns_exists "$NS_A" || die "namespace $NS_A does not exist; run '$PROG up' first"
    local rx tx
    rx=$(ip netns exec "$NS_A" cat "/sys/class/net/$IFACE/statistics/rx_bytes")
    tx=$(ip netns exec "$NS_A" cat "/sys/class/net/$IFACE/statistics/tx_bytes")
    echo "rx_bytes=$rx tx_bytes=$tx"
}

cmd_status() {
    need_root
    local ns
    for ns in "$NS_A" "$NS_B"; do
        if ns_exists "$ns"; then
            echo "== $ns"
            ip -n "$ns" -brief addr show dev "$IFACE" || true
            ip -n "$ns" -s link show dev "$IFACE" | sed -n '/RX:/,$p' || true
        else
            echo "== $ns: absent"
        fi
    done
}

check_id
case ${1:-} in
up) cmd_up ;;
down) cmd_down ;;
exec) shift && cmd_exec "$@" ;;
link) shift && cmd_link "$@" ;;
bytes) cmd_bytes ;;
status) cmd_status ;;
-h | --help | help | "") usage ;;
*) cmd_ssh "$@" ;;
esac
