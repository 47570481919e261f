#!/bin/bash
# Package test: builds the .deb files (make deb), installs them with dpkg, starts
# ringmasterd and a worker from the installed files with the command lines their
# systemd units hold (this machine runs no systemd), checks health, submits a job
# and waits for it to finish, then removes the packages (data kept) and purges
# them (data gone). Needs root; prints node-style "# pass N" / "# fail N".
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
pass=0
fail=0
ok() { echo "ok - $1"; pass=$((pass + 1)); }
bad() { echo "not ok - $1"; fail=$((fail + 1)); }
summary() { echo "# pass $pass"; echo "# fail $fail"; }

if [ "$(id -u)" -ne 0 ]; then
    echo "# skip: the package test installs packages and needs root"
    summary
    exit 0
fi

# A port below the kernel's ephemeral range (ip_local_port_range, 32768 and up here), where
# the other test programs running beside this one take theirs (they bind port 0): a random
# port in that range was once taken by one of them ("cannot listen ... address in use").
# One that nothing listens on now.
eph_lo=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
for _ in 1 2 3 4 5 6 7 8; do
    port=$(( 20000 + RANDOM % (eph_lo - 20000) ))
    ss -Hltn "sport = :$port" 2>/dev/null | grep -q . || break
done
url="http://127.0.0.1:$port"
server_pid=""
worker_pid=""
cleanup() {
    [ -n "$worker_pid" ] && kill -TERM "$worker_pid" 2>/dev/null && wait "$worker_pid" 2>/dev/null
    [ -n "$server_pid" ] && kill -TERM "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    dpkg -P ringmaster-worker ringmaster libringjob-dev libringjob0 >/dev/null 2>&1
    return 0
}
trap cleanup EXIT

