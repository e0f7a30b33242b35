#!/usr/bin/env bash
# Makes sure pg_auto_failover is installed (pg_autoctl and its PostgreSQL 15 extension), for the
# failover test (make test-ha). Silent when it is; installs Debian's packages when running as
# root; otherwise says what to install and fails.
set -euo pipefail

found() {
	command -v pg_autoctl >/dev/null 2>&1 &&
		[ -f /usr/share/postgresql/15/extension/pgautofailover.control ]
}

if found; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "ensure-auto-failover: the failover test needs pg_auto_failover for PostgreSQL 15:" >&2
	echo "  sudo apt-get install postgresql-15-auto-failover pg-auto-failover-cli   (Debian/Ubuntu)" >&2
	exit 1
fi

echo "ensure-auto-failover: installing pg_auto_failover with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >&2
apt-get install -y -q --no-install-recommends postgresql-15-auto-failover pg-auto-failover-cli >&2
if ! found; then
	echo "ensure-auto-failover: installed, but pg_autoctl or the pgautofailover extension is still missing" >&2
	exit 1
fi
