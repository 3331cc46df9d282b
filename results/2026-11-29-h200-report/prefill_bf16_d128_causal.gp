# prefill_bf16_d128_causal: made by tools/report.py; `gnuplot prefill_bf16_d128_causal.gp` writes prefill_bf16_d128_causal.svg, `gnuplot -e 'fmt="png"' prefill_bf16_d128_causal.gp` writes prefill_bf16_d128_causal.png
if (!exists("fmt")) fmt = "svg"
set encoding utf8
if (fmt eq "svg") set terminal svg size 1250,640 dynamic noenhanced font "Helvetica,14" background "#ffffff"
if (fmt eq "png") set terminal pngcairo size 1400,720 noenhanced font "Helvetica,14" background "#ffffff"
if (fmt eq "pnggd") set terminal png size 1400,720 noenhanced font "DejaVuSans,12" background "#ffffff"
set output "prefill_bf16_d128_causal." . (fmt eq "pnggd" ? "png" : fmt)
set title "Attention forward, bf16, head dim 128, causal\nbatch × seqlen = 16384 tokens, 16 heads; FLOPs = 4·B·H·S²·D / 2"
set xlabel "sequence length (tokens, log2 scale)"
set ylabel "TFLOPS (higher is better)"
set logscale x 2
set xtics ("1k" 1024, "4k" 4096, "16k" 16384)
set xrange [819.2:20480]
set yrange [0:*]
set grid ytics lc rgb '#dddddd' lt 1
set border 3
set tics nomirror
set key outside right top vertical Left reverse samplen 3 spacing 1.15 width 2 box lc rgb '#cccccc'
set offsets 0, 0, graph 0.08, 0
set label "H200 bf16 tensor peak 693.6 TFLOPS (measured)" at graph 0.01, first 693.6 offset 0, 0.7 left tc rgb '#666666' font ',12'
set label "H200 bf16 tensor peak 989.5 TFLOPS (datasheet)" at graph 0.01, first 989.5 offset 0, 0.7 left tc rgb '#aaaaaa' font ',12'
plot 'prefill_bf16_d128_causal.dat' index 0 using 1:2 with linespoints lw 2.5 lc rgb '#1f5fbf' dt 1 pt 7 ps 1.2 title "H200 portattn cuda-sm80", \
     'prefill_bf16_d128_causal.dat' index 1 using 1:2 with linespoints lw 2.5 lc rgb '#e07b00' dt 1 pt 7 ps 1.2 title "H200 FA2", \
     'prefill_bf16_d128_causal.dat' index 2 using 1:2 with linespoints lw 2.5 lc rgb '#2a9d3a' dt 1 pt 7 ps 1.2 title "H200 cuDNN", \
     693.6 with lines lw 1.5 dt 2 lc rgb '#666666' notitle, \
     989.5 with lines lw 1.5 dt 3 lc rgb '#aaaaaa' notitle
