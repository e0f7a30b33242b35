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

node --test console/test/verify.test.mjs console/test/vendor.test.mjs

# Postgres runs as another user when we are root: every folder on the way must be enterable.
work=$(mktemp -d /tmp/rps-console.XXXXXX)
chmod 755 "$work"
pid=
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"   # rpsd stops its private cluster on the way out
    for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/rpsd" ./cmd/rpsd
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
admin_token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
env -u DATABASE_URL RPSD_ADDR="127.0.0.1:$port" RPSD_DATA_DIR="$work/data" RPSD_ADMIN_TOKEN="$admin_token" \
  RPSD_MIN_TIMEOUT_MS=200 RPSD_IP_RATE=0 RPSD_ACCOUNT_RATE=0 RPSD_SIGNUP_RATE=0 \
  "$work/rpsd" >"$work/rpsd.log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  if curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; then break; fi
  kill -0 "$pid" 2>/dev/null || { cat "$work/rpsd.log" >&2; echo "test-console: rpsd exited" >&2; exit 1; }
  sleep 0.2
done

RPS_BASE_URL="http://127.0.0.1:$port" RPS_ADMIN_TOKEN="$admin_token" RPS_SCREENSHOTS=console/test/output \
  node --test --test-concurrency=1 console/test/browser.test.mjs || { tail -50 "$work/rpsd.log" >&2; exit 1; }
