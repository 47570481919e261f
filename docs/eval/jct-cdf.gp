# JCT CDF per policy from the per-job CSVs of make-evaluation.sh (gnuplot).
set terminal pngcairo size 1200,500 font "sans,11"
set output "docs/eval/jct-cdf.png"
set multiplot layout 1,2
set xlabel "job completion time (hours, log scale)"
set ylabel "fraction of jobs"
set logscale x
set key top left
set grid
set yrange [0:1]
# Each policy's JCTs sorted, with their rank / count.
cdf(file, pol) = sprintf("< awk -F, '$2==\"%s\" {print $7/3600}' %s | sort -g | awk '{a[NR]=$1} END {for (i=1;i<=NR;i++) print a[i], i/NR}'", pol, file)
set title "paper extreme (8x8, resnet110, 250 s, 206 jobs, seed 1)"
f = "docs/eval/extreme-jobs.csv"
plot for [p in "precompute exploratory tiresias one rubick ringmaster"] cdf(f, p) using 1:2 \
    with lines lw 2 title p
set title "mixed plans (8x8, gpt-* jobs, 400 s, 80 jobs)"
f = "docs/eval/plans-jobs.csv"
plot for [p in "fifo tiresias precompute eight rubick ringmaster"] cdf(f, p) using 1:2 \
    with lines lw 2 title p
unset multiplot
