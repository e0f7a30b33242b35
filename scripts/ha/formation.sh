#!/usr/bin/env bash
# A pg_auto_failover formation on loopback, for the failover test (make test-ha) and for trying a
# failover by hand: a monitor, a primary and a secondary with synchronous replication, each a
# `pg_autoctl` process (and its postgres) in a folder of DIR, run as the postgres user when this
# script runs as root (PostgreSQL refuses root). Every process started is recorded by PID in DIR.
#
#   formation.sh up DIR [BASEPORT]   create and start it (ports BASEPORT..BASEPORT+2, default
#                                    free ones); prints the multi-host URL rpsd connects with
#   formation.sh primary DIR         prints the name of the node that is primary now (node1, node2)
#   formation.sh kill DIR NODE       SIGKILLs a node: its pg_autoctl and its postgres, at once
#   formation.sh down DIR            stops every process started in DIR, by PID, and removes DIR
#   formation.sh backup DIR [TYPE]   with RPSD_BACKUP_REPO set at `up`: a pgBackRest backup (full,
#                                    incr: the default) from whichever node is primary
#
# With RPSD_BACKUP_REPO=FOLDER at `up`, every node archives its WAL there with pgBackRest while it
# is primary (archive_mode on, set in each node's postgresql.conf before it first starts), the
# stanza "rps" names both nodes (DIR/pgbackrest.conf) and a first full backup is taken.
# Loopback only: trust authentication and no TLS between the nodes, never for a real deployment.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
BIN=$(ls -d /usr/lib/postgresql/15/bin 2>/dev/null || true)
[ -n "$BIN" ] || { echo "formation: PostgreSQL 15 binaries are missing (/usr/lib/postgresql/15/bin)" >&2; exit 1; }
export PATH="$BIN:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
DB=rps

# as_postgres runs a command as the postgres user when we are root; pg_autoctl keeps its
# configuration and state under DIR.
as_postgres() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- env PATH="$PATH" HOME="$DIR" XDG_CONFIG_HOME="$DIR/config" XDG_DATA_HOME="$DIR/share" "$@"
	else
		env HOME="$DIR" XDG_CONFIG_HOME="$DIR/config" XDG_DATA_HOME="$DIR/share" "$@"
	fi
}

# autoctl ARGS... runs `pg_autoctl ARGS` to completion, its output in DIR/autoctl.log.
autoctl() {
	as_postgres pg_autoctl "$@" >>"$DIR/autoctl.log" 2>&1 </dev/null
}

# run NAME runs `pg_autoctl run` for the node in DIR/NAME in the background, in a session of its
# own whose leader's PID is recorded in DIR/NAME.pid: the session holds pg_autoctl and its
# postgres, so that the node can be stopped as a whole (postgres puts each of its children in a
# session of its own: kill_node kills them by the postmaster's PID).
run() {
	setsid sh -c 'echo $$ >"$1"; shift; exec "$@"' run "$DIR/$1.pid" bash \
		"$HERE/formation.sh" as-postgres "$DIR" pg_autoctl run --pgdata "$DIR/$1" >"$DIR/$1.log" 2>&1 </dev/null &
	wait_for 10 "the PID of $1" test -s "$DIR/$1.pid"
}

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# sql PORT DBNAME QUERY runs a query and prints the unaligned result.
sql() {
	psql -X -q -A -t -h 127.0.0.1 -p "$1" -U autoctl_node -d "$2" -c "$3" 2>/dev/null
}

monitor_port() { cat "$DIR/monitor.port"; }

