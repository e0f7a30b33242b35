#!/usr/bin/env bash
# Fuzzes a real rpsd against openapi.yaml with schemathesis (pinned, installed from PyPI into a
# virtualenv under .tools/), every check on, with an admin and a player token. rpsd is built from
# this tree and runs on a throwaway private PostgreSQL without rate limits (429 is documented but
# would only hide the rest) and the schema's minimum stage timeout (1 ms). It runs twice: without
# any hook of ours, as a third party would, and with scripts/schemathesis_hooks.py, which has it
# check the event stream message by message.
set -euo pipefail
cd "$(dirname "$0")/.."

requirements=scripts/schemathesis-requirements.txt
venv=.tools/schemathesis
stamp=$venv/requirements.txt
if [ ! -x "$venv/bin/st" ] || ! cmp -s "$requirements" "$stamp"; then
  rm -rf "$venv"
  if ! python3 -m venv "$venv" 2>/dev/null; then
    # Debian's python3 comes without venv.
    [ "$(id -u)" -eq 0 ] || { echo "test-schemathesis: python3 -m venv fails (apt-get install python3-venv)" >&2; exit 1; }
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
    rm -rf "$venv"
    python3 -m venv "$venv"
  fi
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$requirements"
  cp "$requirements" "$stamp"
fi

source scripts/lib/rpsd.sh
start_rpsd test-schemathesis 1

# A funded player, and a lobby for the lobby operations to find.
player=$(curl -fsS -X POST "$url/v1/accounts" -H 'Content-Type: application/json' -d '{"name":"fuzz"}')
player_id=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["account"]["id"])' <<<"$player")
player_token=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])' <<<"$player")
curl -fsS -X POST "$url/v1/admin/accounts/$player_id/credits" -H "Authorization: Bearer $admin_token" \
  -H 'Content-Type: application/json' -d '{"amount":1000000}' >/dev/null

lobby=$(curl -fsS -X POST "$url/v1/lobbies" -H "Authorization: Bearer $admin_token" \
  -H 'Content-Type: application/json' -d '{"name":"fuzz","config":{"betSize":1,"playersCountLimit":3}}')
lobby_id=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])' <<<"$lobby")
game_id=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["game"]["id"])' <<<"$lobby")

# Twice: as a third party runs it (every check, no hook of ours: the contract must hold as it is
# written), then the event stream alone with scripts/schemathesis_hooks.py, which gives
# schemathesis the schema of each message (the contract's x-itemSchema) so that it checks every
# message and the Event or SignedHead in it.
run() {
  local name=$1 start
  shift
  start=$(date +%s)
  RPS_PLAYER_TOKEN="$player_token" RPS_ADMIN_TOKEN="$admin_token" RPS_LOBBY_ID="$lobby_id" RPS_GAME_ID="$game_id" \
    "$@" "$venv/bin/st" --config-file scripts/schemathesis.toml run openapi.yaml --url "$url" \
    --checks all --no-color "${st_args[@]}" \
    || { echo "test-schemathesis: the $name run failed" >&2; grep '"level":"ERROR"' "$rpsd_log" | tail -20 >&2; exit 1; }
  echo "test-schemathesis: $name run, $(( $(date +%s) - start )) s"
}
st_args=("$@")
run "third-party" env -u SCHEMATHESIS_HOOKS
st_args+=(--include-operation-id streamEvents --max-examples 10)
run "stream messages" env SCHEMATHESIS_HOOKS=scripts/schemathesis_hooks.py
