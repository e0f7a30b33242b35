# Sourced by the test scripts that need a real rpsd (test-console.sh, test-schemathesis.sh).
# start_rpsd NAME MIN_TIMEOUT_MS builds rpsd from this tree and starts it on a free loopback port
# with a throwaway private PostgreSQL, a generated admin token and no rate limits, waits until it
# is ready and stops it (by PID) and removes its folder on exit. It sets work, url, admin_token
# and rpsd_log.

# stop_rpsd is the EXIT trap: rpsd stops its own private cluster when it gets SIGTERM.
stop_rpsd() {
  if [ -n "${rpsd_pid:-}" ] && kill -0 "$rpsd_pid" 2>/dev/null; then
    kill -TERM "$rpsd_pid"
    for _ in $(seq 1 300); do kill -0 "$rpsd_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$rpsd_pid" 2>/dev/null || true
  fi
  rm -rf "${work:-}"
}

start_rpsd() {
  local name=$1 min_timeout_ms=$2 port
  # Postgres runs as another user when we are root: every folder on the way must be enterable.
  work=$(mktemp -d "/tmp/rps-$name.XXXXXX")
  chmod 755 "$work"
  rpsd_pid=
  trap stop_rpsd EXIT

  go build -o "$work/rpsd" ./cmd/rpsd
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  admin_token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
  rpsd_log=$work/rpsd.log
  env -u DATABASE_URL RPSD_ADDR="127.0.0.1:$port" RPSD_DATA_DIR="$work/data" RPSD_ADMIN_TOKEN="$admin_token" \
    RPSD_MIN_TIMEOUT_MS="$min_timeout_ms" RPSD_IP_RATE=0 RPSD_ACCOUNT_RATE=0 RPSD_SIGNUP_RATE=0 \
    "$work/rpsd" >"$rpsd_log" 2>&1 &
  rpsd_pid=$!
  url="http://127.0.0.1:$port"
  for _ in $(seq 1 600); do
    if curl -fsS "$url/readyz" >/dev/null 2>&1; then return 0; fi
    kill -0 "$rpsd_pid" 2>/dev/null || { cat "$rpsd_log" >&2; echo "$name: rpsd exited" >&2; exit 1; }
    sleep 0.2
  done
  echo "$name: rpsd not ready after 120 s" >&2
  exit 1
}
