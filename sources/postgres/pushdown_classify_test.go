package postgres

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/sluicedata/sluice/runner"
)

// TestClassifyPushdownErr: a pushed-down run's failure is a row's value
// (SQLSTATE classes 22 and 23: replayed to name the row), a DDL that ran
// during the run (undefined column or table: planned again, which serve
// retries — a fresh user's continuous job was stopped for good by a DROP
// COLUMN while it ran), or anything else, kept as it is.
func TestClassifyPushdownErr(t *testing.T) {
	for _, tc := range []struct {
		code         string
		value, stale bool
	}{
		{"22003", true, false},  // numeric_value_out_of_range
		{"23505", true, false},  // unique_violation
		{"42703", false, true},  // undefined_column
		{"42P01", false, true},  // undefined_table
		{"42601", false, false}, // syntax_error
		{"57P01", false, false}, // admin_shutdown
	} {
		pgErr := &pgconn.PgError{Code: tc.code, Message: "m"}
		err := classifyPushdownErr(fmt.Errorf("run: %w", pgErr))
		if errors.Is(err, runner.ErrPushdownValue) != tc.value || errors.Is(err, runner.ErrPlanStale) != tc.stale {
			t.Errorf("%s: %v; want value %v, plan stale %v", tc.code, err, tc.value, tc.stale)
		}
		var back *pgconn.PgError
		if !errors.As(err, &back) || back.Code != tc.code {
			t.Errorf("%s: the PostgreSQL error is not kept: %v", tc.code, err)
		}
	}
	if classifyPushdownErr(nil) != nil {
		t.Error("nil is not kept")
	}
}
