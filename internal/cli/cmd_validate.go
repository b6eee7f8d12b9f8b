package cli

import (
	"context"
	"fmt"

	"github.com/sluicedata/sluice/expr"
	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/pos"
)

func init() {
	register(verb{name: "validate", usage: "PATH…", short: "parse and check job files without touching a database", run: cmdValidate})
}

func cmdValidate(ctx context.Context, e *env, args []string) error {
	fs := flags(e, "validate")
	paths, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return fmt.Errorf("%w: name job files or directories", errUsage)
	}
	files, err := loadJobs(paths)
	if err != nil {
		return err
	}
	bad := 0
	for _, f := range files {
		err := f.err
		if err == nil {
			err = checkExprs(f.job)
		}
		if err != nil {
			fmt.Fprintln(e.stderr, err)
			bad++
			continue
		}
		fmt.Fprintf(e.stdout, "%s: ok (job %s)\n", f.path, f.job.Name)
	}
	if bad > 0 {
		fmt.Fprintf(e.stderr, "%d of %d files invalid\n", bad, len(files))
		return errFailed
	}
	return nil
}

// checkExprs parses every expression of a job (no binding: that needs the
// source's schema) and returns all syntax errors at once.
func checkExprs(j *plan.Job) error {
	var errs pos.List
	if j.Filter != nil {
		if _, err := expr.Parse(j.Filter.Text, j.Filter.Pos); err != nil {
			errs.Append(j.Filter.Pos, err)
		}
	}
	for _, it := range j.Select {
		if _, _, err := expr.ParseSelectItem(it.Expr.Text, it.Expr.Pos); err != nil {
			errs.Append(it.Expr.Pos, err)
		}
	}
	if m := j.Sink.Merge; m != nil {
		for _, c := range m.Clauses {
			var texts []plan.Expr
			if c.Cond != nil {
				texts = append(texts, *c.Cond)
			}
			for _, a := range c.Set {
				texts = append(texts, a.Value)
			}
			texts = append(texts, c.InsertValues...)
			for _, x := range texts {
				if _, err := expr.Parse(x.Text, x.Pos); err != nil {
					errs.Append(x.Pos, err)
				}
			}
		}
	}
	return errs.Err()
}
