package dsl

import (
	"errors"
	"strings"
	"testing"
)

// orChain is a filter of n terms "id = 0 OR id = 1 OR …".
func orChain(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteString("id = ")
		b.WriteString(strings.Repeat("7", 1+i%3))
	}
	return b.String()
}

func TestJobFileLimits(t *testing.T) {
	big := "name: j\nsource: s\nsink: {table: t}\nfilter: \"" + orChain(100000) + "\"\n" // ≈ 1.2 MB
	for _, tc := range []struct {
		name, file, src string
		max             int
		sentinel        error
		want            string // file:line:col: message prefix
	}{
		{"larger than the default limit", "j.yaml", big, DefaultMaxFileSize, ErrTooLarge, "MiB, larger than the limit of 1 MiB (raise it with --max-job-size)"},
		{"larger than a given limit", "j.sql", strings.Repeat("-- c\n", 300), 1000, ErrTooLarge, "j.sql:1:1: job file is 1.5 KiB, larger than the limit of 1000 bytes"},
		{"invalid UTF-8 in a table name", "j.yaml", "name: j\nsource: s\nsink: {table: t\xffutf}\n", -1, ErrBadEncoding, "j.yaml:3:16: invalid UTF-8 (byte 0xff)"},
		{"invalid UTF-8 in a filter literal", "j.sql", "-- name: j\nINSERT INTO t SELECT * FROM s\nWHERE v = 'a\xc3'", -1, ErrBadEncoding, "j.sql:3:13: invalid UTF-8 (byte 0xc3)"},
		{"YAML nested too deeply", "j.yaml", "name: j\nx: " + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "\n", -1, ErrTooLarge, "j.yaml:2:68: YAML nested too deeply (limit 64)"},
		{"statement too deeply nested", "j.sql", "-- name: j\nSELECT " + strings.Repeat("(", 300) + "1" + strings.Repeat(")", 300) + ";\nINSERT INTO t SELECT * FROM s", -1, ErrTooLarge, "j.sql:2:136: statement too deeply nested (limit 128)"},
		{"statement with too many operators", "j.sql", "-- name: j\nDELETE FROM x WHERE " + orChain(20000) + ";\nINSERT INTO t SELECT * FROM s", -1, ErrTooLarge, "statement too large: more than 10000 operators (limit 10000)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseJobPartialMax(tc.file, []byte(tc.src), tc.max)
			if err == nil || !errors.Is(err, tc.sentinel) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q (%v)", err, tc.want, tc.sentinel)
			}
		})
	}
	// Under the limit, the same files parse.
	if _, err := ParseJobPartialMax("j.yaml", []byte(big), -1); err != nil {
		t.Fatalf("no limit: %v", err)
	}
	if _, err := ParseJob("j.yaml", []byte("name: j\nsource: s\nsink: {table: \"t\xc3\xa9\"}\nfilter: \"v = '\xe2\x82\xac'\"\n")); err != nil {
		t.Fatalf("valid UTF-8: %v", err)
	}
}

func TestInvalidUTF8AllReported(t *testing.T) {
	_, err := ParseJob("j.yaml", []byte("name: j\xff\nsource: s\xfe\nsink: {table: t}\n"))
	if err == nil || !strings.Contains(err.Error(), "j.yaml:1:8:") || !strings.Contains(err.Error(), "j.yaml:2:10:") {
		t.Fatalf("want both positions, got %v", err)
	}
}