wait_for() { # seconds command...
    local limit=$1; shift
    for _ in $(seq 1 $((limit * 5))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
    return 1
}

cd "$root"
if make deb >/tmp/ringmaster-deb.log 2>&1; then
    ok "make deb builds the packages, lintian without errors"
else
    tail -n 40 /tmp/ringmaster-deb.log
    bad "make deb"
    summary
    exit 1
fi

# Start from nothing of ours installed.
dpkg -P ringmaster-worker ringmaster libringjob-dev libringjob0 >/dev/null 2>&1
if dpkg -i build/deb/ringmaster_*.deb build/deb/ringmaster-worker_*.deb \
        build/deb/libringjob-dev_*.deb build/deb/libringjob0_*.deb >/tmp/ringmaster-dpkg.log 2>&1; then
    ok "dpkg -i installs the four packages"
else
    cat /tmp/ringmaster-dpkg.log
    bad "dpkg -i"
    summary
    exit 1
fi

for f in /usr/sbin/ringmasterd /usr/bin/ringctl /usr/bin/ringmaster-sim /usr/sbin/ringmaster-worker \
         /usr/share/ringmaster/www/index.html /etc/ringmaster/ringmasterd.conf \
         /lib/systemd/system/ringmasterd.service /lib/systemd/system/ringmaster-worker.service \
         /usr/include/ringjob.h /usr/lib/x86_64-linux-gnu/pkgconfig/ringjob.pc \
         /usr/share/bash-completion/completions/ringctl; do
    [ -e "$f" ] || { bad "installed file $f"; }
done
getent passwd ringmaster >/dev/null && ok "system user ringmaster exists" || bad "system user"
for m in ringmasterd.8 ringmaster-worker.8 ringctl.1 ringmaster-sim.1; do
    [ -e "/usr/share/man/man${m##*.}/$m.gz" ] || bad "man page $m"
done

# A training program built against the installed library loads it by its soname, and the
# Python binding finds the runtime library without a source tree.
prog=$(mktemp -d)
printf '#include <ringjob.h>\nint main(void) { return ringjob_lr_scale() > 0 ? 0 : 1; }\n' \
    >"$prog/p.c"
if cc -o "$prog/p" "$prog/p.c" $(pkg-config --cflags --libs ringjob) 2>"$prog/err" &&
        readelf -d "$prog/p" | grep -q 'NEEDED.*\[libringjob.so.0\]' && "$prog/p"; then
    ok "a program built with pkg-config ringjob links libringjob.so.0 and runs"
else
    cat "$prog/err"
    bad "building against the installed libringjob"
fi
if (cd "$prog" && /usr/bin/python3 -c 'import ringjob; ringjob.lr_scale()') 2>"$prog/err"; then
    ok "the installed Python binding loads the installed library"
else
    cat "$prog/err"
    bad "python3 -c 'import ringjob'"
fi
rm -rf "$prog"

# ringmasterd as its unit runs it: user ringmaster, state in /var/lib/ringmaster.
set -a; . /etc/ringmaster/ringmasterd.conf; set +a
runuser -u ringmaster -- /usr/sbin/ringmasterd --listen "127.0.0.1:$port" \
    --state-dir /var/lib/ringmaster --www-dir /usr/share/ringmaster/www \
    >/tmp/ringmaster-pkg-server.log 2>&1 &
server_pid=$!
if wait_for 120 curl -fsS "$url/api/v1/health"; then
    ok "installed ringmasterd answers health"
else
    tail -n 30 /tmp/ringmaster-pkg-server.log
    bad "ringmasterd health"
    summary
    exit 1
fi
curl -fsS "$url/" | grep -q '<title>Ringmaster' && ok "dashboard served from /usr/share" ||
    bad "dashboard"
# the charts' library: the package's dependency, served from where Debian installs it
dpkg-query -W -f='${Depends}' ringmaster | grep -q 'libjs-dygraphs' &&
    curl -fsS "$url/vendor/dygraphs/dygraph.min.js" | grep -q 'Dygraph' &&
    ok "the dashboard's chart library (libjs-dygraphs) served from /usr/share/javascript" ||
    bad "chart library"

export RINGMASTER_URL="$url"
admin=/var/lib/ringmaster/admin.token
if ringctl --token-file "$admin" user create "pkg-worker-$port" --role worker \
        >/etc/ringmaster/worker.token; then
    chmod 600 /etc/ringmaster/worker.token
    ok "worker token made with the installed ringctl"
else
    bad "worker token"
fi
/usr/sbin/ringmaster-worker --server "$url" --token-file /etc/ringmaster/worker.token \
    --state-dir /var/lib/ringmaster-worker --name "pkg-worker-$port" --simulate-gpus 2 \
    >/tmp/ringmaster-pkg-worker.log 2>&1 &
worker_pid=$!
node_up() { ringctl --token-file "$admin" --json nodes | grep -q "pkg-worker-$port"; }
wait_for 60 node_up && ok "installed worker registered" || bad "worker registration"

id=$(ringctl --token-file "$admin" submit --name pkg-test --gpus 1 -- /bin/sh -c 'echo hello; sleep 1')
done_state() { ringctl --token-file "$admin" --json show "$id" | grep -q '"state": "COMPLETED"'; }
if [ -n "$id" ] && wait_for 180 done_state; then
    ok "a job submitted through the installed packages completes"
else
    ringctl --token-file "$admin" show "$id"
    tail -n 30 /tmp/ringmaster-pkg-worker.log
    bad "job completion"
fi

# What if: the installed ringmasterd (/usr/sbin) finds the installed simulator (/usr/bin).
if ringctl --token-file "$admin" whatif --since 1h --policies fifo,ringmaster --timeout 120 \
        >/tmp/ringmaster-pkg-whatif.txt 2>&1 &&
        grep -q 'ringmaster (in force)' /tmp/ringmaster-pkg-whatif.txt; then
    ok "ringctl whatif replays the completed job on the installed simulator"
else
    cat /tmp/ringmaster-pkg-whatif.txt
    bad "ringctl whatif"
fi

kill -TERM "$worker_pid" "$server_pid"
wait "$worker_pid" "$server_pid" 2>/dev/null
worker_pid=""
server_pid=""

dpkg -r ringmaster-worker ringmaster libringjob-dev libringjob0 >/dev/null 2>&1 && ok "dpkg -r" || bad "dpkg -r"
[ -f /var/lib/ringmaster/admin.token ] && ok "removal keeps the data" || bad "removal keeps data"
dpkg -P ringmaster-worker ringmaster libringjob-dev libringjob0 >/dev/null 2>&1 && ok "dpkg -P" || bad "dpkg -P"
[ ! -e /var/lib/ringmaster ] && ok "purge removes the data" || bad "purge removes data"

summary
[ "$fail" -eq 0 ]
