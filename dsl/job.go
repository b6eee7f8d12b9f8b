package dsl

import (
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/pos"
)

// ParseJob parses the job file named file with contents src, choosing the
// format by extension: .yaml and .yml are YAML (ParseYAML), .sql is SQL
// (ParseSQL). It does no I/O; file is used for positions and the default
// job name (the base name without extension).
//
// It returns the job, or nil and a pos.List with every error found in the
// file (each a *pos.Error at file:line:col wrapping a sentinel of this
// package). Nothing is resolved against a database and ${ENV} references
// are kept as written (see ExpandEnv).
func ParseJob(file string, src []byte) (*plan.Job, error) {
	job, err := ParseJobPartial(file, src)
	if err != nil {
		return nil, err
	}
	return job, nil
}

// ParseJobPartial is ParseJob that, when the file has errors, also returns
// what did parse: a job whose erroneous parts are left zero (nil only when
// nothing could be read, such as a YAML syntax error or an unknown
// extension). Checks that need the job — schedules, expression syntax —
// can then report their errors together with the file's.
func ParseJobPartial(file string, src []byte) (*plan.Job, error) {
	return ParseJobPartialMax(file, src, DefaultMaxFileSize)
}

// ParseJobPartialMax is ParseJobPartial with another size limit: a file
// longer than maxSize bytes (negative: no limit) is refused with an error
// wrapping ErrTooLarge. (Every parse also refuses invalid UTF-8, wrapping
// ErrBadEncoding at each offending byte's position, and YAML flow
// collections nested deeper than MaxYAMLNesting, wrapping ErrTooLarge.)
func ParseJobPartialMax(file string, src []byte, maxSize int) (*plan.Job, error) {
	if err := CheckFileSize(file, int64(len(src)), maxSize); err != nil {
		return nil, err
	}
	switch strings.ToLower(filepath.Ext(file)) {
	case ".yaml", ".yml":
		return parseYAML(file, src)
	case ".sql":
		return parseSQL(file, src)
	}
	return nil, pos.List{errAt(pos.Pos{File: file, Line: 1, Col: 1}, ErrNotSupported,
		"unknown job file extension %q (want .yaml, .yml or .sql)", filepath.Ext(file))}.Err()
}

// defaultName is the job name implied by a file name: its base name
// without extension.
func defaultName(file string) string {
	base := filepath.Base(strings.ReplaceAll(file, "\\", "/"))
	if base == "." || base == "/" {
		return ""
	}
	return strings.TrimSuffix(base, filepath.Ext(base))
}

// checkName reports whether name is a valid job name: letters, digits, '_',
// '-' and '.', starting with a letter, digit or '_', at most 128 bytes. It
// returns a description of the problem, or "".
func checkName(name string) string {
	if name == "" {
		return "the job name is empty"
	}
	if len(name) > 128 {
		return "the job name is longer than 128 bytes"
	}
	for i, r := range name {
		ok := r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || (i > 0 && (r == '-' || r == '.'))
		if !ok {
			return "job name " + quote(name) + " may hold only letters, digits, '_', '-' and '.', and must start with a letter, digit or '_'"
		}
	}
	return ""
}

// setName sets job.Name to name, or to the file's default name when name is
// "", and reports a bad name at p.
func setName(job *plan.Job, name string, p pos.Pos, errs *pos.List) {
	if name == "" {
		name = defaultName(job.File)
		if msg := checkName(name); msg != "" {
			*errs = append(*errs, errAt(p, ErrBadValue, "%s (the name defaults to the file's base name; set name explicitly)", msg))
			return
		}
	} else if msg := checkName(name); msg != "" {
		*errs = append(*errs, errAt(p, ErrBadValue, "%s", msg))
		return
	}
	job.Name = name
}

// quote quotes s for an error message, shortened when long.
func quote(s string) string { return strconv.Quote(clip(s, 60)) }

// clip shortens s to at most n bytes, cutting at a rune boundary and
// marking the cut with "...".
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// suggest returns ` (did you mean "x"?)` for the known word closest to
// word, or "" when none is close.
func suggest(word string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if d := editDistance(strings.ToLower(word), strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	if best == "" {
		return ""
	}
	return ` (did you mean "` + best + `"?)`
}

func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 99
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
