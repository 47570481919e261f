#!/bin/bash
# make run: brings the appliance up on embedded defaults (private PostgreSQL
# under ./var) in the foreground, prints the dashboard URL and the admin
# token, and stops everything cleanly on Ctrl-C.
#   RINGMASTER_LISTEN      host:port (default 127.0.0.1:8080)
#   RINGMASTER_STATE_DIR   state directory (default ./var)
set -euo pipefail

build=${1:-build}
listen=${RINGMASTER_LISTEN:-127.0.0.1:8080}
state=${RINGMASTER_STATE_DIR:-./var}
url="http://$listen/"

mkdir -p "$state"
"$build/ringmasterd" --listen "$listen" --state-dir "$state" --www-dir www &
server=$!
children=("$server")

stop() {
    trap - INT TERM EXIT
    for pid in "${children[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${children[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap stop INT TERM EXIT

for _ in $(seq 1 600); do
    if curl -fsS "${url}api/v1/health" >/dev/null 2>&1; then break; fi
    if ! kill -0 "$server" 2>/dev/null; then
        echo "run: ringmasterd exited; see the messages above" >&2
        exit 1
    fi
    sleep 0.2
done
curl -fsS "${url}api/v1/health" >/dev/null

cat <<MSG

  Ringmaster is up.
    dashboard:   $url
    admin token: $(cat "$state/admin.token")
    state:       $state (PostgreSQL data in $state/pg, log in $state/postgres.log)
  Ctrl-C stops it.

MSG
wait "$server"
