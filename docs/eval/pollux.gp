# Mean JCT per policy over the 8 Pollux workloads, fixed and adaptive batches, beside the
# published means (Pollux OSDI'21), from the CSVs of make-evaluation.sh section 9 (gnuplot);
# fifo (about 20,000 s) is in the CSVs, off this scale.
set terminal pngcairo size 900,450 font "sans,11"
set output "docs/eval/pollux.png"
set title "Pollux workloads: 8 x 160 jobs, 16 x 4 GPUs (mean JCT, seconds)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set ylabel "mean JCT (s)"
set yrange [0:*]
set grid ytics
set key top left
set datafile separator ","
mean(file, pol) = sprintf("< awk -F, '$2==\"%s\" {s+=$3; n++} END {print s/n}' %s", pol, file)
$published << EOD
ringmaster,NaN,NaN
tiresias,4038,NaN
precompute,NaN,NaN
optimus,5682,NaN
pollux,NaN,2751
EOD
set print $ours
do for [p in "ringmaster tiresias precompute optimus"] {
    f = system(sprintf("awk -F, '$2==\"%s\" {s+=$3; n++} END {print s/n}' docs/eval/pollux-fixed.csv", p))
    a = system(sprintf("awk -F, '$2==\"%s\" {s+=$3; n++} END {print s/n}' docs/eval/pollux-adaptive.csv", p))
    print sprintf("%s,%s,%s", p, f, a)
}
print "pollux,NaN,NaN"
unset print
plot $ours using 2:xtic(1) title "ours, fixed batch", \
     '' using 3 title "ours, adaptive batch", \
     $published using 2 title "published (fixed)", \
     '' using 3 title "published Pollux (adaptive)"
