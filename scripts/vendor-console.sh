#!/usr/bin/env bash
# Copies the console's browser libraries (blake2b from @noble/hashes, RFC 8785 from canonicalize,
# QR codes from qrcode-generator, whose MIT licence is in the file's header)
# from node_modules, as pinned in package-lock.json, into console/assets/vendor, which is committed
# and embedded in rpsd. console/test/vendor.test.mjs fails when the copies are stale.
# Run it after changing those packages' versions.
set -euo pipefail
cd "$(dirname "$0")/.."

stamp=node_modules/.package-lock.json
if [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ]; then
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error
fi

vendor=console/assets/vendor
rm -rf "$vendor"
mkdir -p "$vendor/noble-hashes" "$vendor/canonicalize" "$vendor/qrcode-generator"
# The files blake2.js imports, and nothing else.
for f in blake2.js _blake.js _md.js _u64.js utils.js LICENSE; do
  cp "node_modules/@noble/hashes/$f" "$vendor/noble-hashes/$f"
done
cp node_modules/canonicalize/lib/canonicalize.js node_modules/canonicalize/LICENSE "$vendor/canonicalize/"
cp node_modules/qrcode-generator/dist/qrcode.mjs "$vendor/qrcode-generator/"
