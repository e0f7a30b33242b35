#!/usr/bin/env bash
# Lints openapi.yaml with the pinned @redocly/cli from package-lock.json.
# Installs the npm tools with `npm ci` when node_modules is missing or older than the lockfile.
set -euo pipefail
cd "$(dirname "$0")/.."

stamp=node_modules/.package-lock.json
if [ ! -x node_modules/.bin/redocly ] || [ ! -f "$stamp" ] || [ package-lock.json -nt "$stamp" ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi

# No telemetry, no update check: the lint must not depend on the network.
export REDOCLY_TELEMETRY=off
export REDOCLY_SUPPRESS_UPDATE_NOTICE=true
npx --no-install redocly lint openapi.yaml --format=stylish
