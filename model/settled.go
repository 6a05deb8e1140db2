package model

// SettledCgroups names the dedicated v2 cgroups of the sandboxes of v
// nothing of whose processes a front end shows (see proc.ScanHints):
// those outside n.Shown, not expanded (n.Open) and not in the detail pane
// (n.Full). Every process in a dedicated cgroup is its sandbox's member,
// so no other row shows one. Nil when n.Shown is: every sandbox is shown.
func SettledCgroups(v *View, n ResourceNeeds) map[string]bool {
	if v == nil || n.Shown == nil {
		return nil
	}
	out := map[string]bool{}
	for _, sb := range v.Sandboxes {
		if sb.Cgroup == "" || sb.Cgroup == "/" {
			continue
		}
		if k := sb.Key(); n.Shown[k] || n.Open[k] || n.Full[k] {
			continue
		}
		out[sb.Cgroup] = true
	}
	return out
}
