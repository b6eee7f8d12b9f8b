package cli

import (
	"strings"
	"testing"
)

func TestDedupLines(t *testing.T) {
	dial := "\t127.0.0.1:5499 (127.0.0.1): dial error: dial tcp 127.0.0.1:5499: connect: connection refused"
	for _, tc := range []struct{ name, in, want string }{
		{"one line", "a\n", "a\n"},
		{"no newline", "a", "a"},
		{"pgx twice", "j: FAILED: failed to connect:\n" + dial + "\n" + dial + "\n", "j: FAILED: failed to connect:\n" + dial + "\n"},
		{"last without newline", "x\n" + dial + "\n" + dial, "x\n" + dial + "\n"},
		{"apart", "a\nb\na\n", "a\nb\na\n"},
		{"empty lines kept once", "a\n\n\nb\n", "a\n\nb\n"},
	} {
		var b strings.Builder
		n, err := dedupLines{&b}.Write([]byte(tc.in))
		if err != nil || n != len(tc.in) || b.String() != tc.want {
			t.Errorf("%s: wrote %q (n=%d, err %v), want %q (n=%d)", tc.name, b.String(), n, err, tc.want, len(tc.in))
		}
	}
}
