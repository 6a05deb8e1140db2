package teardown

import (
	"context"
	"time"
)

type endGraceKey struct{}

// WithEndGrace returns a context under which a Run's grace wait (the time it
// gives SIGTERM to work) ends as soon as endGrace is closed; everything after
// it -- the SIGKILL, the thaw, the verify, the cleanup -- still runs. It is
// what an interrupt means once a teardown has started: stop waiting and
// finish, where cancelling the context means stop signalling.
func WithEndGrace(ctx context.Context, endGrace <-chan struct{}) context.Context {
	return context.WithValue(ctx, endGraceKey{}, endGrace)
}

// graceContext is the context the grace wait runs under: ctx bounded by
// the grace and, under WithEndGrace, by its channel.
func graceContext(ctx context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	wctx, cancel := context.WithTimeout(ctx, grace)
	if endGrace, _ := ctx.Value(endGraceKey{}).(<-chan struct{}); endGrace != nil {
		go func() {
			select {
			case <-endGrace:
				cancel()
			case <-wctx.Done():
			}
		}()
	}
	return wctx, cancel
}
