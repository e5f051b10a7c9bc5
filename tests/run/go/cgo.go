//go:build withcgo

// Built with -tags withcgo: the program links libc dynamically through cgo.
package main

// static int add(int a, int b) { return a + b; }
import "C"

func init() { cgoSum = int(C.add(40, 2)) }
