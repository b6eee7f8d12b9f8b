package jobschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/goccy/go-yaml"

	"github.com/sluicedata/sluice/dsl"
)

func loadSchema(t *testing.T) map[string]any {
	t.Helper()
	var s map[string]any
	dec := json.NewDecoder(bytes.NewReader(JSON()))
	dec.UseNumber()
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("schema is not valid JSON: %v", err)
	}
	return s
}

func TestSchemaDocument(t *testing.T) {
	s := loadSchema(t)
	if s["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$schema = %v", s["$schema"])
	}
	if s["$id"] != ID {
		t.Errorf("$id = %v, want %s", s["$id"], ID)
	}
	if s["additionalProperties"] != false {
		t.Error("top level must forbid unknown keys")
	}
	props := s["properties"].(map[string]any)
	var keys []string
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	// The keys of dsl's YAML walk (dsl/yaml.go jobKeys).
	want := []string{"connection", "filter", "name", "schedule", "select", "sink", "source", "timezone"}
	if !reflect.DeepEqual(keys, want) {
		t.Errorf("top-level keys %v, want %v", keys, want)
	}
	sink := props["sink"].(map[string]any)
	if sink["additionalProperties"] != false {
		t.Error("sink must forbid unknown keys")
	}
	modes := sink["properties"].(map[string]any)["mode"].(map[string]any)["enum"]
	if fmt.Sprint(modes) != "[append overwrite errorifexists ignore merge history]" {
		t.Errorf("mode enum %v", modes)
	}
	// Every keyword is one the checker below understands, so that a test
	// pass means something.
	var walk func(path string, v any)
	walk = func(path string, v any) {
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		for k, sub := range m {
			if !knownKeywords[k] {
				t.Errorf("%s: keyword %q is not checked by the test validator", path, k)
			}
			switch k {
			case "properties", "$defs", "dependentRequired":
				for name, p := range sub.(map[string]any) {
					walk(path+"/"+k+"/"+name, p)
				}
			case "oneOf", "anyOf", "allOf":
				for i, p := range sub.([]any) {
					walk(fmt.Sprintf("%s/%s/%d", path, k, i), p)
				}
			case "items", "not", "if", "then", "else", "additionalProperties":
				walk(path+"/"+k, sub)
			}
		}
	}
	walk("#", s)
}

// jobFiles are the checked-in YAML job files.
func jobFiles(t *testing.T) []string {
	var out []string
	for _, root := range []string{"../jobs", "../examples", "../dsl/testdata/jobs"} {
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil // the directory may not exist yet
			}
			if ext := filepath.Ext(p); !d.IsDir() && (ext == ".yaml" || ext == ".yml") && !dsl.IsTestFile(p) {
				out = append(out, p)
			}
			return nil
		})
	}
	return out
}

