# The cache configurations of the memory-tracing benchmarks (sourced):
# ONE, cachegrind's model (32 KiB L1I and L1D, 8 MiB LL), and BANK,
# MetaSim's count of 26: L1D 8-64 KiB x 2-8 ways, each alone and with a
# 1 MiB L2, and two with L2s of their own. BANK's 17th (index 16) is ONE's
# L1D. (Until 2026-11-27 only the 8 and 16 KiB ones had an L2: 20 in all,
# though the scripts said 26.)
one=(--cache cachegrind,l1i=32k:8:64,l1d=32k:8:64,ll=8m:16:64)
bank=()
for kb in 8 16 32 64; do
	for ways in 2 4 8; do
		bank+=(--cache "l1d=${kb}k:${ways}:64" --cache "l1d=${kb}k:${ways}:64,l2=1m:16:64")
	done
done
bank+=(--cache "l1d=32k:8:64,l2=256k:8:64" --cache "l1d=48k:12:64,l2=2m:16:64")   # 26 in all
