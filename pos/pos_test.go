package pos

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
)

func TestPosString(t *testing.T) {
	tests := []struct {
		p     Pos
		want  string
		valid bool
	}{
		{Pos{File: "jobs/a.yaml", Line: 3, Col: 7}, "jobs/a.yaml:3:7", true},
		{Pos{Line: 3, Col: 7}, "3:7", true},
		{Pos{Line: 12, Col: 1}, "12:1", true},
		{Pos{File: "a.sql", Line: 1, Col: 0}, "a.sql:1:0", true},
		{Pos{File: "a.sql"}, "a.sql", false},
		{Pos{File: "a.sql", Col: 4}, "a.sql", false},
		{Pos{}, "", false},
		{Pos{Col: 9}, "", false},
		{Pos{File: "dir with space/ü.yaml", Line: 2, Col: 5}, "dir with space/ü.yaml:2:5", true},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.p, got, tt.want)
		}
		if got := tt.p.IsValid(); got != tt.valid {
			t.Errorf("%#v.IsValid() = %v, want %v", tt.p, got, tt.valid)
		}
	}
}

func TestAdvance(t *testing.T) {
	start := Pos{File: "f", Line: 1, Col: 1}
	tests := []struct {
		name string
		from Pos
		text string
		want Pos
	}{
		{"empty", start, "", start},
		{"ascii", start, "abc", Pos{"f", 1, 4}},
		{"newline", start, "\n", Pos{"f", 2, 1}},
		{"line then text", start, "ab\ncd", Pos{"f", 2, 3}},
		{"blank lines", start, "a\n\n\n", Pos{"f", 4, 1}},
		{"two-byte char counts 2", start, "é", Pos{"f", 1, 3}},
		{"three-byte chars", start, "日本", Pos{"f", 1, 7}},
		{"four-byte char", start, "😀x", Pos{"f", 1, 6}},
		{"multi-byte then newline", start, "名前: 値\nx", Pos{"f", 2, 2}},
		{"CRLF: CR is a column", start, "ab\r\ncd", Pos{"f", 2, 3}},
		{"tab is one column", start, "\tx", Pos{"f", 1, 3}},
		{"from mid-line", Pos{"f", 5, 10}, "xyz", Pos{"f", 5, 13}},
		{"from mid-line across a newline", Pos{"f", 5, 10}, "x\nyz", Pos{"f", 6, 3}},
		{"zero pos", Pos{}, "ab\nc", Pos{"", 1, 2}},
	}
	for _, tt := range tests {
		if got := tt.from.Advance(tt.text); got != tt.want {
			t.Errorf("%s: %v.Advance(%q) = %v, want %v", tt.name, tt.from, tt.text, got, tt.want)
		}
	}
}

func TestAt(t *testing.T) {
	start := Pos{File: "job.sql", Line: 1, Col: 1}
	//           bytes: 0  1-2 3 4 5  6-8 9
	const text = "a" + "é" + "\n" + "b" + "\n" + "日" + "z"
	tests := []struct {
		off  int
		want Pos
	}{
		{0, Pos{"job.sql", 1, 1}},
		{1, Pos{"job.sql", 1, 2}}, // é
		{3, Pos{"job.sql", 1, 4}}, // the first newline: still line 1, after é's 2 bytes
		{4, Pos{"job.sql", 2, 1}}, // b
		{5, Pos{"job.sql", 2, 2}},
		{6, Pos{"job.sql", 3, 1}},  // 日
		{9, Pos{"job.sql", 3, 4}},  // z
		{10, Pos{"job.sql", 3, 5}}, // end of text
		{11, Pos{"job.sql", 3, 5}}, // clamped to the end
		{1000, Pos{"job.sql", 3, 5}},
		{-1, Pos{"job.sql", 1, 1}}, // clamped to the start
	}
	for _, tt := range tests {
		if got := start.At(text, tt.off); got != tt.want {
			t.Errorf("At(%d) = %v, want %v", tt.off, got, tt.want)
		}
	}
	// A statement that starts mid-file.
	if got := (Pos{"x.sql", 7, 3}).At("SELECT\n  bad", 9); got != (Pos{"x.sql", 8, 3}) {
		t.Errorf("At from 7:3 = %v, want x.sql:8:3", got)
	}
}

var errSentinel = errors.New("sentinel")

type codeError struct{ code int }

func (e *codeError) Error() string { return fmt.Sprintf("code %d", e.code) }

