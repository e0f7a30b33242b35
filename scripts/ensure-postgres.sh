#!/bin/sh
# Makes sure the PostgreSQL server binaries (initdb, pg_ctl, postgres) are
# installed, for the Go tests that start throwaway clusters from them
# (internal/pgtest) and for the private cluster of `make run`. Silent when they
# are; installs the Debian/Ubuntu package when running as root (or through
# sudo when it needs no password); otherwise says what to install and fails.
set -eu

# Same search as pgcluster.FindBinaries: PATH, then /usr/lib/postgresql/*/bin.
found() {
	if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1 &&
		command -v postgres >/dev/null 2>&1; then
		return 0
	fi
	for dir in /usr/lib/postgresql/*/bin; do
		if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ] && [ -x "$dir/postgres" ]; then
			return 0
		fi
	done
	return 1
}

# As root the clusters run as the postgres OS user, which the package creates.
user_ok() {
	[ "$(id -u)" -ne 0 ] || id postgres >/dev/null 2>&1
}

if found && user_ok; then
	exit 0
fi

. "$(dirname "$0")/lib/apt.sh"
if ! can_apt; then
	echo "ensure-postgres: rpsd and the tests need the PostgreSQL server binaries (initdb, pg_ctl, postgres)" >&2
	echo "on PATH or in /usr/lib/postgresql/<version>/bin. Install them, e.g.:" >&2
	echo "  sudo apt-get install postgresql     (Debian/Ubuntu)" >&2
	echo "  brew install postgresql             (macOS)" >&2
	exit 1
fi

echo "ensure-postgres: installing PostgreSQL with apt-get" >&2
apt_get update
# The package's post-install script creates and may start a default
# cluster; the tests never use it, so it is stopped again if one came up.
apt_get install -y --no-install-recommends postgresql
if command -v pg_ctlcluster >/dev/null 2>&1 && command -v pg_lsclusters >/dev/null 2>&1; then
	pg_lsclusters -h 2>/dev/null | while read -r version name _; do
		$as_root pg_ctlcluster "$version" "$name" stop 2>/dev/null || true
	done
fi

if ! found || ! user_ok; then
	echo "ensure-postgres: postgresql installed, but initdb/pg_ctl/postgres or the postgres user are still missing" >&2
	exit 1
fi
