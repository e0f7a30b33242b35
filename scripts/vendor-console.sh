#!/usr/bin/env bash
# Copies the console's browser libraries (blake2b and SHA-512 from @noble/hashes, Ed25519 from
# @noble/curves for browsers whose WebCrypto lacks it, RFC 8785 from canonicalize, QR codes from
# qrcode-generator, whose MIT licence is in the file's header)
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
mkdir -p "$vendor/noble-hashes" "$vendor/noble-curves/abstract" "$vendor/canonicalize" "$vendor/qrcode-generator"
# The files blake2.js and sha2.js import, and nothing else.
for f in blake2.js sha2.js _blake.js _md.js _u64.js utils.js LICENSE; do
  cp "node_modules/@noble/hashes/$f" "$vendor/noble-hashes/$f"
done
# The files ed25519.js imports, and nothing else. A browser cannot resolve the bare specifier
# '@noble/hashes/...' without an import map (an inline script, which the console's CSP refuses),
# so it becomes the path of the copy above; vendor.test.mjs applies the same rewrite.
for f in ed25519.js utils.js abstract/curve.js abstract/edwards.js abstract/fft.js abstract/frost.js \
  abstract/hash-to-curve.js abstract/modular.js abstract/montgomery.js abstract/oprf.js LICENSE; do
  up=$(echo "$f" | sed -e 's#[^/]*/#../#g' -e 's#[^/]*$##')
  sed "s#'@noble/hashes/#'../${up}noble-hashes/#g" "node_modules/@noble/curves/$f" >"$vendor/noble-curves/$f"
done
cp node_modules/canonicalize/lib/canonicalize.js node_modules/canonicalize/LICENSE "$vendor/canonicalize/"
cp node_modules/qrcode-generator/dist/qrcode.mjs "$vendor/qrcode-generator/"
