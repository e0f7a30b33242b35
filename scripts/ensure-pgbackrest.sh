#!/bin/sh
# Makes sure pgBackRest (Debian's package) is installed, for the private cluster's backups
# (RPSD_BACKUP_REPO), the formation's (scripts/ha/formation.sh) and the restore drill (make
# test-restore). Silent when it is; installs it when running as root (or through sudo when it
# needs no password); otherwise says what to install and fails.
set -eu

if command -v pgbackrest >/dev/null 2>&1; then
	exit 0
fi

. "$(dirname "$0")/lib/apt.sh"
if ! can_apt; then
	echo "ensure-pgbackrest: backups need pgBackRest. Install it, e.g.:" >&2
	echo "  sudo apt-get install pgbackrest     (Debian/Ubuntu)" >&2
	echo "  brew install pgbackrest             (macOS)" >&2
	exit 1
fi

echo "ensure-pgbackrest: installing pgBackRest with apt-get" >&2
apt_get update
apt_get install -y --no-install-recommends pgbackrest
if ! command -v pgbackrest >/dev/null 2>&1; then
	echo "ensure-pgbackrest: pgbackrest installed, but still not on PATH" >&2
	exit 1
fi
