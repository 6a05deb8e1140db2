//go:build torture

package reap

// The full run (`make torture`); TORTURE_REAP overrides it.
const defaultReapPasses = 50
