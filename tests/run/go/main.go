// A Go program that exercises what Go's runtime does with return
// addresses: goroutines and channels, garbage collection, deep recursion
// that grows stacks (each growth copies the stack and walks its frames),
// panic and recover, a deferred call, runtime.Callers, a nil-pointer
// dereference recovered (SIGSEGV: the handler looks its PC up), and loops
// with no calls that the GC must preempt with a signal (SIGURG: the handler
// reads the interrupted PC).
package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
)

//go:noinline
func depth(n int) int {
	var pad [64]byte // frames large enough to grow the stack often
	pad[n%64] = byte(n)
	if n == 0 {
		return int(pad[0])
	}
	return depth(n-1) + 1 + int(pad[n%64]) - int(byte(n))
}

type node struct {
	left, right *node
	val         int
}

func tree(d int) *node {
	if d == 0 {
		return &node{val: 1}
	}
	return &node{tree(d - 1), tree(d - 1), d}
}

func (t *node) sum() int {
	if t == nil {
		return 0
	}
	return t.val + t.left.sum() + t.right.sum()
}

var errOdd = errors.New("odd")

func risky(i int) (res int, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("recovered: %v", r)
		}
	}()
	if i%7 == 3 {
		panic(fmt.Sprintf("bad %d", i))
	}
	if i%2 == 1 {
		return 0, errOdd
	}
	return i * i, nil
}

func callers() string {
	pcs := make([]uintptr, 16)
	n := runtime.Callers(1, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	var names []string
	for {
		f, more := frames.Next()
		if strings.HasPrefix(f.Function, "main.") {
			names = append(names, f.Function)
		}
		if !more {
			break
		}
	}
	return strings.Join(names, " <- ")
}

//go:noinline
func outer() string { return inner() }

//go:noinline
func inner() string { return callers() }

//go:noinline
func nilDeref(p *node) (v int, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("recovered: %v", r)
		}
	}()
	return p.val, nil
}

// spin loops with no function call: only an asynchronous preemption
// (a signal) stops it for the GC's stop-the-world.
//
//go:noinline
func spin(n int) int {
	x := 1
	for i := 0; i < n; i++ {
		x = x*1103515245 + 12345 + i
	}
	return x & 1
}

var cgoSum = 42 // set through C when built with cgo

func main() {
	if len(os.Args) > 1 && os.Args[1] == "ctl" {
		ctlMode()
		return
	}
	fmt.Println("cgo:", cgoSum)
	// the CPUs it may use, as it saw them at its start (reticle's pin must not show)
	fmt.Println("cpus:", runtime.NumCPU(), runtime.GOMAXPROCS(0))
	fmt.Println("depth:", depth(20000))
	var wg sync.WaitGroup
	results := make(chan int, 64)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			s := 0
			for k := 0; k < 20; k++ {
				s += tree(10).sum() + depth(500+g*100)
			}
			results <- s
		}(g)
	}
	go func() { wg.Wait(); close(results) }()
	var all []int
	for r := range results {
		all = append(all, r)
	}
	sort.Ints(all)
	fmt.Println("goroutines:", len(all), all[0], all[len(all)-1])
	runtime.GC()
	msgs := []string{}
	for i := 0; i < 12; i++ {
		v, err := risky(i)
		msgs = append(msgs, fmt.Sprint(v, err))
	}
	fmt.Println("risky:", strings.Join(msgs, "; "))
	fmt.Println("callers:", outer())
	_, nerr := nilDeref(nil)
	fmt.Println("nil:", nerr)
	var sw sync.WaitGroup
	spins := make([]int, 2)
	for g := 0; g < 2; g++ {
		sw.Add(1)
		go func(g int) { defer sw.Done(); spins[g] = spin(300_000_000) }(g)
	}
	for i := 0; i < 20; i++ {
		_ = tree(12) // allocates: the GC runs and must stop the spinning goroutines
		runtime.GC()
	}
	sw.Wait()
	fmt.Println("spins:", spins[0]+spins[1] >= 0)
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	fmt.Println("gc ran:", m.NumGC > 0)
	defer fmt.Println("deferred")
	if len(os.Args) > 1 {
		panic("asked to panic")
	}
}
