# Sourced by the bench scripts: bench_server_start BUILD PREFIX starts a real ringmasterd on
# the embedded defaults in a temporary state directory /tmp/PREFIX-XXXXXX, waits until it is
# healthy, and stops it (and removes the directory) when the script exits. Sets state, port,
# url and server.
bench_server_start() {
    state=$(mktemp -d "/tmp/$2-XXXXXX")
    port=$(( 20000 + RANDOM % 20000 ))
    url="http://127.0.0.1:$port"
    "$1/ringmasterd" --listen "127.0.0.1:$port" --state-dir "$state" \
        2>"$state/ringmasterd.log" &
    server=$!
    trap bench_server_stop EXIT
    for _ in $(seq 1 600); do
        curl -fsS "$url/api/v1/health" >/dev/null 2>&1 && return 0
        kill -0 "$server" 2>/dev/null || { cat "$state/ringmasterd.log" >&2; exit 1; }
        sleep 0.2
    done
}

bench_server_stop() {
    kill -TERM "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    rm -rf "$state"
}
