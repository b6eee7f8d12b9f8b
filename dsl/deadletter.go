package dsl

import (
	"strings"

	"github.com/sluicedata/sluice/plan"
	"github.com/sluicedata/sluice/pos"
)

// The sink's dead-letter table (`sink: {dead_letter: TABLE}` in YAML,
// `-- dead_letter: TABLE` in a SQL job's comment block): where a row the
// sink rejects for its value goes instead of failing the run
// (docs/sinks.md, "Dead letters").

// deadLetterErr checks a dead-letter table against the rest of the sink s
// and returns the message of what does not fit ("" when it fits): a
// stdout sink has no database to hold it, a history sink cannot skip a
// version of a key (the versions after it would close the wrong one), and
// the target itself cannot be its own dead-letter table.
func deadLetterErr(s *plan.Sink) string {
	switch {
	case s.Stdout:
		return "dead_letter does not apply to stdout: true (it is a table of the sink database)"
	case s.Mode == plan.ModeHistory:
		return "dead_letter does not apply to mode history: a version left out would leave the versions after it wrong"
	case s.Table != "" && strings.EqualFold(s.Table, s.DeadLetter):
		return "dead_letter names the target table itself; name a table of its own (e.g. " + s.Table + "_dead_letters)"
	}
	return ""
}

// deadLetterChecks adds the error of deadLetterErr at the dead_letter key.
func deadLetterChecks(y *yamlJob, s *plan.Sink, d pair) {
	if msg := deadLetterErr(s); msg != "" {
		y.add(d.keyPos, ErrBadValue, "%s", msg)
	}
}

// sqlDeadLetter sets job's dead-letter table from the comment block's
// "dead_letter: TABLE" (m) and checks it.
func sqlDeadLetter(job *plan.Job, m metaValue, errs *pos.List) {
	n, err := UnquoteName(strings.TrimSpace(m.value))
	if err != nil {
		*errs = append(*errs, errAt(m.pos, ErrBadValue, "dead_letter: %v", err))
		return
	}
	job.Sink.DeadLetter, job.Sink.DeadLetterPos = n, m.pos
	if msg := deadLetterErr(&job.Sink); msg != "" {
		*errs = append(*errs, errAt(m.pos, ErrBadValue, "%s", msg))
	}
}
