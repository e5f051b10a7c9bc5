// A Go program that exercises what Go's runtime does with return
// addresses: goroutines and channels, garbage collection, deep recursion
// that grows stacks (each growth copies the stack and walks its frames),
// panic and recover, a deferred call, and runtime.Callers.
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

var cgoSum = 42 // set through C when built with cgo

func main() {
	fmt.Println("cgo:", cgoSum)
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
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	fmt.Println("gc ran:", m.NumGC > 0)
	defer fmt.Println("deferred")
	if len(os.Args) > 1 {
		panic("asked to panic")
	}
}
