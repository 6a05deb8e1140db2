package main

import (
	"sync"

	"github.com/sandtop/sandtop/teardown"
)

// maxParallelTeardowns bounds how many targets one kill tears down at
// once: their graces run together, while a batch of hundreds does not open
// hundreds of pidfd sets and verify scans at the same moment.
const maxParallelTeardowns = 16

// orderedEmit prints the events of teardowns that run together as if they
// had run one after the other: the first unfinished target's events go
// out as they happen, the later ones' wait in order behind it.
type orderedEmit struct {
	mu   sync.Mutex
	out  func(teardown.Event)
	head int
	held [][]teardown.Event
	fin  []bool
}

func newOrderedEmit(n int, out func(teardown.Event)) *orderedEmit {
	return &orderedEmit{out: out, held: make([][]teardown.Event, n), fin: make([]bool, n)}
}

// emitter is the emit function of target i.
func (o *orderedEmit) emitter(i int) func(teardown.Event) {
	return func(ev teardown.Event) {
		o.mu.Lock()
		defer o.mu.Unlock()
		if i == o.head {
			o.out(ev)
			return
		}
		o.held[i] = append(o.held[i], ev)
	}
}

// done marks target i finished and lets the next ones' events out.
func (o *orderedEmit) done(i int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.fin[i] = true
	for o.head < len(o.fin) && o.fin[o.head] {
		o.head++
		if o.head < len(o.held) {
			for _, ev := range o.held[o.head] {
				o.out(ev)
			}
			o.held[o.head] = nil
		}
	}
}
