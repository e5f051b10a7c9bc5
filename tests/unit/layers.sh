#!/bin/sh
# The parts below the engine never call up (docs/engine.md, "Parts"): no
# object of a layer references a symbol defined by a layer above it, in
# the order LAYERS, lowest first. Arguments: libreticle's object files.
LAYERS="unwind space warm patch engine"
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
layer_of() {   # .../reticle.dir/<folder>/file.c.o -> <folder>
	case "$1" in */reticle.dir/*) f=${1#*/reticle.dir/}; echo "${f%%/*}" ;; esac
}
for o in "$@"; do
	l=$(layer_of "$o")
	case " $LAYERS " in *" $l "*) ;; *) continue ;; esac
	nm --defined-only "$o" | awk '$2 ~ /^[TDRB]$/ {print $3}' >> "$tmp/def.$l"
	echo "$o" >> "$tmp/objs.$l"
done
bad=0 checked=0
for low in $LAYERS; do
	above=0
	for high in $LAYERS; do
		if [ "$high" = "$low" ]; then above=1; continue; fi
		[ $above = 1 ] && [ -s "$tmp/def.$high" ] || continue
		[ -s "$tmp/objs.$low" ] || continue
		while read -r o; do
			checked=$((checked + 1))
			nm -u "$o" | awk '{print $2}' | grep -xFf "$tmp/def.$high" | while read -r sym; do
				echo "src/$low/$(basename "$o" .o) calls up into src/$high: $sym"
			done
		done < "$tmp/objs.$low" > "$tmp/out"
		if [ -s "$tmp/out" ]; then cat "$tmp/out"; bad=$((bad + 1)); fi
	done
done
if [ $checked = 0 ]; then echo "no objects of the layers given"; exit 1; fi
[ $bad = 0 ] && echo "layers: $checked checks, no call goes up"
exit $((bad > 0))