func yamlValue(t *testing.T, src []byte) any {
	t.Helper()
	js, err := yaml.YAMLToJSON(src)
	if err != nil {
		t.Fatalf("YAML: %v", err)
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestCheckedInJobsSatisfySchema(t *testing.T) {
	s := loadSchema(t)
	files := jobFiles(t)
	if len(files) == 0 {
		t.Skip("no checked-in YAML job files")
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if errs := validate(s, s, "", yamlValue(t, src)); len(errs) > 0 {
			t.Errorf("%s does not satisfy the schema:\n  %s", f, strings.Join(errs, "\n  "))
		}
	}
	t.Logf("checked %d job files", len(files))
}

func TestSchemaAcceptsAndRejects(t *testing.T) {
	s := loadSchema(t)
	cases := []struct {
		yaml string
		ok   bool
	}{
		{"source: s\nsink: {table: t}\n", true},
		{"name: orders_sync\nconnection: ${PG_URL}\nsource: {stream: s, columns: {amount: 'DECIMAL(10,2)'}}\nfilter: \"`__change_type` = 'INSERT'\"\nselect: [id, \"upper(name) AS n\"]\nsink: {table: t, mode: merge, keys: [id], connection: 'sqlite:t.db'}\nschedule: '@every 30s'\ntimezone: Asia/Shanghai\n", true},
		{"source: s\nsink: {stdout: true, format: jsonl}\nselect: '*'\n", true},
		{"source: s\nsink: {table: t, mode: merge, keys: id}\n", true},
		{"source: s\nsink: {table: t}\nslect: [a]\n", false},                  // unknown key
		{"sink: {table: t}\n", false},                                         // no source
		{"source: s\nsink: {table: t, mode: upsert}\n", false},                // bad mode
		{"source: s\nsink: {table: t, mode: merge}\n", false},                 // merge without keys
		{"source: s\nsink: {table: t, keys: [id]}\n", false},                  // keys without merge
		{"source: s\nsink: {table: t, stdout: true}\n", false},                // both
		{"source: s\nsink: {mode: append}\n", false},                          // neither
		{"source: s\nsink: {table: t, format: jsonl}\n", false},               // format needs stdout
		{"source: s\nsink: {stdout: true, mode: merge, keys: [id]}\n", false}, // stdout only appends
		{"source: s\nsink: {table: t}\ntimezone: UTC\n", false},               // timezone without schedule
		{"source: {columns: {a: INT}}\nsink: {table: t}\n", false},            // stream missing
		{"source: s\nsink: {table: t}\nselect: []\n", false},                  // empty select
		{"source: s\nsink: {table: t}\nname: 'bad name'\n", false},            // bad name
		{"source: s\nsink: {table: t}\nschedule: 5\n", false},                 // schedule must be text
		{"source: s\nsink: {table: t, keys: [id, id], mode: merge}\n", false}, // duplicate keys
		{"source: s\nsink: {table: t, mode: history, keys: [id]}\n", true},
		{"source: s\nsink: {table: t, mode: merge, keys: [id], on_delete: soft}\n", true},
		{"source: s\nsink: {table: t, mode: history}\n", false},                              // history without keys
		{"source: s\nsink: {table: t, mode: history, keys: [id], on_delete: soft}\n", false}, // on_delete only for merge
		{"source: s\nsink: {table: t, mode: merge, keys: [id], on_delete: purge}\n", false},  // bad on_delete
		{"source: s\nsink: {table: t, on_schema_change: fail}\n", true},
		{"source: s\nsink: {table: t, on_schema_change: rebuild}\n", false},    // bad on_schema_change
		{"source: s\nsink: {stdout: true, on_schema_change: ignore}\n", false}, // a target table only
	}
	for _, c := range cases {
		errs := validate(s, s, "", yamlValue(t, []byte(c.yaml)))
		if (len(errs) == 0) != c.ok {
			t.Errorf("%q: ok=%v, want %v (%v)", c.yaml, len(errs) == 0, c.ok, errs)
		}
	}
}

// knownKeywords are the JSON Schema keywords validate checks or that carry
// no constraint.
var knownKeywords = map[string]bool{
	"$schema": true, "$id": true, "title": true, "description": true, "default": true, "examples": true,
	"$ref": true, "$defs": true, "type": true, "properties": true, "additionalProperties": true,
	"required": true, "enum": true, "const": true, "oneOf": true, "anyOf": true, "allOf": true, "not": true,
	"if": true, "then": true, "else": true, "items": true, "minItems": true, "uniqueItems": true,
	"minLength": true, "maxLength": true, "pattern": true, "dependentRequired": true,
}

// validate is a small JSON Schema checker for the keywords the job schema
// uses. It returns the violations, empty when v satisfies sch.
func validate(root, sch map[string]any, path string, v any) []string {
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, path+": "+fmt.Sprintf(format, args...)) }
	sub := func(s any, p string, x any) []string { return validate(root, s.(map[string]any), p, x) }
	if ref, ok := sch["$ref"].(string); ok {
		target := any(root)
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			target = target.(map[string]any)[part]
		}
		errs = append(errs, sub(target, path, v)...)
	}
	if t, ok := sch["type"]; ok {
		types := []any{t}
		if list, ok := t.([]any); ok {
			types = list
		}
		match := false
		for _, ty := range types {
			match = match || typeOf(v) == ty || (ty == "number" && typeOf(v) == "integer")
		}
		if !match {
			fail("want %v, found %s", t, typeOf(v))
			return errs
		}
	}
	if e, ok := sch["enum"].([]any); ok {
		found := false
		for _, x := range e {
			found = found || jsonEqual(x, v)
		}
		if !found {
			fail("%v is not one of %v", v, e)
		}
	}
	if c, ok := sch["const"]; ok && !jsonEqual(c, v) {
		fail("want %v, found %v", c, v)
	}
	if str, ok := v.(string); ok {
		if n, ok := sch["minLength"].(json.Number); ok && int64(utf8.RuneCountInString(str)) < mustInt(n) {
			fail("shorter than %s", n)
		}
		if n, ok := sch["maxLength"].(json.Number); ok && int64(utf8.RuneCountInString(str)) > mustInt(n) {
			fail("longer than %s", n)
		}
		if p, ok := sch["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(str) {
			fail("%q does not match %s", str, p)
		}
	}
	if obj, ok := v.(map[string]any); ok {
		props, _ := sch["properties"].(map[string]any)
		for _, r := range asList(sch["required"]) {
			if _, ok := obj[r.(string)]; !ok {
				fail("missing %q", r)
			}
		}
		for k, x := range obj {
			if ps, ok := props[k]; ok {
				errs = append(errs, sub(ps, path+"/"+k, x)...)
				continue
			}
			switch ap := sch["additionalProperties"].(type) {
			case bool:
				if !ap {
					fail("unknown key %q", k)
				}
			case map[string]any:
				errs = append(errs, sub(ap, path+"/"+k, x)...)
			}
		}
		if dr, ok := sch["dependentRequired"].(map[string]any); ok {
			for k, need := range dr {
				if _, has := obj[k]; has {
					for _, n := range need.([]any) {
						if _, ok := obj[n.(string)]; !ok {
							fail("%q needs %q", k, n)
						}
					}
				}
			}
		}
	}
	if arr, ok := v.([]any); ok {
		if n, ok := sch["minItems"].(json.Number); ok && int64(len(arr)) < mustInt(n) {
			fail("fewer than %s items", n)
		}
		if u, _ := sch["uniqueItems"].(bool); u {
			for i := range arr {
				for j := range i {
					if jsonEqual(arr[i], arr[j]) {
						fail("item %d repeats item %d", i, j)
					}
				}
			}
		}
		if it, ok := sch["items"]; ok {
			for i, x := range arr {
				errs = append(errs, sub(it, fmt.Sprintf("%s/%d", path, i), x)...)
			}
		}
	}
	if list, ok := sch["oneOf"].([]any); ok {
		n := 0
		for _, s := range list {
			if len(sub(s, path, v)) == 0 {
				n++
			}
		}
		if n != 1 {
			fail("matches %d of the oneOf alternatives, want exactly 1", n)
		}
	}
	if list, ok := sch["anyOf"].([]any); ok {
		n := 0
		for _, s := range list {
			if len(sub(s, path, v)) == 0 {
				n++
			}
		}
		if n == 0 {
			fail("matches none of the anyOf alternatives")
		}
	}
	for _, s := range asList(sch["allOf"]) {
		errs = append(errs, sub(s, path, v)...)
	}
	if s, ok := sch["not"]; ok && len(sub(s, path, v)) == 0 {
		fail("matches a forbidden form")
	}
	if cond, ok := sch["if"]; ok {
		if len(sub(cond, path, v)) == 0 {
			if th, ok := sch["then"]; ok {
				errs = append(errs, sub(th, path, v)...)
			}
		} else if el, ok := sch["else"]; ok {
			errs = append(errs, sub(el, path, v)...)
		}
	}
	return errs
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func mustInt(n json.Number) int64 {
	i, err := n.Int64()
	if err != nil {
		panic(err)
	}
	return i
}

func typeOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func jsonEqual(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// TestSchemaRejectsDSLBadJobs: job files that package dsl rejects for a
// structural reason are rejected by the schema too.
func TestSchemaRejectsDSLBadJobs(t *testing.T) {
	s := loadSchema(t)
	n := 0
	for _, name := range []string{"unknown_keys.yaml", "bad_mode.yaml", "merge_no_keys.yaml", "missing_source.yaml", "kinds.yaml"} {
		src, err := os.ReadFile(filepath.Join("../dsl/testdata/badjobs", name))
		if err != nil {
			continue // dsl's test data changed; nothing to compare
		}
		n++
		if errs := validate(s, s, "", yamlValue(t, src)); len(errs) == 0 {
			t.Errorf("%s: dsl rejects it but the schema accepts it", name)
		}
	}
	if n == 0 {
		t.Skip("no dsl test data")
	}
}

// TestDeployConfigMapJobs: the job files in the Kubernetes example
// satisfy the schema.
func TestDeployConfigMapJobs(t *testing.T) {
	s := loadSchema(t)
	f, err := os.Open("../deploy/kubernetes/sluice.yaml")
	if err != nil {
		t.Skip("no deploy/kubernetes/sluice.yaml")
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	n := 0
	for {
		var doc struct {
			Kind string            `yaml:"kind"`
			Data map[string]string `yaml:"data"`
		}
		if err := dec.Decode(&doc); err != nil {
			break
		}
		if doc.Kind != "ConfigMap" {
			continue
		}
		for name, text := range doc.Data {
			if strings.HasSuffix(name, ".yaml") {
				n++
				if errs := validate(s, s, "", yamlValue(t, []byte(text))); len(errs) > 0 {
					t.Errorf("ConfigMap %s: %v", name, errs)
				}
			}
		}
	}
	if n == 0 {
		t.Error("no job in the ConfigMap")
	}
}
