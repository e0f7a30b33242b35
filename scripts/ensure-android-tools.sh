#!/bin/sh
# Makes sure the APK tools are installed: aapt (links the manifest, dumps the badging), zipalign
# and apksigner, all Debian packages, so no Android SDK download is needed. Silent when they are;
# installs them with apt-get when running as root; otherwise says what to install and fails.
set -eu

found() {
	command -v aapt >/dev/null 2>&1 && command -v zipalign >/dev/null 2>&1 &&
		command -v apksigner >/dev/null 2>&1 && command -v keytool >/dev/null 2>&1
}

if found; then
	exit 0
fi

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "ensure-android-tools: building the APK needs aapt, zipalign, apksigner and keytool (Java 17)." >&2
	echo "Install them, e.g.: sudo apt-get install aapt zipalign apksigner" >&2
	exit 1
fi

echo "ensure-android-tools: installing aapt, zipalign and apksigner with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >&2
apt-get install -y -q --no-install-recommends aapt zipalign apksigner >&2

if ! found; then
	echo "ensure-android-tools: installed, but aapt/zipalign/apksigner/keytool are still missing" >&2
	exit 1
fi
