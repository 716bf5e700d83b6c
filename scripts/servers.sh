#!/usr/bin/env bash
# Throwaway database servers for the backends' tests, on 127.0.0.1, on free
# ports, in a temporary directory:
#
#   eval "$(scripts/servers.sh start)"      # all of them
#   eval "$(scripts/servers.sh start postgres redis)"
#   scripts/servers.sh stop
#
# `start` installs what is missing (Debian's packages; a MongoDB-wire server
# from PyPI in a virtualenv under the cache directory), starts the servers and
# prints one `export CANOPY_<NAME>_URL=...` line per server, plus
# CANOPY_SERVERS_DIR (the temporary directory). The servers are configured to
# keep what they acknowledge (PostgreSQL's defaults, Redis with
# `appendfsync always`, etcd always); etcd takes transactions of up to a
# million operations and 128 MiB (canopy's tests commit 200,000 keys and
# 16 MiB values at once), and a database of up to 8 GiB, whose history is
# compacted every 20 s (without, reads slow down tenfold once the tests have
# deleted a few hundred thousand keys). `stop` stops every server of the directory
# CANOPY_SERVERS_DIR names (or of the last `start`) by the process ids `start`
# recorded there, then removes the directory.
# Progress goes to stderr; stdout is only the export lines.
set -euo pipefail

cache="${CANOPY_CACHE:-$HOME/.cache/canopy}"
pointer="${TMPDIR:-/tmp}/canopy-servers-$(id -u).dir"
secantus_version=0.7.0b3

