package model

// foldUnqualified folds a sandbox that a rule found without a namespace
// into the one sandbox of the same runtime and ID that has one: Docker's
// /docker/<id> cgroup says nothing of the "moby" namespace its shim's argv
// names, and a Kata QEMU's -name nothing of its shim's. With two
// namespaced candidates the namespace cannot be told, and the sandbox
// stays apart.
func (w *build) foldUnqualified() {
	var bare []*Sandbox
	for _, sb := range w.byID {
		if sb.Namespace == "" {
			bare = append(bare, sb)
		}
	}
	if len(bare) == 0 {
		return // the usual case: no index of the others needed
	}
	named := map[string][]*Sandbox{} // runtime:id -> namespaced sandboxes
	for _, sb := range w.byID {
		if sb.Namespace != "" {
			k := sb.Runtime + ":" + sb.ID
			named[k] = append(named[k], sb)
		}
	}
	for _, src := range bare {
		k := src.Runtime + ":" + src.ID
		dsts := named[k]
		if len(dsts) == 0 && w.prev != nil {
			// What named the namespace (the shim) is gone, but the
			// sandbox was seen with it: it keeps its identity.
			if old := w.prev.byKey(k); old != nil && old.Namespace != "" && old.Runtime == src.Runtime && old.ID == src.ID {
				dsts = []*Sandbox{w.sandbox(Match{Rule: src.Rule, ID: src.ID, Namespace: old.Namespace, By: src.MatchedBy})}
			}
		}
		if len(dsts) == 1 {
			w.fold(dsts[0], src)
			w.folded[k] = dsts[0]
		}
	}
}

// fold moves every member of src into dst, which has the same runtime and
// ID: one sandbox seen two ways, not an alias.
func (w *build) fold(dst, src *Sandbox) {
	if w.firstR[src] < w.firstR[dst] {
		w.firstR[dst] = w.firstR[src]
		dst.Rule, dst.MatchedBy = src.Rule, src.MatchedBy
	}
	w.merge(dst, src, false)
}
