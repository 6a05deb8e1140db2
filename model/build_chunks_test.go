package model

import (
	"slices"
	"testing"
)

// TestChunks: lists started from one backing array never see each other's
// elements, whether they stay in their chunk, outgrow it, or start after
// the array ran out.
func TestChunks(t *testing.T) {
	c := newChunks[int](3 * chunkLen)
	lists := make([][]int, 5) // more lists than chunks
	want := make([][]int, 5)
	// Interleave the appends; list i gets i*10 elements, so some outgrow
	// their chunk while their neighbours are still filling theirs.
	for round := range 50 {
		for i := range lists {
			if round < i*10 {
				v := i*1000 + round
				lists[i] = c.add(lists[i], v)
				want[i] = append(want[i], v)
			}
		}
	}
	for i := range lists {
		if !slices.Equal(lists[i], want[i]) {
			t.Errorf("list %d = %v, want %v", i, lists[i], want[i])
		}
	}
}
