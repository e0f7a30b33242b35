#!/usr/bin/env bash
# The web console's tests: its hashing and vendored libraries under node's test runner, then the
# browser tests (console/test/browser.test.mjs) with playwright-core driving Debian's chromium
# against an rpsd built from this tree, with a throwaway private PostgreSQL and a 200 ms minimum
# stage timeout so games end fast. Screenshots go to console/test/output/.
set -euo pipefail
cd "$(dirname "$0")/.."

export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
stamp=node_modules/.package-lock.json
if [ ! -d node_modules/playwright-core ] || [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
if ! command -v chromium >/dev/null; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "test-console: chromium is not installed (apt-get install chromium)" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi

node --test console/test/verify.test.mjs console/test/signed.test.mjs console/test/keys.test.mjs console/test/keys_review.test.mjs console/test/vendor.test.mjs console/test/translog.test.mjs

source scripts/lib/rpsd.sh
start_rpsd test-console 200

RPS_BASE_URL="$url" RPS_ADMIN_TOKEN="$admin_token" RPS_SCREENSHOTS=console/test/output \
  node --test --test-concurrency=1 console/test/browser.test.mjs || { tail -50 "$rpsd_log" >&2; exit 1; }
