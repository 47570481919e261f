#!/bin/bash
# make run: brings the appliance up on embedded defaults (private PostgreSQL
# under ./var) in the foreground, prints the dashboard URL and the admin
# token, starts one local ringmaster-worker beside it (the host's GPUs when the CUDA
# runtime finds some, else 4 simulated ones), and stops everything cleanly on Ctrl-C.
#   RINGMASTER_LISTEN      host:port (default 127.0.0.1:8080)
#   RINGMASTER_STATE_DIR   state directory (default ./var)
#   RINGMASTER_SIM_GPUS    simulated GPUs when no real one is found (default 4)
#   RINGMASTER_CHECKPOINT_ROOT  jobs' checkpoints (default STATE_DIR/checkpoints)
set -euo pipefail

build=${1:-build}
listen=${RINGMASTER_LISTEN:-127.0.0.1:8080}
state=${RINGMASTER_STATE_DIR:-./var}
url="http://$listen/"

mkdir -p "$state"
# Every worker on this machine reaches the same checkpoint folder, so a job migrated
# between local workers restores its checkpoint instead of starting over.
export RINGMASTER_CHECKPOINT_ROOT=${RINGMASTER_CHECKPOINT_ROOT:-$(cd "$state" && pwd)/checkpoints}
mkdir -p "$RINGMASTER_CHECKPOINT_ROOT"
"$build/ringmasterd" --listen "$listen" --state-dir "$state" --www-dir www &
server=$!
children=("$server")

stop() {
    trap - INT TERM EXIT
    local i
    for ((i = ${#children[@]} - 1; i >= 0; i--)); do   # the worker first, the server last
        kill -TERM "${children[i]}" 2>/dev/null || true
        wait "${children[i]}" 2>/dev/null || true
    done
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

# The worker's token: made once through the API with the admin token and kept in
# $state/worker.token, so that a second run reuses it (the user name exists by then).
worker_token() {
    local file="$state/worker.token" name answer
    if [ -s "$file" ]; then return 0; fi
    name="local-worker-$(hostname -s 2>/dev/null || echo host)"
    for suffix in "" "-$(date +%s)"; do
        answer=$(curl -sS -X POST -H "Authorization: Bearer $(cat "$state/admin.token")" \
            -H 'Content-Type: application/json' \
            -d "{\"name\": \"$name$suffix\", \"role\": \"worker\"}" "${url}api/v1/users")
        if token=$(printf '%s' "$answer" | sed -n 's/.*"token": *"\([^"]*\)".*/\1/p') &&
            [ -n "$token" ]; then
            (umask 077 && printf '%s\n' "$token" >"$file")
            return 0
        fi
    done
    echo "run: cannot create a worker token: $answer" >&2
    return 1
}

gpus_flag=()
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
    gpus_flag=(--simulate-gpus "${RINGMASTER_SIM_GPUS:-4}")
fi
if worker_token; then
    OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader} \
    OMPI_MCA_btl_vader_single_copy_mechanism=${OMPI_MCA_btl_vader_single_copy_mechanism:-none} \
        "$build/ringmaster-worker" --server "$url" --token-file "$state/worker.token" \
        --state-dir "$state/worker" "${gpus_flag[@]}" &
    children+=("$!")
fi

cat <<MSG

  Ringmaster is up.
    dashboard:   $url
    admin token: $(cat "$state/admin.token")
    state:       $state (PostgreSQL data in $state/pg, log in $state/postgres.log)
    worker:      ringmaster-worker ${gpus_flag[*]:-(real GPUs)}, state in $state/worker
  Ctrl-C stops it.

MSG
wait "$server"
