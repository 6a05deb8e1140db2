package model

// chunkLen is the capacity of a list started from a chunks: about the
// members of a sandbox.
const chunkLen = 16

// chunks hands out the first chunkLen slots of many short lists (the
// processes of each sandbox, of each cgroup) from one backing array, so a
// thousand sandboxes cost one allocation instead of five doublings each
// (those appends were the largest share of a steady Build's allocations).
// A list that outgrows its chunk moves out as append does; a
// chunk's capacity ends at its end, so lists never overlap.
type chunks[T any] struct {
	free []T
}

func newChunks[T any](n int) chunks[T] { return chunks[T]{free: make([]T, n)} }

func (c *chunks[T]) add(list []T, v T) []T {
	if list == nil && len(c.free) >= chunkLen {
		list, c.free = c.free[:0:chunkLen], c.free[chunkLen:]
	}
	return append(list, v)
}
