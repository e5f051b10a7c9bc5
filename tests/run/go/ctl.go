package main

// `go_static ctl`: the Go target of the insert/remove test
// (tests/run/probe_ctl.py), as programs/probe_ctl_target.c: two goroutines
// call ctlSpin at full speed all along (it calls ctlLeaf, so its returns
// come after a call, through the original code's return points: Go runs
// with original return addresses); "run K N" calls ctlStep N times in this
// goroutine and N times in another, and prints the calls per value of its
// argument.

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
)

var ctlPerArg [8]int64
var ctlSink int64
var ctlSpun [2]int64 // each spinning goroutine's calls of ctlSpin

//go:noinline
func ctlLeaf(i int) int { return i ^ 1 }

//go:noinline
func ctlSpin(i int) int { return ctlLeaf(i) + 1 }

//go:noinline
func ctlStep(k int) {
	atomic.AddInt64(&ctlPerArg[k&7], 1)
	atomic.AddInt64(&ctlSink, int64(k))
}

func ctlMode() {
	var stop int32
	var bg sync.WaitGroup
	for g := 0; g < 2; g++ {
		bg.Add(1)
		go func(g int) {
			defer bg.Done()
			s := 0
			for i := 0; atomic.LoadInt32(&stop) == 0; i++ {
				s += ctlSpin(i)
				atomic.StoreInt64(&ctlSpun[g], int64(i+1))
			}
			atomic.AddInt64(&ctlSink, int64(s))
		}(g)
	}
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(out, "ready")
	out.Flush()
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var k, n int
		if in.Text() == "quit" {
			break
		}
		if c, _ := fmt.Sscanf(in.Text(), "run %d %d", &k, &n); c != 2 {
			continue
		}
		for v := range ctlPerArg {
			atomic.StoreInt64(&ctlPerArg[v], 0)
		}
		seen := [2]int64{atomic.LoadInt64(&ctlSpun[0]), atomic.LoadInt64(&ctlSpun[1])}
		var h sync.WaitGroup
		h.Add(1)
		go func() {
			defer h.Done()
			for i := 0; i < n; i++ {
				ctlStep(k + i&1)
			}
		}()
		for i := 0; i < n; i++ {
			ctlStep(k)
		}
		h.Wait()
		// both spinners called ctlSpin during the phase, however brief
		for g := range seen {
			for atomic.LoadInt64(&ctlSpun[g]) < seen[g]+1000 {
				runtime.Gosched()
			}
		}
		fmt.Fprintf(out, "ran %d", k)
		for v := range ctlPerArg {
			fmt.Fprintf(out, " %d", atomic.LoadInt64(&ctlPerArg[v]))
		}
		fmt.Fprintln(out)
		out.Flush()
	}
	atomic.StoreInt32(&stop, 1)
	bg.Wait()
}
