//go:build !torture

package reap

// The bounded run `make test` does: the same test as `make torture`.
const defaultReapPasses = 2