# wait_for SECONDS DESCRIPTION COMMAND... retries COMMAND until it succeeds.
wait_for() {
	limit=$1
	what=$2
	shift 2
	i=0
	until "$@" >/dev/null 2>&1; do
		i=$((i + 1))
		if [ "$i" -gt $((limit * 10)) ]; then
			echo "formation: $what not reached after ${limit}s; logs in $DIR:" >&2
			tail -n 20 "$DIR"/*.log >&2 || true
			return 1
		fi
		sleep 0.1
	done
}

# states_are NODE1_STATE NODE2_STATE: the monitor reports both nodes in these states.
states_are() {
	got=$(sql "$(monitor_port)" pg_auto_failover \
		"SELECT string_agg(nodename || '=' || reportedstate || '/' || goalstate, ' ' ORDER BY nodename) FROM pgautofailover.node")
	[ "$got" = "node1=$1/$1 node2=$2/$2" ]
}

up() {
	base=${1:-}
	mkdir -p "$DIR"
	chmod 755 "$DIR"
	if [ "$(id -u)" -eq 0 ]; then chown postgres: "$DIR"; fi
	if [ -n "$base" ]; then
		p0=$base p1=$((base + 1)) p2=$((base + 2))
	else
		p0=$(free_port) p1=$(free_port) p2=$(free_port)
	fi
	echo "$p0" >"$DIR/monitor.port"

	autoctl create monitor --pgdata "$DIR/monitor" --pgport "$p0" --hostname 127.0.0.1 --listen 127.0.0.1 \
		--auth trust --no-ssl
	run monitor
	wait_for 60 "the monitor" sql "$p0" pg_auto_failover "SELECT 1 FROM pgautofailover.formation"
	# Declare a primary dead within about 3 s rather than the default 20-30 s, and promote its
	# standby 5 s after: the old primary's keeper demotes itself when it has lost the monitor and
	# its standby for 3 s (timeout.network_partition_timeout below), so two primaries never
	# accept writes at once.
	for setting in "health_check_period = 1000" "health_check_timeout = 1000" "health_check_max_retries = 1" \
		"health_check_retry_delay = 500" "node_considered_unhealthy_timeout = 3000" "primary_demote_timeout = 5000"; do
		as_postgres psql -X -q -h 127.0.0.1 -p "$p0" -d pg_auto_failover -c "ALTER SYSTEM SET pgautofailover.$setting" >/dev/null
	done
	as_postgres psql -X -q -h 127.0.0.1 -p "$p0" -d pg_auto_failover -c "SELECT pg_reload_conf()" >/dev/null

	monitor="postgres://autoctl_node@127.0.0.1:$p0/pg_auto_failover?sslmode=disable"
	node=1
	for port in "$p1" "$p2"; do
		if [ "$node" -eq 2 ]; then
			# pg_basebackup asks for a spread checkpoint: with nothing left to write it is instant.
			wait_for 60 "node1 accepting connections" pg_isready -q -h 127.0.0.1 -p "$p1"
			as_postgres psql -X -q -h 127.0.0.1 -p "$p1" -d "$DB" -c CHECKPOINT >/dev/null
		fi
		autoctl create postgres --pgdata "$DIR/node$node" --pgport "$port" --hostname 127.0.0.1 --listen 127.0.0.1 \
			--name "node$node" --dbname "$DB" --monitor "$monitor" --auth trust --no-ssl
		autoctl config set --pgdata "$DIR/node$node" timeout.network_partition_timeout 3
		archive_settings "$DIR/node$node"
		run "node$node"
		if [ "$node" -eq 1 ]; then
			wait_for 120 "node1 as primary" sql "$p0" pg_auto_failover \
				"SELECT 1 FROM pgautofailover.node WHERE nodename = 'node1' AND reportedstate = 'single'"
		fi
		node=$((node + 1))
	done
	wait_for 180 "a primary with a synchronous secondary" states_are primary secondary
	# number_sync_standbys 0 with one standby: commits wait for it while it is healthy (ANY 1).
	sync=$(psql -X -q -A -t -h 127.0.0.1 -p "$p1" -U postgres -d "$DB" -c "SHOW synchronous_standby_names")
	[ -n "$sync" ] || { echo "formation: the primary has no synchronous standby" >&2; exit 1; }
	if [ -n "${RPSD_BACKUP_REPO:-}" ]; then
		backrest_conf "$p1" "$p2"
		backrest stanza-create
		backrest backup --type=full
	fi
	echo "postgres://postgres@127.0.0.1:$p1,127.0.0.1:$p2/$DB?target_session_attrs=read-write&sslmode=disable"
}

# archive_settings PGDATA: with RPSD_BACKUP_REPO, the node archives every WAL segment with
# pgBackRest while it is primary (archive_mode on: a standby archives nothing).
archive_settings() {
	[ -n "${RPSD_BACKUP_REPO:-}" ] || return 0
	grep -q '^# rps backups' "$1/postgresql.conf" && return 0
	as_postgres sh -c 'printf "%s\n" "# rps backups" "archive_mode = on" "$2" >>"$1/postgresql.conf"' conf "$1" \
		"archive_command = 'pgbackrest --config=$DIR/pgbackrest.conf --stanza=rps archive-push %p'"
}

# backrest_conf PORT1 PORT2 writes DIR/pgbackrest.conf: the repository and both nodes, of which
# pgBackRest backs up the primary.
backrest_conf() {
	mkdir -p "$RPSD_BACKUP_REPO" "$DIR/pgbackrest"
	if [ "$(id -u)" -eq 0 ]; then chown postgres: "$RPSD_BACKUP_REPO" "$DIR/pgbackrest"; fi
	cat >"$DIR/pgbackrest.conf" <<-CONF
		[global]
		repo1-path=$(cd "$RPSD_BACKUP_REPO" && pwd)
		repo1-retention-full=2
		log-path=$DIR/pgbackrest
		lock-path=$DIR/pgbackrest
		log-level-console=warn
		start-fast=y
		compress-type=lz4

		[rps]
		pg1-path=$DIR/node1
		pg1-port=$1
		pg1-socket-path=/var/run/postgresql
		pg2-path=$DIR/node2
		pg2-port=$2
		pg2-socket-path=/var/run/postgresql
	CONF
}

backrest() {
	as_postgres pgbackrest --config="$DIR/pgbackrest.conf" --stanza=rps "$@"
}

primary() {
	sql "$(monitor_port)" pg_auto_failover \
		"SELECT nodename FROM pgautofailover.node WHERE reportedstate IN ('primary', 'wait_primary', 'single') AND goalstate = reportedstate"
}

kill_node() {
	# A crash of the whole node: pg_autoctl, its keeper, the postmaster and every one of its
	# children at once. PostgreSQL puts each child (every backend, the walsender) in a session of
	# its own, so killing the node's session leaves them running: orphaned backends finish the
	# statements they were sent, and a commit whose WAL the walsender had already streamed
	# survives on the standby with an instant after the kill. So the postmaster is stopped first
	# (it forks no new child), its children are listed, and all go in one kill.
	pm=""
	if [ -f "$DIR/$1/postmaster.pid" ]; then
		pm=$(head -n 1 "$DIR/$1/postmaster.pid")
		kill -STOP "$pm" 2>/dev/null || pm=""
	fi
	# shellcheck disable=SC2046 # one word per PID
	kill -KILL -- "-$(cat "$DIR/$1.pid")" ${pm:+"$pm"} $( [ -n "$pm" ] && pgrep -P "$pm" ) 2>/dev/null || true
}

down() {
	[ -d "$DIR" ] || return 0
	for name in node2 node1 monitor; do
		[ -f "$DIR/$name.pid" ] || continue
		kill -TERM -- "-$(cat "$DIR/$name.pid")" 2>/dev/null || true
	done
	# pg_autoctl stops its postgres on SIGTERM; whatever is left after 20 s is killed.
	for name in node2 node1 monitor; do
		[ -f "$DIR/$name.pid" ] || continue
		pid=$(cat "$DIR/$name.pid")
		i=0
		while kill -0 "$pid" 2>/dev/null && [ "$i" -lt 200 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		kill -KILL -- "-$pid" 2>/dev/null || true
		if [ -f "$DIR/$name/postmaster.pid" ]; then
			pm=$(head -n 1 "$DIR/$name/postmaster.pid")
			kill -KILL "$pm" 2>/dev/null || true
		fi
	done
	rm -rf "$DIR"
}

cmd=${1:-}
DIR=${2:-}
[ -n "$cmd" ] && [ -n "$DIR" ] || { sed -n 2,20p "$0" >&2; exit 2; }
case "$cmd" in
up)
	bash "$HERE/ensure-auto-failover.sh"
	up "${3:-}"
	;;
primary) primary ;;
as-postgres)
	# Internal: run the rest of the command line as the postgres user (see run).
	shift 2
	exec_as=$(if [ "$(id -u)" -eq 0 ]; then echo "runuser -u postgres --"; fi)
	exec $exec_as env PATH="$PATH" HOME="$DIR" XDG_CONFIG_HOME="$DIR/config" XDG_DATA_HOME="$DIR/share" "$@"
	;;
kill) kill_node "${3:?node name}" ;;
backup) backrest backup --type="${3:-incr}" ;;
down) down ;;
*)
	sed -n 2,20p "$0" >&2
	exit 2
	;;
esac
