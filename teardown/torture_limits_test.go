//go:build !torture

package teardown

import "time"

// The bounded subset `make test` runs: the same tests as `make torture`,
// sized to finish in well under a minute together.
const (
	tortureLong          = false
	defaultTrials        = 8
	defaultReuseRounds   = 12
	defaultChurn         = 3 * time.Second
	defaultWatch         = 20 * time.Second
	defaultEngineRepeats = 10
	defaultTruthTrials   = 6
	defaultStopRounds    = 8
	defaultFloodTrials   = 2
)
