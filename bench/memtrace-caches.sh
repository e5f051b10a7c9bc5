# The cache configurations of the memory-tracing benchmarks (sourced):
# ONE, cachegrind's model (32 KiB L1I and L1D, 8 MiB LL), and BANK,
# MetaSim's count of 26: L1D 8-64 KiB x 2-8 ways, the small ones also with
# an L2, and two with L2s of their own. BANK's 15th (index 14) is ONE's L1D.
one=(--cache cachegrind,l1i=32k:8:64,l1d=32k:8:64,ll=8m:16:64)
bank=()
for kb in 8 16 32 64; do
	for ways in 2 4 8; do
		bank+=(--cache "l1d=${kb}k:${ways}:64")
		[ "$kb" -le 16 ] && bank+=(--cache "l1d=${kb}k:${ways}:64,l2=1m:16:64")
	done
done
bank+=(--cache "l1d=32k:8:64,l2=256k:8:64" --cache "l1d=48k:12:64,l2=2m:16:64")   # 26 in all
