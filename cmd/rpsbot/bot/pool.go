package bot

import (
	"context"
	"sync"
)

// Pool runs the bots' actions on a fixed number of workers shared by every lobby of a run, which
// bounds the requests in flight (the run's concurrency) however many bots there are.
type Pool struct {
	tasks chan func()
	wg    sync.WaitGroup
}

// NewPool starts n workers.
func NewPool(n int) *Pool {
	p := &Pool{tasks: make(chan func())}
	for range max(n, 1) {
		p.wg.Go(func() {
			for f := range p.tasks {
				f()
			}
		})
	}
	return p
}

// submit hands f to a worker, waiting for one to be free; false if ctx ended first.
func (p *Pool) submit(ctx context.Context, f func()) bool {
	select {
	case p.tasks <- f:
		return true
	case <-ctx.Done():
		return false
	}
}

// Close stops the workers once every submitted task has run.
func (p *Pool) Close() {
	close(p.tasks)
	p.wg.Wait()
}
