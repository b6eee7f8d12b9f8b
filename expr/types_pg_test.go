package expr

import (
	"testing"

	"github.com/sluicedata/sluice/cdc"
)

// TestDatabaseTypes covers the types of PostgreSQL columns the dialect
// names (JSON, UUID, ARRAY<T>) and those it passes through unnamed
// (NATIVE): their CAST, evaluation and PostgreSQL SQL. Expected texts are
// PostgreSQL's own (a jsonb literal keeps its text in Go; PostgreSQL
// parses it when the SQL runs).
func TestDatabaseTypes(t *testing.T) {
	sch := cdc.Schema{Columns: []cdc.Column{
		{Name: "s", Type: cdc.TypeString},
		{Name: "j", Type: cdc.TypeJSON},
		{Name: "u", Type: cdc.TypeUUID},
		{Name: "arr", Type: cdc.NativeType("integer[]")},
		{Name: "n", Type: cdc.TypeNumeric},
	}}
	row := Values{`{"a": 1.50}`, `[1, 2]`, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "{{1,NULL},{3,4}}", dec("0.000000000000000000001")}
	scope := Scope{{Alias: "x", Schema: sch}}
	col := func(_, i int) string { return Column("x", sch.Columns[i].Name) }
	for _, c := range []struct {
		text, typ string
		want      any
		pg        string
	}{
		{"CAST(s AS JSON)", "JSON", `{"a": 1.50}`, `CAST("x"."s" AS jsonb)`},
		{"CAST(s AS UUID) IS NULL", "BOOLEAN", nil, ""}, // not a UUID: an evaluation error
		{"CAST(u AS UUID)", "UUID", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", `"x"."u"`},
		{"CAST(u AS STRING)", "STRING", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", `CAST("x"."u" AS text)`},
		{"CAST('{1,2}' AS ARRAY<INT>)", "integer[]", "{1,2}", `CAST('{1,2}' AS integer[])`},
		{"arr", "integer[]", "{{1,NULL},{3,4}}", `"x"."arr"`},
		{"j", "JSON", `[1, 2]`, `"x"."j"`},
		{"CAST(42 AS JSON)", "JSON", "42", `CAST(to_jsonb(42) AS jsonb)`},
		{"n", "NUMERIC", nil, `"x"."n"`},
	} {
		b := bindText(t, c.text, scope)
		if got := b.Type().String(); got != c.typ {
			t.Errorf("%s: type %s, want %s", c.text, got, c.typ)
		}
		got, err := b.Eval(row)
		switch {
		case c.text == "CAST(s AS UUID) IS NULL":
			if err == nil {
				t.Errorf("%s: no error for a text that is not a UUID", c.text)
			}
		case c.text == "n":
			if err != nil || got.(interface{ String() string }).String() != "0.000000000000000000001" {
				t.Errorf("%s = %v, %v; want every digit kept", c.text, got, err)
			}
		case err != nil || got != c.want:
			t.Errorf("%s = %#v, %v; want %#v", c.text, got, err, c.want)
		}
		if c.pg == "" {
			continue
		}
		q, err := b.SQL(Postgres, col)
		if err != nil || q != c.pg {
			t.Errorf("%s: PostgreSQL %q, %v; want %q", c.text, q, err, c.pg)
		}
	}
}
