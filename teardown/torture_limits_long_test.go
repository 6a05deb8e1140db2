//go:build torture

package teardown

import "time"

// The full torture run (`make torture`, go test -tags torture). Every
// figure can still be overridden from the environment: TORTURE_N,
// TORTURE_REUSE, TORTURE_CHURN, TORTURE_WATCH, TORTURE_TRUTH, FLOOD_TRIALS, TORTURE_SEED.
const (
	tortureLong          = true
	defaultTrials        = 200
	defaultReuseRounds   = 300
	defaultChurn         = 30 * time.Second
	defaultWatch         = 10 * time.Minute
	defaultEngineRepeats = 100
	defaultTruthTrials   = 120
	defaultStopRounds    = 100
	defaultFloodTrials   = 20
)
