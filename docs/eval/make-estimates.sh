#!/bin/sh
# Regenerates the figures of docs/evaluation.md section 6, "Scheduling on what
# is actually known": every policy under imperfect knowledge of remaining work
# (--estimate-error SIGMA for SIGMA in 0, 0.5, 1, 2, --estimate live, and
# --estimate live-naive: the fit as it is, without the core's rules), with
# the core's max wait at its server default (3600 s), and two users of 10:1
# load for fair share. Run from the repository root after `make`:
#   sh docs/eval/make-estimates.sh [SHARED_DIR]      (about 10 minutes, 1 core)
set -eu
SIM=${SIM:-build/ringmaster-sim}
SHARED=${1:-../shared}
OUT=docs/eval
P=fifo,tiresias,optimus,precompute,exploratory,one,two,four,eight,gandiva,rubick,ringmaster
PHILLY="--cluster 4x8 --trace $SHARED/traces/philly_pollux.csv --trace-window 86400 \
    --min-duration 60 --max-gpus 16"

# One run per knowledge mode; each CSV row is prefixed with the mode.
modes() { # ARGS...
    for e in 0 0.5 1 2 live live-naive; do
        case $e in live*) k="--estimate $e" ;; *) k="--estimate-error $e" ;; esac
        $SIM run "$@" --max-wait 3600 $k --policies $P --format csv | sed "s/^/$e,/"
    done
}

for seed in 1 2 3; do
    modes --cluster 8x8 --poisson 250,206 --seed $seed
    modes --cluster 8x8 --poisson 500,114 --seed $seed
    modes --cluster 8x8 --poisson 1000,44 --seed $seed
done > $OUT/estimates-paper.csv
{
    modes $PHILLY --trace-start 2000000
    modes $PHILLY --trace-start 3500000
} > $OUT/estimates-philly.csv

# Fair share: two users of equal share, user 1 submitting about 10x the jobs.
for e in 0 1 live; do
    if [ $e = live ]; then k="--estimate live"; else k="--estimate-error $e"; fi
    for seed in 1 2 3; do
        for sc in 250,206 500,114 1000,44; do
            $SIM run --cluster 8x8 --poisson $sc --seed $seed --users 2 --user-mix 10,1 \
                --max-wait 3600 $k --policies $P --format csv | sed "s/^/$e,/"
        done
    done
    $SIM run $PHILLY --trace-start 2000000 --users 2 --user-mix 10,1 --max-wait 3600 $k \
        --policies $P --format csv | sed "s/^/$e,/"
done > $OUT/estimates-users.csv
