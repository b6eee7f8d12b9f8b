package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sluicedata/sluice/dsl"
	"github.com/sluicedata/sluice/internal/redact"

	"github.com/spf13/cobra"

	"github.com/sluicedata/sluice/cdc"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/runner"
	"github.com/sluicedata/sluice/serve"
)

func init() { register(newPreviewCmd) }

// previewFlags are the flags of `sluice preview`.
type previewFlags struct {
	conn   string
	limit  int
	format string
	wide   bool
}

func newPreviewCmd(e *env) *cobra.Command {
	var f previewFlags
	c := &cobra.Command{
		Use:   "preview [flags] STREAM",
		Short: "show a stream's pending changes with metadata columns, without consuming them",
		Long: "Show the pending changes of a table stream — __change_type, __commit_version,\n" +
			"__commit_timestamp and the table's columns — as a consuming run would read them now.\n" +
			"The offset does not move. A name may be backquoted as in job files (`group`).",
		ValidArgsFunction: streamArgs(e, &f.conn),
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmdPreview(cmd.Context(), e, f, args)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.conn, "conn", "", "connection `URL`")
	fl.IntVar(&f.limit, "limit", 100, "show at most `N` changes")
	fl.StringVar(&f.format, "format", "table", "output `FORMAT`: table, jsonl, csv or json (changes, offset and whether more are pending)")
	fl.BoolVar(&f.wide, "wide", false, "print long cells whole in the table")
	return c
}

func cmdPreview(ctx context.Context, e *env, f previewFlags, rest []string) error {
	if len(rest) != 1 {
		return usageErr("name one stream")
	}
	if err := checkFormat(f.format, "table", "jsonl", "csv", "json"); err != nil {
		return err
	}
	if f.limit < 1 {
		return usageErr("--limit must be at least 1")
	}
	if err := notAJobFile(rest[0], e.maxJobSize); err != nil {
		return err
	}
	r := newRunner(e, f.conn)
	defer r.Close()
	b, err := r.Backend(ctx, "")
	if err != nil {
		return err
	}
	src, ok := b.(runner.Source)
	if !ok {
		return fmt.Errorf("%w: %s", runner.ErrNotSource, b.Scheme())
	}
	name, err := dsl.UnquoteName(rest[0])
	if err != nil {
		return usageErr("%v", err)
	}
	info, err := src.Stream(ctx, plan.Source{Stream: name})
	if err != nil {
		return err
	}
	rd, err := src.Changes(ctx, info, info.Offset, runner.ReadOptions{BatchSize: f.limit + 1})
	if err != nil {
		return err
	}
	defer rd.Close()
	schema := cdc.StreamSchema(info.TableSchema)
	var rows [][]any
	more := false
	for len(rows) <= f.limit {
		batch, err := rd.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		for _, ch := range batch {
			if len(rows) == f.limit {
				more = true
				break
			}
			row := append([]any{ch.Op.String(), ch.CommitVersion, ch.CommitTime}, ch.Row...)
			rows = append(rows, row)
		}
		if more {
			break
		}
	}
	text, err := valueText(ctx, b)
	if err != nil {
		return err
	}
	if f.format == "json" {
		changes, err := rowsJSON(schema.Columns, rows, text)
		if err != nil {
			return err
		}
		return writeJSON(e.stdout, struct {
			Stream  string            `json:"stream"`
			Offset  any               `json:"offset"`
			More    bool              `json:"more_pending"`
			Changes []json.RawMessage `json:"changes"`
		}{info.Name, serve.OffsetJSON(info.Offset), more, changes})
	}
	if err := printRows(e.stdout, f.format, f.wide, schema.Columns, rows, text); err != nil || f.format != "table" {
		return err
	}
	if more {
		fmt.Fprintf(e.stdout, "(first %d pending changes shown; more are pending)\n", f.limit)
	} else {
		fmt.Fprintf(e.stdout, "(%s; offset %s; nothing consumed)\n", plural(int64(len(rows)), "pending change"), offsetText(info.Offset, time.Time{}))
	}
	return nil
}

// notAJobFile returns a usage error when arg, given where a stream's name
// belongs, is a job file that parses: it names the job's stream (and its
// connection when the job has one), the preview the user most likely
// meant. Anything else returns nil and arg is taken for a name.
func notAJobFile(arg string, maxSize int) error {
	switch strings.ToLower(filepath.Ext(arg)) {
	case ".yaml", ".yml", ".sql":
	default:
		return nil
	}
	if st, err := os.Stat(arg); err != nil || st.IsDir() {
		return nil
	}
	files, err := loadJobs([]string{arg}, maxSize)
	if err != nil || len(files) != 1 || files[0].job == nil || files[0].job.Source.Stream == "" {
		return nil
	}
	j := files[0].job
	conn := ""
	if j.Conn != "" {
		conn = " --conn " + redact.Conn(j.Conn)
	}
	return usageErr("%s is a job file: preview takes a table stream's name; its job reads %s: sluice preview%s %s", arg, j.Source.Stream, conn, j.Source.Stream)
}
