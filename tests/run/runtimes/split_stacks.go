// gccgo's split stacks and recover(): goroutines that grow their stacks by
// deep recursion (__morestack goes on at its return address plus one, in
// the original code) and panics recovered in deferred functions (gccgo's
// recover checks its caller's return address) (run.gccgo.split_stacks).
package main

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
)

type tree struct {
	left, right *tree
	val         int
}

func build(d int) *tree {
	if d == 0 {
		return &tree{val: 1}
	}
	return &tree{build(d - 1), build(d - 1), d}
}

func (t *tree) sum() int {
	if t == nil {
		return 0
	}
	return t.val + t.left.sum() + t.right.sum()
}

func rec(n int, acc []byte) int {
	var pad [512]byte
	pad[n%512] = byte(n)
	if n == 0 {
		return len(acc) + int(pad[0])
	}
	return rec(n-1, append(acc, pad[n%512])) + 1
}

func mayPanic(i int) (r int, err error) {
	defer func() {
		if x := recover(); x != nil {
			err = fmt.Errorf("recovered: %v", x)
		}
	}()
	if i%3 == 0 {
		panic(errors.New("boom"))
	}
	return i * 2, nil
}

func main() {
	var wg sync.WaitGroup
	ch := make(chan int, 16)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			ch <- build(12+g%3).sum() + rec(5000+g*100, nil)
		}(g)
	}
	go func() { wg.Wait(); close(ch) }()
	var res []int
	for v := range ch {
		res = append(res, v)
	}
	sort.Ints(res)
	var errs []string
	for i := 0; i < 10; i++ {
		if _, err := mayPanic(i); err != nil {
			errs = append(errs, err.Error())
		}
	}
	fmt.Println(res, strings.Join(errs, ";"))
}
