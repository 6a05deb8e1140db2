package teardown

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// FuzzParseStat is teardown's own stat parser under hostile input: comm is
// exactly the bytes between the first '(' and the last ')', the state is
// one byte, and any comm (prctl(PR_SET_NAME) takes any bytes but NUL)
// leaves the fields after it intact, since they name the process to pin.
func FuzzParseStat(f *testing.F) {
	f.Add([]byte("42 (sleep) S 7 42 7 0 -1 4194304 1 0 0 0 0 0 0 0 20 0 1 0 12345 1 2 3"), "sleep")
	f.Add([]byte("9 (a) b (c)) Z 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 3 0 777"), ") Z 1 (")
	f.Add([]byte("9 x S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20"), "")
	f.Fuzz(func(t *testing.T, b []byte, comm string) {
		if st, err := parseStat(b); err == nil {
			open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
			if st.comm != string(b[open+1:end]) || st.state == ' ' || st.ppid < 0 || st.threads < 0 {
				t.Errorf("parseStat(%q) = %+v", b, st)
			}
		}
		if strings.ContainsRune(comm, 0) {
			return
		}
		line := fmt.Sprintf("4242 (%s) S 77 4242 4242 0 -1 4194560 0 0 0 0 5 6 0 0 20 0 2 0 987654 1 2 3\n", comm)
		want := stat{comm: comm, state: 'S', ppid: 77, flags: 4194560, threads: 2, start: 987654}
		if got, err := parseStat([]byte(line)); err != nil || got != want {
			t.Errorf("parseStat(%q) = %+v, %v; want %+v", line, got, err, want)
		}
	})
}
