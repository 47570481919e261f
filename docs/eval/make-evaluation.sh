#!/bin/sh
# Regenerates the figures of docs/evaluation.md: one CSV per scenario (the
# columns of `ringmaster-sim run --format csv`), the per-job JCTs of the paper's
# extreme scenario, and the JCT CDF plot (gnuplot). Run from the repository
# root after `make`: sh docs/eval/make-evaluation.sh [SHARED_DIR]
set -eu
SIM=${SIM:-build/ringmaster-sim}
SHARED=${1:-../shared}
OUT=docs/eval
P=fifo,tiresias,optimus,precompute,exploratory,one,two,four,eight,gandiva,rubick,ringmaster

# 1. The paper's Table 3 (8x8, resnet110), seeds 1-5.
for seed in 1 2 3 4 5; do
    $SIM paper-table3 --policies $P --seed $seed --format csv
done > $OUT/paper-table3.csv

# 2. Trace slices (resnet110 speed-up model scaled to each job's duration).
$SIM run --cluster 4x8 --trace $SHARED/traces/philly_pollux.csv --trace-start 2000000 \
    --trace-window 86400 --min-duration 60 --max-gpus 16 --policies $P --format csv \
    > $OUT/philly.csv
$SIM run --cluster 4x8 --trace $SHARED/traces/alibaba_gpu2023.csv --max-jobs 300 \
    --min-duration 60 --max-gpus 16 --policies $P --format csv > $OUT/alibaba.csv

# 3. Rubick-style mixed plans (gpt-* jobs) on 8x8 reference GPUs.
$SIM run --cluster 8x8 --poisson 400,80 --template plans --policies $P --format csv \
    > $OUT/plans.csv

# 4. A mixed GPU-model cluster: resnet110 (moderate and extreme), and mixed plans.
$SIM run --cluster 4x8:a100,4x8:v100 --poisson 500,114 --policies $P --format csv \
    > $OUT/hetero-moderate.csv
$SIM run --cluster 4x8:a100,4x8:v100 --poisson 250,206 --policies $P --format csv \
    > $OUT/hetero-extreme.csv
$SIM run --cluster 4x8:a100,4x8:v100 --poisson 400,80 --template plans --policies $P \
    --format csv > $OUT/hetero-plans.csv

# 5. JCT CDF of the paper's extreme scenario (seed 1) and of the mixed plans.
$SIM run --cluster 8x8 --poisson 250,206 --policies precompute,exploratory,tiresias,one,rubick,ringmaster \
    --format csv --per-job $OUT/extreme-jobs.csv > /dev/null
$SIM run --cluster 8x8 --poisson 400,80 --template plans \
    --policies fifo,tiresias,precompute,eight,rubick,ringmaster \
    --format csv --per-job $OUT/plans-jobs.csv > /dev/null
gnuplot $OUT/jct-cdf.gp

# 6. (FULL=1, about a minute) 5,000 Philly jobs on 16x8, four policies.
if [ "${FULL:-0}" = 1 ]; then
    $SIM run --cluster 16x8 --trace $SHARED/traces/philly_pollux.csv --max-jobs 5000 \
        --min-duration 60 --max-gpus 16 --policies precompute,rubick,tiresias,ringmaster \
        --format csv > $OUT/philly-5000.csv
fi

# 7. Idealised (fluid) policies on the paper's extreme scenario, seeds 1-5 (a few seconds).
${PYTHON:-python3} $OUT/fluid.py > $OUT/fluid.csv

# 8. Jobs that declare their GPU utilisation (uniform in [0.2, 1), seeded): where
#    ringmaster and gandiva may pack two 1-GPU jobs on one GPU. The paper's
#    scenarios (8x8, resnet110) and the Philly slice of section 2, seeds 1-5;
#    Gandiva's own Philly slice (docs/gandiva.md (c)), seeds 1-3.
for seed in 1 2 3 4 5; do
    for s in 250,206 500,114 1000,44; do
        $SIM run --cluster 8x8 --poisson $s --gpu-util 0.2,1 --seed $seed --policies $P \
            --format csv
    done
done > $OUT/paper-util.csv
for seed in 1 2 3 4 5; do
    $SIM run --cluster 4x8 --trace $SHARED/traces/philly_pollux.csv --trace-start 2000000 \
        --trace-window 86400 --min-duration 60 --max-gpus 16 --gpu-util 0.2,1 --seed $seed \
        --policies $P --format csv
done > $OUT/philly-util.csv
for seed in 1 2 3; do
    $SIM run --cluster 4x8 --trace $SHARED/traces/philly_pollux.csv --trace-start 3000000 \
        --trace-window 28800 --min-duration 60 --max-gpus 8 --gpu-util 0.2,1 --seed $seed \
        --policies $P --format csv
done > $OUT/gandiva-philly-util.csv
for seed in 1 2 3 4 5; do
    $SIM run --cluster 4x8:a100,4x8:v100 --poisson 500,114 --gpu-util 0.2,1 --seed $seed \
        --policies $P --format csv
done > $OUT/hetero-util-moderate.csv
for seed in 1 2 3 4 5; do
    $SIM run --cluster 4x8:a100,4x8:v100 --poisson 250,206 --gpu-util 0.2,1 --seed $seed \
        --policies $P --format csv
