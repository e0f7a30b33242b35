#!/bin/sh
# Makes sure pgBackRest (Debian's package) is installed, for the private cluster's backups
# (RPSD_BACKUP_REPO), the formation's (scripts/ha/formation.sh) and the restore drill (make
# test-restore). Silent when it is; installs it when running as root (or through sudo when it
# needs no password); otherwise says what to install and fails.
set -eu

if command -v pgbackrest >/dev/null 2>&1; then
	exit 0
fi

sudo=
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
	sudo=sudo
fi
if { [ "$(id -u)" -ne 0 ] && [ -z "$sudo" ]; } || ! command -v apt-get >/dev/null 2>&1; then
	echo "ensure-pgbackrest: backups need pgBackRest. Install it, e.g.:" >&2
	echo "  sudo apt-get install pgbackrest     (Debian/Ubuntu)" >&2
	echo "  brew install pgbackrest             (macOS)" >&2
	exit 1
fi

echo "ensure-pgbackrest: installing pgBackRest with apt-get" >&2
$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends pgbackrest >&2
if ! command -v pgbackrest >/dev/null 2>&1; then
	echo "ensure-pgbackrest: pgbackrest installed, but still not on PATH" >&2
	exit 1
fi
