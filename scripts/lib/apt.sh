# Sourced by the ensure-*.sh scripts (POSIX sh). can_apt tells whether packages can be installed
# here: apt-get exists and this user is root, or sudo runs it without asking a password. apt_get
# runs apt-get so, non-interactively, its output on standard error; as_root prefixes any command.
as_root=none
if [ "$(id -u)" -eq 0 ]; then
	as_root=
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
	as_root=sudo
fi

can_apt() {
	[ "$as_root" != none ] && command -v apt-get >/dev/null 2>&1
}

apt_get() {
	$as_root env DEBIAN_FRONTEND=noninteractive apt-get -q "$@" >&2
}
