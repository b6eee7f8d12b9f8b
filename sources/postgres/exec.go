package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
	sinkpg "github.com/sluicedata/sluice/sinks/postgres"
)

// Exec implements runner.Executor for every statement of package dsl:
//
//   - CREATE TABLE: PostgreSQL types of sinkpg.ColumnType, key columns NOT
//     NULL, PRIMARY KEY; identifiers always quoted.
//   - DROP TABLE: also removes change capture; ErrHasStreams while streams
//     read the table.
//   - ALTER TABLE … SET PROPERTIES ('change_tracking' = …): EnableTracking
//     / DisableTracking.
//   - CREATE / DROP TABLE STREAM, SHOW TABLE STREAMS, DESCRIBE TABLE
//     STREAM (columns as on SQLite).
//   - INSERT / UPDATE / DELETE / SELECT: translated for PostgreSQL
//     (dml.go); SELECT returns a ResultSet of canonical values.
func (b *Backend) Exec(ctx context.Context, st dsl.Statement) (*runner.ResultSet, error) {
	switch s := st.(type) {
	case *dsl.CreateTable:
		return nil, b.createTable(ctx, s)
	case *dsl.DropTable:
		return nil, b.dropTable(ctx, s)
	case *dsl.SetChangeTracking:
		if s.Enabled {
			return nil, b.EnableTracking(ctx, s.Table)
		}
		return nil, b.DisableTracking(ctx, s.Table)
	case *dsl.CreateStream:
		return nil, b.CreateStream(ctx, s)
	case *dsl.DropStream:
		return nil, b.DropStream(ctx, s.Stream, s.IfExists)
	case *dsl.ShowStreams:
		return b.showStreams(ctx)
	case *dsl.DescribeStream:
		return b.describe(ctx, s.Stream)
	case *dsl.DML:
		return b.execDML(ctx, s)
	}
	return nil, fmt.Errorf("%w: statement %T", ErrUnsupported, st)
}

// CreateTableSQL renders CREATE TABLE for a dsl table definition.
func CreateTableSQL(s *dsl.CreateTable) string {
	q := sinkpg.CreateTableSQL(s.Table, s.Schema, s.Schema.Key)
	if s.IfNotExists {
		q = strings.Replace(q, "CREATE TABLE ", "CREATE TABLE IF NOT EXISTS ", 1)
	}
	return q
}

func (b *Backend) createTable(ctx context.Context, s *dsl.CreateTable) error {
	if len(s.Schema.Columns) == 0 {
		return fmt.Errorf("create table %s: no columns", s.Table)
	}
	if _, ok := s.Schema.KeyIndexes(); !ok {
		return fmt.Errorf("create table %s: primary key %v names a column the table does not have", s.Table, s.Schema.Key)
	}
	for _, c := range s.Schema.Columns {
		if cdc.IsMetadataColumn(c.Name) {
			return fmt.Errorf("create table %s: column name %s is reserved for table streams", s.Table, c.Name)
		}
	}
	_, err := b.pool.Exec(ctx, CreateTableSQL(s))
	return b.wrap(err, "create table %s", sinkpg.Quote(s.Table))
}

func (b *Backend) dropTable(ctx context.Context, s *dsl.DropTable) error {
	if err := b.ensureSchema(ctx); err != nil {
		return err
	}
	return b.wrap(pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('sluice.tracking'))`); err != nil {
			return err
		}
		names, err := streamsOn(ctx, tx, s.Table)
		if err != nil {
			return err
		}
		if len(names) > 0 {
			return fmt.Errorf("%w: %s (drop them first: DROP TABLE STREAM %s)", ErrHasStreams, strings.Join(names, ", "), names[0])
		}
		if err := dropTracking(ctx, tx, s.Table); err != nil {
			return err
		}
		q := "DROP TABLE " + sinkpg.Quote(s.Table)
		if s.IfExists {
			q = "DROP TABLE IF EXISTS " + sinkpg.Quote(s.Table)
		}
		_, err = tx.Exec(ctx, q)
		return err
	}), "drop table %s", sinkpg.Quote(s.Table))
}

// Target describes a target table (runner.Sink; see sinkpg.Sink.Target).
func (b *Backend) Target(ctx context.Context, table string) (cdc.Schema, bool, error) {
	s, ok, err := b.sink.Target(ctx, table)
	return s, ok, b.wrap(err, "describe target %s", sinkpg.Quote(table))
}

// PrepareSink compiles a sink stage (runner.Sink; see sinkpg.Sink.Prepare).
func (b *Backend) PrepareSink(ctx context.Context, st *plan.SinkStage) (runner.SinkPlan, error) {
	p, err := b.sink.Prepare(ctx, st)
	if err != nil {
		return nil, hide(err, b.secret)
	}
	return p, nil
}

// Sink returns the sink half of the backend.
func (b *Backend) Sink() *sinkpg.Sink { return b.sink }
