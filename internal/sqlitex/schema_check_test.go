package sqlitex_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/internal/sqlitex"
)

// A DECIMAL column refuses text that is not a number, whoever writes it,
// and keeps numbers in any form SQLite hands it.
func TestDecimalColumnRefusesText(t *testing.T) {
	ctx := context.Background()
	db, err := sqlitex.Open(ctx, sqlitex.Location{Memory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := cdc.Schema{Columns: []cdc.Column{{Name: "id", Type: cdc.TypeBigInt}, {Name: "v", Type: cdc.Decimal(10, 2)}}, Key: []string{"id"}}
	if _, err := db.ExecContext(ctx, sqlitex.CreateTableSQL("t", s, false)); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		v  any
		ok bool
	}{{"1500.00", true}, {1.5, true}, {int64(7), true}, {"-0.25", true}, {nil, true}, {"abc", false}, {"", false}, {"12a", false}} {
		_, err := db.ExecContext(ctx, `INSERT INTO t VALUES (?, ?)`, i, tc.v)
		if (err == nil) != tc.ok {
			t.Errorf("insert %#v: err = %v, want ok=%v", tc.v, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "v is a number") {
			t.Errorf("insert %#v: error %q does not name the column's check", tc.v, err)
		}
	}
}
