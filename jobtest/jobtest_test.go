package jobtest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/pos"
	_ "github.com/sluicedata/sluice/sources/sqlite"
)

const job = `source: s
select: [id, name, amount]
sink: {table: t, mode: merge, keys: [id]}
`

const setup = `setup: |
  CREATE TABLE src (id INT, name STRING, amount DECIMAL(10,2), PRIMARY KEY (id));
  ALTER TABLE src SET PROPERTIES ('change_tracking' = 'true');
  CREATE TABLE STREAM s ON TABLE src WITH PROPERTIES ('TABLE_STREAM_MODE' = 'STANDARD');
`

// write puts the job and its test file in a new directory and returns the
// test file's path.
func write(t *testing.T, test string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range map[string]string{"j.yaml": job, "j.test.yaml": test} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "j.test.yaml")
}

func runFile(t *testing.T, path string, opt Options) []Result {
	t.Helper()
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return Run(context.Background(), f, opt)
}

func TestPassingAndFailingCases(t *testing.T) {
	path := write(t, setup+`cases:
  - name: passes
    source:
      - {id: 1, name: a, amount: 1}
    changes:
      - UPDATE src SET amount = 2 WHERE id = 1
      - {__change_type: INSERT, id: 2, name: b, amount: 3.5}
    expect:
      - {id: 1, name: a, amount: 2.00}
      - {id: 2, name: b, amount: 3.50}
  - name: fails
    runs:
      - - INSERT INTO src VALUES (1, 'a', 1), (2, '', 2), (3, 'c', 3)
      - - {__change_type: UPDATE_AFTER, id: 3, name: c2}
    expect:
      - {id: 1, name: a, amount: 1.5}
      - {id: 2, name: null, amount: 2}
      - {id: 3, name: c2, amount: 3}
      - {id: 4, name: d, amount: 4}
`)
	res := runFile(t, path, Options{})
	if len(res) != 2 {
		t.Fatalf("%d results, want 2", len(res))
	}
	if !res[0].Passed() {
		t.Errorf("case passes: err %v, diff %q", res[0].Err, res[0].Diff)
	}
	if res[1].Err != nil {
		t.Fatal(res[1].Err)
	}
	// The source's rows computed here: 1 has 1.00 (not 1.5), 2 has '' (not
	// NULL), 3 was updated, 4 never existed.
	want := []string{
		`- {id: 1, name: a, amount: 1.5}`,
		`+ {id: 1, name: a, amount: 1.00}`,
		`- {id: 2, name: null, amount: 2}`,
		`+ {id: 2, name: "", amount: 2.00}`,
		`- {id: 4, name: d, amount: 4}`,
	}
	if !slices.Equal(res[1].Diff, want) {
		t.Errorf("diff:\n%s\nwant:\n%s", strings.Join(res[1].Diff, "\n"), strings.Join(want, "\n"))
	}
	if res[1].Pos.Line != 15 || res[1].Pos.Col != 5 {
		t.Errorf("failing case at %s, want line 15 col 5", res[1].Pos)
	}
}

func TestMalformedFile(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"unknown keys", "cases:\n  - name: x\n    chnges: []\n    expect: []\nsetp: x\n", []string{
			`t.test.yaml:3:5: bad test file: unknown key "chnges" in a case (known keys: name, source, target, changes, runs, expect)`,
			`t.test.yaml:5:1: bad test file: unknown key "setp" in the test file (known keys: job, setup, setup_files, requires, reason, cases)`,
		}},
		{"wrong kinds", "cases:\n  - name: x\n    changes: {a: 1}\n    expect: [1]\n", []string{
			`t.test.yaml:3:14: bad test file: changes must be a list of statements or rows with __change_type, found a mapping`,
			`t.test.yaml:4:14: bad test file: a row of expect must be a mapping, found a number`,
		}},
		{"change types", "cases:\n  - changes:\n      - {id: 1}\n      - {__change_type: UPDATE_BEFORE, id: 1}\n", []string{
			`t.test.yaml:2:5: bad test file: case "line 2" has no expect: the target's rows after the last run`,
			`t.test.yaml:3:9: bad test file: a changed row needs __change_type (INSERT, UPDATE_AFTER or DELETE)`,
			`t.test.yaml:4:9: bad test file: __change_type "UPDATE_BEFORE": a change is INSERT, UPDATE_AFTER or DELETE`,
		}},
		{"syntax", "cases: [\n", []string{`t.test.yaml:1:8: bad test file:`}},
		{"postgres without reason", "requires: postgres\ncases: []\n", []string{`t.test.yaml:1:1: bad test file: requires: postgres needs a reason`}},
		{"setup as a list", "setup:\n  - CREATE TABLE a (id INT)\ncases: []\n", []string{`t.test.yaml:2:3: bad test file: setup must be one string of statements separated by ';' (a | block), found a list`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.test.yaml", []byte(tc.src))
			if !errors.Is(err, ErrBadFile) {
				t.Fatalf("err = %v, want ErrBadFile", err)
			}
			var list pos.List
			errors.As(err, &list)
			if len(list) != len(tc.want) {
				t.Fatalf("%d errors, want %d:\n%v", len(list), len(tc.want), err)
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(list[i].Error(), w) {
					t.Errorf("error %d = %q, want %q", i, list[i].Error(), w)
				}
			}
		})
	}
}

// A case that needs PostgreSQL is skipped, with the file's reason, without
// a server.
func TestPostgresCaseSkipped(t *testing.T) {
	path := write(t, "requires: postgres\nreason: a jsonb column\n"+setup+"cases:\n  - changes: []\n    expect: []\n")
	res := runFile(t, path, Options{})
	if len(res) != 1 || !strings.Contains(res[0].Skipped, "a jsonb column") || res[0].Passed() {
		t.Errorf("results %+v, want one skipped naming the reason", res)
	}
}

// A statement of a case that fails names its position in the test file.
func TestChangeErrorHasPosition(t *testing.T) {
	path := write(t, setup+"cases:\n  - changes:\n      - INSERT INTO nosuch VALUES (1)\n    expect: []\n")
	res := runFile(t, path, Options{})
	if res[0].Err == nil || !strings.Contains(res[0].Err.Error(), "j.test.yaml:7:9:") {
		t.Errorf("err = %v, want it at j.test.yaml:7:9", res[0].Err)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{setup + "cases:\n  - changes: [a]\n    expect: [{a: 1}]\n", "cases: [\n", "job: x\nrequires: postgres\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		file, err := Parse("f.test.yaml", src)
		if (file == nil) == (err == nil) {
			t.Fatalf("Parse = %v, %v: want exactly one of a file and an error", file, err)
		}
		if err != nil && !errors.Is(err, ErrBadFile) {
			t.Fatalf("error %v does not wrap ErrBadFile", err)
		}
	})
}