done > $OUT/hetero-util-extreme.csv

# 9. The Pollux paper's workloads (docs/simulator.md "Pollux workloads"): 8 workloads of 160
#    goodput jobs on 16x4 GPUs, fixed and adaptive batches (a second or two), the mean JCT
#    per application, and the bar chart of docs/evaluation.md section 7.
PP=ringmaster,tiresias,precompute,optimus,fifo
RINGMASTER_SHARED_DIR=$SHARED $SIM pollux --policies $PP --format csv > $OUT/pollux-fixed.csv
RINGMASTER_SHARED_DIR=$SHARED $SIM pollux --policies $PP --batch adaptive --format csv \
    > $OUT/pollux-adaptive.csv
RINGMASTER_SHARED_DIR=$SHARED $SIM pollux --policies $PP --by-app > $OUT/pollux-by-app.txt
RINGMASTER_SHARED_DIR=$SHARED $SIM pollux --policies ringmaster --batch adaptive --by-app \
    >> $OUT/pollux-by-app.txt
gnuplot $OUT/pollux.gp
# The artifact's own eight workloads, when POLLUX_WORKLOADS names their folder (petuum/adaptdl,
# branch osdi21-artifact, simulator/workloads; not in this repository), with the true remaining
# work and without it (issue 34: declared lengths, or the target alone).
if [ -n "${POLLUX_WORKLOADS:-}" ]; then
    for b in fixed adaptive; do
        for e in oracle declared target; do
            RINGMASTER_SHARED_DIR=$SHARED $SIM pollux --workload-dir "$POLLUX_WORKLOADS" \
                --policies $PP --batch $b --estimate $e --by-app
        done
    done > $OUT/pollux-artifact-workloads.txt
fi

# 10. Heterogeneous GPUs (docs/evaluation.md section 8): the Pollux recipe on Sia's 64 mixed
#     GPUs (6x4 T4, 3x8 RTX 2080Ti, 2x8 A100), speeds learned live, one factor per GPU model,
#     and each job's true model per type (about a minute each).
HP=ringmaster,rubick,precompute,tiresias,optimus,gandiva,fifo
for m in "--speed live" "--speed-model factor" "--speed-model per-type"; do
    RINGMASTER_SHARED_DIR=$SHARED $SIM pollux --hetero --policies $HP --by-app $m
done > $OUT/pollux-hetero.txt
#     The same with adaptive batches (each job picks its batch for the GPUs it gets, as in
#     Sia's and Pollux's runs; only ringmaster chooses batches).
for m in "--speed live" "--speed-model factor" "--speed-model per-type"; do
    RINGMASTER_SHARED_DIR=$SHARED $SIM pollux --hetero --batch adaptive --policies $HP --by-app $m
done > $OUT/pollux-hetero-adaptive.txt

# 11. Sections 1-4's scenarios with given models and with speeds learned live (docs/evaluation.md
#     "Sections 1-4 with speeds learned live"): section,speed,seed, then run's CSV columns.
#     `one` gets stuck on the mixed plans under --speed live; that command runs without it.
P11=fifo,tiresias,optimus,precompute,exploratory,one,two,four,eight,gandiva,rubick,ringmaster
P11PLANS=fifo,tiresias,optimus,precompute,exploratory,two,four,eight,gandiva,rubick,ringmaster
for sp in given live; do
    for seed in 1 2 3 4 5; do
        for s in 250,206 500,114 1000,44; do
            $SIM run --cluster 8x8 --poisson $s --seed $seed --policies $P11 --format csv \
                --speed $sp | tail -n +2 | sed "s/^/1-table3,$sp,$seed,/"
        done
    done
    $SIM run --cluster 4x8 --trace $SHARED/traces/philly_pollux.csv --trace-start 2000000 \
        --trace-window 86400 --min-duration 60 --max-gpus 16 --policies $P11 --format csv \
        --speed $sp | tail -n +2 | sed "s/^/2-philly,$sp,1,/"
    $SIM run --cluster 4x8 --trace $SHARED/traces/alibaba_gpu2023.csv --max-jobs 300 \
        --min-duration 60 --max-gpus 16 --policies $P11 --format csv --speed $sp |
        tail -n +2 | sed "s/^/2-alibaba,$sp,1,/"
    $SIM run --cluster 8x8 --poisson 400,80 --template plans --policies $P11 --format csv \
        --speed $sp | tail -n +2 | sed "s/^/3-plans,$sp,1,/"
    $SIM run --cluster 4x8:a100,4x8:v100 --poisson 500,114 --policies $P11 --format csv \
        --speed $sp | tail -n +2 | sed "s/^/4-mixed-moderate,$sp,1,/"
    $SIM run --cluster 4x8:a100,4x8:v100 --poisson 250,206 --policies $P11 --format csv \
        --speed $sp | tail -n +2 | sed "s/^/4-mixed-extreme,$sp,1,/"
    $SIM run --cluster 4x8:a100,4x8:v100 --poisson 400,80 --template plans \
        --policies $P11PLANS --format csv --speed $sp | tail -n +2 |
        sed "s/^/4-mixed-plans,$sp,1,/"
done > $OUT/speed-live.csv
