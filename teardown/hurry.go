package teardown

import (
	"context"
	"time"
)

type hurryKey struct{}

// WithHurry returns a context under which a Run's grace wait (the time it
// gives SIGTERM to work) ends as soon as hurry is closed; everything after
// it -- the SIGKILL, the thaw, the verify, the cleanup -- still runs. It is
// what an interrupt means once a teardown has started: stop waiting and
// finish, where cancelling the context means stop signalling.
func WithHurry(ctx context.Context, hurry <-chan struct{}) context.Context {
	return context.WithValue(ctx, hurryKey{}, hurry)
}

// graceContext is the context the grace wait runs under: ctx bounded by
// the grace and, under WithHurry, by the hurry channel.
func graceContext(ctx context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	wctx, cancel := context.WithTimeout(ctx, grace)
	if hurry, _ := ctx.Value(hurryKey{}).(<-chan struct{}); hurry != nil {
		go func() {
			select {
			case <-hurry:
				cancel()
			case <-wctx.Done():
			}
		}()
	}
	return wctx, cancel
}
