package cli

import (
	"bytes"
	"io"
)

// dedupLines writes each Write's bytes to w with a line that repeats the
// line just before it left out. pgx reports a failed connect with one
// line per attempt, and under the default sslmode=prefer it tries each
// host twice (with TLS, then without), so a refused connection printed
// the same dial error twice (`…: dial error: dial tcp 127.0.0.1:5499:
// connect: connection refused`). Every message sluice prints is one Write
// (one Fprintf, one log record), so lines of different messages are never
// compared. It reports len(p) written when w took everything it was given.
// Code that asks whether stderr is a terminal looks at w (newProgress).
type dedupLines struct{ w io.Writer }

func (d dedupLines) Write(p []byte) (int, error) {
	if bytes.Count(p, []byte{'\n'}) < 2 {
		return d.w.Write(p)
	}
	lines := bytes.SplitAfter(p, []byte{'\n'})
	out := make([]byte, 0, len(p))
	var prev []byte
	for i, l := range lines {
		if i > 0 && len(l) > 0 && bytes.Equal(bytes.TrimSuffix(l, []byte{'\n'}), bytes.TrimSuffix(prev, []byte{'\n'})) {
			continue
		}
		out = append(out, l...)
		prev = l
	}
	if _, err := d.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}
