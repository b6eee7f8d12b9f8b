package runner

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sluicedata/sluice/cdc"
)

// ConnError is a connection string that cannot be used as written: it
// does not parse, is ambiguous, or names an unknown scheme (a
// configuration error: the sluice command exits 2). Its text is Err's;
// it wraps Err. Backends' Open return one for their URL's syntax, never
// for a failure to connect.
type ConnError struct{ Err error }

func (e *ConnError) Error() string { return e.Err.Error() }
func (e *ConnError) Unwrap() error { return e.Err }

// Sentinel errors of package runner. Backends wrap them so that callers can
// test with errors.Is.
var (
	ErrUnknownScheme = errors.New("unknown connection scheme")
	ErrNoStream      = errors.New("table stream does not exist")
	ErrOffsetMoved   = errors.New("stream offset moved concurrently")
	ErrNoPushdown    = errors.New("plan cannot be pushed down")
	ErrNotSource     = errors.New("backend cannot be a source")
	ErrNotSink       = errors.New("backend cannot be a sink")
	ErrTargetExists  = errors.New("target table exists")
	// ErrStreamStale: the stream left changes unconsumed for longer than
	// its retention (StreamInfo.StaleAfter); the change log no longer
	// keeps them, so it cannot be read. The error says how to recover.
	ErrStreamStale = errors.New("table stream is stale")
	// ErrSinkMode is a sink mode the job's source cannot feed, or whose
	// columns clash with the projection (mode history from an APPEND_ONLY
	// stream, a projected __valid_from).
	ErrSinkMode = errors.New("sink mode does not fit the job")
	// ErrSchemaChanged: the source table's columns no longer match the
	// target's and the job's on_schema_change is fail; nothing was
	// written and the offset did not move.
	ErrSchemaChanged = errors.New("the source table's columns changed")
	// ErrPushdownValue wraps the failure of a pushed-down run caused by a
	// row's value (a value that does not fit a target column, a broken
	// constraint): the database names neither the row nor the column, so
	// the runner replays the run through sluice, without committing, to
	// name them (Runner.Run).
	ErrPushdownValue = errors.New("a value of the pushed-down run does not fit the target")
	// ErrStreamReplaced: the job's sink checkpoint belongs to another
	// incarnation of its stream (StreamReplacedError says which and how
	// to go on).
	ErrStreamReplaced = errors.New("the job's checkpoint belongs to another incarnation of its stream")
	// ErrNoDiff: `sluice diff` cannot compare the job's target with its
	// source (an append-style mode, a SQL MERGE INTO, a backend that
	// cannot hash its tables, a missing target); the error says why.
	ErrNoDiff = errors.New("job cannot be diffed")
	// ErrNoDeadLetter: the job names a dead-letter table but its sink
	// cannot store dead letters (it is not a DeadLetterTx).
	ErrNoDeadLetter = errors.New("the sink cannot store dead letters")
	// ErrPlanStale: the source table's columns (or key) at the run's read
	// are not the ones its plan was bound to: DDL ran between Plan and
	// the read. Nothing was written and no offset moved; Run plans the
	// job again and runs it (PlanStaleError).
	ErrPlanStale = errors.New("the source table changed after the run was planned")
	// ErrSourceSchema: a run refused because of a change to its source
	// table's definition (DDL) that it cannot read past by itself; the
	// error says what moves past it (enabling tracking again, restoring a
	// type, …). Nothing was written and no offset moved. Backends declare
	// such refusals with SchemaSentinel; `sluice serve` retries them (and
	// ErrSchemaChanged, ErrPlanStale) with backoff, so that the job goes
	// on by itself once its user has acted.
	ErrSourceSchema = errors.New("the source table's definition changed")
	// ErrColumnUnfillable: a column the source table gained holds a value
	// of its own in each row that predates it (a volatile, serial,
	// identity or generated DEFAULT), which no change carries, and the
	// run cannot read it by key for the target's rows (fillAdded). Nothing
	// was written and no offset moved; matched by ErrSourceSchema, so
	// serve retries once the user has added the column to the target.
	ErrColumnUnfillable = SchemaSentinel("a new column's values cannot be filled in the target")
)

// SchemaSentinel returns a sentinel error with the given text that
// errors.Is also matches to ErrSourceSchema: a backend's refusal because
// of a schema change.
func SchemaSentinel(text string) error { return &schemaSentinel{text} }

type schemaSentinel struct{ text string }

func (e *schemaSentinel) Error() string { return e.text }

// Is matches ErrSourceSchema (the sentinel itself matches by identity).
func (e *schemaSentinel) Is(target error) bool { return target == ErrSourceSchema }

// PlanStaleError returns nil when now, the source table's schema a run
// reads with, is planned, the schema its plan was bound to (same columns,
// types and key, in order); otherwise an error wrapping ErrPlanStale that
// names the stream, the table and both column lists. A backend whose
// pushed-down run reads inside its own transaction calls it there with
// PushdownPlan's plan.Source.TableSchema.
func PlanStaleError(stream, table string, planned, now cdc.Schema) error {
	if slices.Equal(planned.Columns, now.Columns) && slices.Equal(planned.Key, now.Key) {
		return nil
	}
	return fmt.Errorf("table stream %s: %w: table %s has columns %v now, the run was planned with %v; nothing was written",
		stream, ErrPlanStale, table, now.Names(), planned.Names())
}

// StaleError is the error of reading a stale stream: it wraps
// ErrStreamStale and says how to recover. after is the stream's retention,
// since when it was found stale.
func StaleError(stream, table string, after time.Duration, since time.Time) error {
	return fmt.Errorf("%w: %s left changes of %s unconsumed for longer than its retention (STALE_AFTER %s) and was found stale at %s; "+
		"the change log no longer keeps them. Recover: CREATE OR REPLACE TABLE STREAM %s ON TABLE %s (a new offset at the table as it is now), "+
		"then `sluice backfill JOB` to copy the table again (a merge target keeps rows deleted meanwhile: drop it first for an exact copy); "+
		"raise 'STALE_AFTER' in WITH PROPERTIES if the job may stop for longer",
		ErrStreamStale, stream, table, FormatRetention(after), since.UTC().Format(time.RFC3339), stream, table)
}

// FormatRetention writes a retention as dsl.ParseRetention reads it: whole
// days as "14d", anything else as a Go duration ("36h0m0s").
func FormatRetention(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}