func TestErrorf(t *testing.T) {
	p := Pos{File: "a.yaml", Line: 2, Col: 3}
	e := Errorf(p, "bad %s: %w", "thing", errSentinel)
	if got, want := e.Error(), "a.yaml:2:3: bad thing: sentinel"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if e.Msg != "bad thing: sentinel" || e.Pos != p {
		t.Errorf("Errorf = %+v", e)
	}
	if e.Err != errSentinel || !errors.Is(e, errSentinel) {
		t.Errorf("Err = %v, want the %%w argument", e.Err)
	}

	plain := Errorf(p, "no cause %d", 1)
	if plain.Err != nil || errors.Unwrap(plain) != nil {
		t.Errorf("Errorf without %%w has cause %v", plain.Err)
	}

	nopos := Errorf(Pos{}, "oops")
	if got := nopos.Error(); got != "oops" {
		t.Errorf("Error() without a position = %q, want oops", got)
	}
	fileOnly := Errorf(Pos{File: "x.sql"}, "empty file")
	if got := fileOnly.Error(); got != "x.sql: empty file" {
		t.Errorf("Error() with only a file = %q", got)
	}

	// Two %w verbs: both causes stay reachable.
	ce := &codeError{7}
	two := Errorf(p, "%w and %w", errSentinel, ce)
	if !errors.Is(two, errSentinel) {
		t.Errorf("%v: errors.Is(sentinel) = false with two %%w", two)
	}
	var got *codeError
	if !errors.As(two, &got) || got != ce {
		t.Errorf("%v: errors.As(*codeError) failed with two %%w", two)
	}
	if two.Error() != "a.yaml:2:3: sentinel and code 7" {
		t.Errorf("Error() = %q", two.Error())
	}
}

func TestListErr(t *testing.T) {
	var empty List
	if err := empty.Err(); err != nil {
		t.Errorf("empty List.Err() = %v (%T), want nil", err, err)
	}
	if err := (List{}).Err(); err != nil {
		t.Errorf("List{}.Err() = %v, want nil", err)
	}

	var l List
	l.Add(Pos{"b.yaml", 1, 1}, "b1")
	l.Add(Pos{"a.yaml", 10, 2}, "a10:2")
	l.Add(Pos{"a.yaml", 2, 9}, "a2:9")
	l.Add(Pos{"a.yaml", 2, 3}, "a2:3 first")
	l.Add(Pos{"a.yaml", 2, 3}, "a2:3 second") // equal positions keep their order
	l.Add(Pos{}, "no position")
	l.Add(Pos{"a.yaml", 9, 40}, "a9:40")
	err := l.Err()
	want := strings.Join([]string{
		"no position",
		"a.yaml:2:3: a2:3 first",
		"a.yaml:2:3: a2:3 second",
		"a.yaml:2:9: a2:9",
		"a.yaml:9:40: a9:40",
		"a.yaml:10:2: a10:2",
		"b.yaml:1:1: b1",
	}, "\n")
	if err == nil || err.Error() != want {
		t.Errorf("Err() =\n%v\nwant\n%s", err, want)
	}
	var list List
	if !errors.As(err, &list) || len(list) != 7 {
		t.Errorf("Err() is %T with %d errors, want a List of 7", err, len(list))
	}
}

func TestListAppend(t *testing.T) {
	at := Pos{"job.yaml", 4, 1}
	inner := List{
		Errorf(Pos{"job.yaml", 2, 1}, "inner one"),
		Errorf(Pos{"job.yaml", 3, 1}, "inner two"),
	}
	pe := Errorf(Pos{"job.yaml", 1, 5}, "positioned: %w", errSentinel)

	var l List
	l.Append(at, nil)
	if len(l) != 0 {
		t.Fatalf("Append(nil) added %d errors", len(l))
	}
	l.Append(at, inner.Err())                             // flattened
	l.Append(at, pe)                                      // kept as is
	l.Append(at, fmt.Errorf("context: %w", pe))           // the *Error inside is kept
	l.Append(at, fs.ErrNotExist)                          // wrapped at the position
	l.Append(at, fmt.Errorf("outer: %w", List{inner[0]})) // a wrapped List is flattened too
	if len(l) != 6 {
		t.Fatalf("len = %d, want 6: %v", len(l), l)
	}
	if l[0] != inner[0] || l[1] != inner[1] {
		t.Error("a List was not flattened into its elements")
	}
	if l[2] != pe || l[3] != pe {
		t.Error("a *Error was not kept as the same value")
	}
	if l[4].Pos != at || l[4].Msg != "file does not exist" || l[4].Err != fs.ErrNotExist {
		t.Errorf("plain error appended as %+v, want it at %v with Err set", l[4], at)
	}
	if l[5] != inner[0] {
		t.Error("a wrapped List was not flattened")
	}
}

func TestListErrorsIsAs(t *testing.T) {
	ce := &codeError{42}
	var l List
	l.Add(Pos{"f", 3, 1}, "three")
	l.Add(Pos{"f", 1, 1}, "wraps the sentinel: %w", errSentinel)
	l.Append(Pos{"f", 2, 1}, ce)
	err := l.Err()

	if !errors.Is(err, errSentinel) {
		t.Error("errors.Is does not reach a cause inside the List")
	}
	if errors.Is(err, fs.ErrNotExist) {
		t.Error("errors.Is found a cause that is not in the List")
	}
	var got *codeError
	if !errors.As(err, &got) || got.code != 42 {
		t.Errorf("errors.As(*codeError) = %v", got)
	}
	var pe *Error
	if !errors.As(err, &pe) || pe.Msg != "wraps the sentinel: sentinel" {
		t.Errorf("errors.As(*Error) = %+v, want the first error after sorting", pe)
	}
	// Through further wrapping, as callers return it.
	wrapped := fmt.Errorf("job x: %w", err)
	if !errors.Is(wrapped, errSentinel) || !errors.As(wrapped, &got) {
		t.Error("errors.Is/As do not see through a wrapped List")
	}
	if n := len(l.Unwrap()); n != 3 {
		t.Errorf("Unwrap() has %d errors, want 3", n)
	}
}
