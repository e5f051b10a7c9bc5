#!/bin/sh
# reticle functions, text format, on the fixture with symbols: the header,
# one line per function, addresses and sizes as nm prints them, PLT stubs
# refused, and the same number of functions as the JSON format.
# usage: functions_text.sh RETICLE FIXTURE
R=$1
B=$2
fail=0
out=$("$R" functions "$B") || { echo "FAIL: exit $?"; exit 1; }
echo "$out" | head -1 | grep -q '^address  *size  sources  *instrumentable  name$' || { echo "FAIL: header"; fail=1; }
# nm -S: address size type name; the oracle for 'twice' and 'interp'
for fn in twice interp classify main; do
	line=$(nm -S "$B" | awk -v f="$fn" '$4 == f && ($3 == "T" || $3 == "t")')
	addr=$(echo "$line" | awk '{print $1}')
	size=$(printf '%d' "0x$(echo "$line" | awk '{print $2}')")
	got=$(echo "$out" | sed 's/  at [^ ]*:[0-9]*$//' | awk -v f="$fn" '$NF == f')
	# the source place: addr2line's for the entry
	want=$(addr2line -e "$B" "$addr" | sed 's/ (discriminator [0-9]*)//')
	if ! echo "$out" | grep -q "^$addr .* $fn  at $want\$"; then
		echo "FAIL: $fn: addr2line says $want; reticle says: $(echo "$out" | grep "^$addr ")"
		fail=1
	fi
	if [ -z "$addr" ] || ! echo "$got" | grep -Eq "^$addr +$size +symtab,eh_frame +(yes|no \(.*\)) +$fn\$"; then
		echo "FAIL: $fn: nm says $addr size $size; reticle says: $got"
		fail=1
	fi
done
echo "$out" | grep -q '  plt[ ,].*no (PLT stub)  printf@plt$' || { echo "FAIL: printf@plt"; fail=1; }
n_text=$(echo "$out" | grep -c '^[0-9a-f]\{16\} ')
n_json=$("$R" functions --format json "$B" | grep -c '"addr":')
[ "$n_text" = "$n_json" ] || { echo "FAIL: $n_text text lines, $n_json JSON records"; fail=1; }
echo "$out" | tail -1 | grep -q "^# $n_text functions" || { echo "FAIL: summary"; fail=1; }
[ $fail = 0 ] && echo "ok: $n_text functions"
exit $fail
