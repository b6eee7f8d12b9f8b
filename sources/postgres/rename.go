package postgres

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"
	sinkpg "github.com/sluicedata/sluice/sinks/postgres"
)

// renamedQuery lists the trackings whose table, found by the oid recorded
// when tracking was enabled, is now visible on the connection's
// search_path under another name (ALTER TABLE … RENAME, or SET SCHEMA
// into a schema on the path) that the recorded name does not resolve to
// (a name longer than 63 bytes, recorded as the user wrote it, names the
// table PostgreSQL truncated it to): the recorded name and the name now.
const renamedQuery = `SELECT t.table_name, c.relname::text FROM sluice.tracking t
	JOIN pg_catalog.pg_class c ON c.oid = t.relid AND c.relkind IN ('r', 'p')
	WHERE c.relname::text <> t.table_name AND pg_catalog.pg_table_is_visible(c.oid)
		AND pg_catalog.to_regclass(pg_catalog.quote_ident(t.table_name)) IS DISTINCT FROM c.oid
	ORDER BY t.table_name`

// followRenames makes sluice's catalog follow the renamed tracked tables
// (issue #17): a tracking whose table now has another name is recorded
// under that name, in sluice.tracking and in the streams on it
// (sluice.streams), and its capture function is written again so that it
// notifies on the new name's channel (NotifyChannel). Sluice's statements
// and commands then name the table as the application does, and a table
// created under the old name is another table, not tracked until tracking
// is enabled on it. The change log and function keep their names.
//
// It costs one query when nothing was renamed. A rename whose new name is
// recorded for another tracking (a dropped table's, not cleaned up) is
// left as it is, with a warning: the table is still found by its oid. A
// role that may not write sluice's tables (one that only reads streams)
// leaves the catalog as it is, with a warning. It returns only errors of
// ctx or of the connection.
func (b *Backend) followRenames(ctx context.Context) error {
	renamed, err := b.renamed(ctx, b.pool)
	if pgCode(err) == "42501" {
		return nil // a role that may not read sluice's tables: the statement says so
	}
	if err != nil || len(renamed) == 0 {
		return b.wrap(err, "follow renamed tracked tables")
	}
	err = pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('sluice.tracking'))`); err != nil {
			return err
		}
		// Again under the lock, and as long as one rename makes room for
		// another (t → t_old, then t_new → t). Names swapped in a cycle
		// (t → tmp, u → t, tmp → u) free each other through a temporary
		// name.
		for progress := true; progress; {
			progress = false
			renamed, err := b.renamed(ctx, tx)
			if err != nil {
				return err
			}
			for _, r := range renamed {
				var taken bool
				if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sluice.tracking WHERE table_name = $1)`, r[1]).Scan(&taken); err != nil {
					return err
				}
				if taken {
					continue
				}
				if err := b.followRename(ctx, tx, r[0], r[1]); err != nil {
					return err
				}
				progress = true
			}
			if progress {
				continue
			}
			if key, ok := inCycle(renamed); ok {
				if err := recordName(ctx, tx, key, renamingPrefix+key); err != nil {
					return err
				}
				progress = true
			}
		}
		for _, r := range renamedOrNil(b.renamed(ctx, tx)) {
			b.log.Warn("a tracked table was renamed to a name recorded for another tracking: sluice keeps its old name until that tracking is disabled", "table", r[1], "recorded_as", r[0])
		}
		return nil
	})
	if err != nil && ctx.Err() == nil && pgCode(err) == "42501" {
		b.log.Warn("cannot record the new names of renamed tracked tables (no write access to sluice's tables); they are still followed by oid", "error", err)
		return nil
	}
	if err != nil {
		return b.wrap(err, "follow renamed tracked tables")
	}
	return nil
}

func renamedOrNil(r [][2]string, err error) [][2]string {
	if err != nil {
		return nil
	}
	return r
}

// renamed runs renamedQuery: pairs of the recorded name and the name now.
// No sluice schema yet is none.
func (b *Backend) renamed(ctx context.Context, q sinkpg.Querier) ([][2]string, error) {
	rows, err := q.Query(ctx, renamedQuery)
	if isUndefinedTable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) ([2]string, error) {
		var r [2]string
		return r, row.Scan(&r[0], &r[1])
	})
	if isUndefinedTable(err) {
		return nil, nil
	}
	return out, err
}

// renamingPrefix starts the temporary name under which a tracking waits
// while the tracking recorded under its table's new name moves away (a
// swap of names, inCycle). No table has it for long: the rename that
// frees the name follows in the same transaction.
const renamingPrefix = "sluice renaming "

// inCycle returns the recorded name of a rename in renamed (pairs of the
// recorded name and the name now) whose new name is recorded for another
// rename of the list, and so on back to it: names swapped in a cycle,
// which no rename can free for another. ok is false when there is none.
func inCycle(renamed [][2]string) (string, bool) {
	to := map[string]string{}
	for _, r := range renamed {
		to[r[0]] = r[1]
	}
	for _, r := range renamed {
		k := r[1]
		for range renamed {
			next, ok := to[k]
			if !ok {
				break
			}
			if k == r[0] {
				return r[0], true
			}
			k = next
		}
	}
	return "", false
}

// recordName records the tracking of key, and the streams on it, under
// name (tx holds sluice's tracking lock).
func recordName(ctx context.Context, tx pgx.Tx, key, name string) error {
	if _, err := tx.Exec(ctx, `UPDATE sluice.tracking SET table_name = $2 WHERE table_name = $1`, key, name); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `UPDATE sluice.streams SET table_name = $2 WHERE table_name = $1`, key, name)
	return err
}

// followRename records the tracking of key (tx holds sluice's tracking
// lock) under name, the table's name now, with its streams, and writes
// its capture function again for the new name's notify channel
// (alignLog). When the function cannot be written now (the table's
// primary key or columns changed meanwhile: the next run of a stream on
// it brings them in line and writes it), the renames stand and the
// function notifies on the old channel until then.
func (b *Backend) followRename(ctx context.Context, tx pgx.Tx, key, name string) error {
	if err := recordName(ctx, tx, key, name); err != nil {
		return err
	}
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	if _, ferr := b.alignLog(ctx, sp, name, true); ferr != nil {
		if err := sp.Rollback(ctx); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var pe interface{ SQLState() string }
		if errors.As(ferr, &pe) && pe.SQLState() == "42501" {
			return ferr
		}
		b.log.Info("a renamed tracked table's capture function is written again by the next run of a stream on it", "table", name, "recorded_as", key, "reason", ferr)
	} else if err := sp.Commit(ctx); err != nil {
		return err
	}
	b.log.Info("tracked table renamed: sluice follows its new name", "table", name, "was", strings.TrimPrefix(key, renamingPrefix))
	return nil
}

// renamedFrom reports whether cur, a tracked table's name now, is not the
// name key it is recorded under, as PostgreSQL reads key: truncated to 63
// bytes (NAMEDATALEN - 1) on a character boundary.
func renamedFrom(key, cur string) bool {
	if len(key) > 63 {
		cut := 63
		for cut > 0 && !utf8Start(key[cut]) {
			cut--
		}
		key = key[:cut]
	}
	return key != cur
}