say() { echo "servers: $*" >&2; }
die() {
    say "$*"
    exit 1
}

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
apt_updated=""
apt_install() {
    if [ -z "$apt_updated" ]; then
        $sudo apt-get update -qq >&2
        apt_updated=1
    fi
    say "apt-get install $*"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

random_secret() {
    python3 -c 'import secrets; print(secrets.token_hex(12))'
}

# Waits until `cmd...` succeeds, up to 30 s.
wait_for() {
    local what=$1
    shift
    for _ in $(seq 300); do
        if "$@" >/dev/null 2>&1; then return 0; fi
        sleep 0.1
    done
    die "$what did not come up (its log is in $dir)"
}

remember() { echo "$1 $2" >>"$dir/pids"; }

pg_bindir() {
    local d
    for d in /usr/lib/postgresql/15/bin /usr/lib/postgresql/*/bin; do
        [ -x "$d/initdb" ] && { echo "$d"; return 0; }
    done
    command -v initdb >/dev/null 2>&1 && { dirname "$(command -v initdb)"; return 0; }
    return 1
}

start_postgres() {
    local bin port password pgdata
    bin=$(pg_bindir) || { apt_install postgresql-15 && bin=$(pg_bindir); } || die "no PostgreSQL server (initdb) found"
    port=$(free_port)
    password=$(random_secret)
    pgdata="$dir/postgres"
    mkdir -p "$pgdata"
    echo "$password" >"$dir/postgres.pw"
    # initdb refuses to run as root: the cluster belongs to the postgres user then.
    local as=()
    if [ "$(id -u)" -eq 0 ]; then
        id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
        chown postgres "$pgdata" "$dir/postgres.pw"
        as=(runuser -u postgres --)
    fi
    "${as[@]}" "$bin/initdb" -D "$pgdata" -U canopy --auth=scram-sha-256 --pwfile="$dir/postgres.pw" \
        -E UTF8 --locale=C >"$dir/postgres-initdb.log" 2>&1 || die "initdb failed: $(tail -3 "$dir/postgres-initdb.log")"
    "${as[@]}" "$bin/pg_ctl" -D "$pgdata" -l "$pgdata/server.log" -w -t 30 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $pgdata -c max_connections=300" start >&2 ||
        die "PostgreSQL did not start: $(tail -5 "$pgdata/server.log")"
    remember postgres "$(head -1 "$pgdata/postmaster.pid")"
    echo "export CANOPY_POSTGRES_URL='postgres://canopy:$password@127.0.0.1:$port/postgres'"
    # Where its programs are: the fault tests start a server of their own.
    echo "export CANOPY_POSTGRES_BIN='$bin'"
}

start_redis() {
    command -v redis-server >/dev/null 2>&1 || apt_install redis-server
    local port password
    port=$(free_port)
    password=$(random_secret)
    mkdir -p "$dir/redis"
    redis-server --bind 127.0.0.1 --port "$port" --dir "$dir/redis" --requirepass "$password" \
        --appendonly yes --appendfsync always --save "" --daemonize yes \
        --pidfile "$dir/redis/redis.pid" --logfile "$dir/redis/redis.log" >&2
    wait_for redis test -s "$dir/redis/redis.pid"
    remember redis "$(cat "$dir/redis/redis.pid")"
    wait_for redis redis-cli -p "$port" -a "$password" --no-auth-warning ping
    echo "export CANOPY_REDIS_URL='redis://:$password@127.0.0.1:$port/0'"
}

start_etcd() {
    command -v etcd >/dev/null 2>&1 || apt_install etcd-server
    local port peer
    port=$(free_port)
    peer=$(free_port)
    mkdir -p "$dir/etcd"
    ETCD_UNSUPPORTED_ARCH="${ETCD_UNSUPPORTED_ARCH:-}" nohup etcd --name canopy --data-dir "$dir/etcd/data" \
        --listen-client-urls "http://127.0.0.1:$port" --advertise-client-urls "http://127.0.0.1:$port" \
        --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
        --initial-cluster "canopy=http://127.0.0.1:$peer" \
        --max-txn-ops 1000000 --max-request-bytes 134217728 --quota-backend-bytes 8589934592 \
        --auto-compaction-mode periodic --auto-compaction-retention 20s \
        >"$dir/etcd/etcd.log" 2>&1 </dev/null &
    remember etcd $!
    wait_for etcd bash -c "exec 3<>/dev/tcp/127.0.0.1/$port"
    echo "export CANOPY_ETCD_URL='etcd://127.0.0.1:$port'"
}

start_mongodb() {
    local venv="$cache/secantusdb-$secantus_version"
    if [ ! -x "$venv/bin/secantusd-py" ]; then
        python3 -m venv --help >/dev/null 2>&1 || apt_install python3-venv
        say "pip install secantusdb==$secantus_version (a MongoDB-wire server)"
        rm -rf "$venv"
        python3 -m venv "$venv" >&2
        "$venv/bin/pip" install --quiet "secantusdb==$secantus_version" >&2
    fi
    local port
    port=$(free_port)
    mkdir -p "$dir/mongodb"
    # Through scripts/secantusd.py: idle transactions kept ten minutes, not 60 s.
    nohup "$venv/bin/python3" "$(dirname "$0")/secantusd.py" --host 127.0.0.1 --port "$port" --sync-on-commit \
        --storage-path "$dir/mongodb/data" >"$dir/mongodb/server.log" 2>&1 </dev/null &
    remember mongodb $!
    wait_for mongodb bash -c "exec 3<>/dev/tcp/127.0.0.1/$port"
    echo "export CANOPY_MONGODB_URL='mongodb://127.0.0.1:$port/canopy?directConnection=true'"
    # The server program: the fault tests start a server of their own.
    echo "export CANOPY_MONGODB_BIN='$venv/bin/secantusd-py'"
}

stop_all() {
    local d="${CANOPY_SERVERS_DIR:-}"
    [ -n "$d" ] || d=$(cat "$pointer" 2>/dev/null || true)
    [ -n "$d" ] && [ -f "$d/pids" ] || {
        say "no servers to stop"
        return 0
    }
    local name pid
    while read -r name pid; do
        # Only the process started here: a PID of a server that already
        # ended may belong to another program by now.
        local cmd
        cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null || true)
        case "$cmd" in
        *"$d"* | *redis-server*) ;;
        *) continue ;;
        esac
        if kill -0 "$pid" 2>/dev/null; then
            # PostgreSQL's fast shutdown is SIGINT; the others stop on SIGTERM.
            if [ "$name" = postgres ]; then kill -INT "$pid"; else kill -TERM "$pid"; fi
            for _ in $(seq 100); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
            done
            kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
            say "stopped $name (pid $pid)"
        fi
    done <"$d/pids"
    rm -rf "$d"
    [ "$(cat "$pointer" 2>/dev/null || true)" = "$d" ] && rm -f "$pointer"
    return 0
}

case "${1:-}" in
start)
    shift
    servers=("$@")
    [ ${#servers[@]} -gt 0 ] || servers=(postgres redis etcd mongodb)
    command -v python3 >/dev/null 2>&1 || apt_install python3
    dir=$(mktemp -d "${TMPDIR:-/tmp}/canopy-servers.XXXXXX")
    chmod 755 "$dir"
    : >"$dir/pids"
    echo "$dir" >"$pointer"
    echo "export CANOPY_SERVERS_DIR='$dir'"
    # A server that fails to start stops those started before it.
    trap 'CANOPY_SERVERS_DIR=$dir stop_all' EXIT
    for s in "${servers[@]}"; do
        case "$s" in
        postgres | redis | etcd | mongodb) "start_$s" ;;
        *) die "unknown server \`$s\` (postgres, redis, etcd, mongodb)" ;;
        esac
        say "$s started"
    done
    trap - EXIT
    ;;
stop) stop_all ;;
*)
    echo "usage: scripts/servers.sh start [postgres|redis|etcd|mongodb]... | stop" >&2
    exit 2
    ;;
esac
