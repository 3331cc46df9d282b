# decode_bf16_d128_b1: made by tools/report.py; `gnuplot decode_bf16_d128_b1.gp` writes decode_bf16_d128_b1.svg, `gnuplot -e 'fmt="png"' decode_bf16_d128_b1.gp` writes decode_bf16_d128_b1.png
if (!exists("fmt")) fmt = "svg"
set encoding utf8
if (fmt eq "svg") set terminal svg size 1250,640 dynamic noenhanced font "Helvetica,14" background "#ffffff"
if (fmt eq "png") set terminal pngcairo size 1400,720 noenhanced font "Helvetica,14" background "#ffffff"
if (fmt eq "pnggd") set terminal png size 1400,720 noenhanced font "DejaVuSans,12" background "#ffffff"
set output "decode_bf16_d128_b1." . (fmt eq "pnggd" ? "png" : fmt)
set title "Decode (one query token), bf16, batch 1\n32 query heads / 8 KV heads, head dim 128; bandwidth = bytes of K and V / time"
set xlabel "KV cache length (tokens, log2 scale)"
set ylabel "effective KV bandwidth (TB/s, higher is better)"
set logscale x 2
set xtics ("4k" 4096, "16k" 16384, "64k" 65536)
set xrange [3276.8:81920]
set yrange [0:*]
set grid ytics lc rgb '#dddddd' lt 1
set border 3
set tics nomirror
set key outside right top vertical Left reverse samplen 3 spacing 1.15 width 2 box lc rgb '#cccccc'
set offsets 0, 0, graph 0.08, 0
set label "H200 HBM peak 4.22 TB/s (measured)" at graph 0.01, first 4.22 offset 0, 0.7 left tc rgb '#666666' font ',12'
set label "H200 HBM peak 4.8 TB/s (datasheet)" at graph 0.01, first 4.8 offset 0, 0.7 left tc rgb '#aaaaaa' font ',12'
plot 'decode_bf16_d128_b1.dat' index 0 using 1:2 with linespoints lw 2.5 lc rgb '#1f5fbf' dt 1 pt 7 ps 1.2 title "H200 portattn cuda-sm80", \
     'decode_bf16_d128_b1.dat' index 1 using 1:2 with linespoints lw 2.5 lc rgb '#e07b00' dt 1 pt 7 ps 1.2 title "H200 FA2", \
     'decode_bf16_d128_b1.dat' index 2 using 1:2 with linespoints lw 2.5 lc rgb '#2a9d3a' dt 1 pt 7 ps 1.2 title "H200 cuDNN", \
     4.22 with lines lw 1.5 dt 2 lc rgb '#666666' notitle, \
     4.8 with lines lw 1.5 dt 3 lc rgb '#aaaaaa' notitle
