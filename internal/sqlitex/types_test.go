package sqlitex

import (
	"database/sql"
	"fmt"
	"testing"
)

// TestDeclaredTypeSQL: a declared type read back from pragma_table_info
// goes into CREATE TABLE as it is when it is SQLite's type-name, quoted
// otherwise — and SQLite takes the result and reports the same type.
func TestDeclaredTypeSQL(t *testing.T) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i, tc := range []struct {
		typ   string
		plain bool
	}{
		{"INTEGER", true}, {"DECIMAL(10,2)", true}, {"VARYING CHARACTER(5)", true}, {"NUMERIC(-3, +2)", true}, {"INT8", true},
		{"TEXT:jsonb", false}, {"TEXT:integer[]", false}, {"TEXT:timestamp with time zone", false}, {`we"ird`, false}, {"DECIMAL(10,2", false},
	} {
		got := DeclaredTypeSQL(tc.typ)
		if want := map[bool]string{true: tc.typ, false: Quote(tc.typ)}[tc.plain]; got != want {
			t.Errorf("DeclaredTypeSQL(%q) = %s, want %s", tc.typ, got, want)
		}
		name := fmt.Sprintf("t%d", i)
		if _, err := db.Exec("CREATE TABLE " + name + " (c " + got + ")"); err != nil {
			t.Errorf("CREATE TABLE with %s: %v", got, err)
			continue
		}
		var back string
		if err := db.QueryRow("SELECT type FROM pragma_table_info(?)", name).Scan(&back); err != nil || back != tc.typ {
			t.Errorf("declared %s, read back %q (%v), want %q", got, back, err, tc.typ)
		}
	}
}
