package format

// State names a one-letter process state as proc(5) documents it.
func State(s byte) string {
	switch s {
	case 'R':
		return "running"
	case 'S':
		return "sleeping"
	case 'D':
		return "disk sleep"
	case 'Z':
		return "zombie"
	case 'T':
		return "stopped"
	case 't':
		return "tracing stop"
	case 'X':
		return "dead"
	case 'I':
		return "idle"
	case 'P':
		return "parked"
	case 'W':
		return "waking"
	case 'K':
		return "wakekill"
	}
	return "unknown"
}
