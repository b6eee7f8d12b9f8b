// Package jobtest runs job tests: YAML files beside job files
// (JOB.test.yaml) that give a job's source rows before, the changes of one
// or more runs, optionally the target's rows before, and the target's rows
// expected after the last run. `sluice test` runs each case on a fresh
// in-memory SQLite database with the job's own plan (package runner), and
// reports a row-level diff by key when the target differs.
//
// # Format
//
//	# orders_append.test.yaml — tests of orders_append.yaml
//	job: orders_append.yaml          # default: this file's name without ".test"
//	setup: |                         # statements run first (the job's source table, its stream, …)
//	  CREATE TABLE orders (id INT, name STRING, PRIMARY KEY (id));
//	setup_files: [setup.sql]         # files of statements, relative to this file, run before setup
//	requires: postgres               # optional: the cases need PostgreSQL; with a reason:
//	reason: uses a jsonb column      #   skipped unless `sluice test --conn postgres://…`
//	cases:
//	  - name: an insert and a delete
//	    source:                      # rows of the source table before (not changes)
//	      - {id: 1, name: Alice}
//	    target:                      # rows of the target before (the table must exist)
//	      - {id: 9, name: Old}
//	    changes:                     # the changes of one run: statements, or rows
//	      - INSERT INTO orders VALUES (2, 'Bob')
//	      - {__change_type: DELETE, id: 1}
//	    # runs: [[…changes of run 1…], […run 2…]] instead of changes: for several runs
//	    expect:                      # the target's rows after the last run
//	      - {id: 2, name: Bob}
//
// A change given as a row is made a statement on the job's source table:
// INSERT inserts the row, UPDATE_AFTER sets the row's other columns where
// its primary-key columns match, DELETE deletes where they match;
// UPDATE_BEFORE is not a change one makes and is refused. Values are
// YAML scalars (null is NULL); they are compared with the target's values
// after conversion to the target column's type (so 1500 equals 1500.00,
// and a timestamp equals the same instant in another zone). Expected rows
// may leave columns out (a history's __valid_from, say): only the columns
// they name are compared. Rows are matched by the job's keys, else the
// target's primary key, else all compared columns.
//
// The job's connections are replaced by the test database, so a job
// written for a file or a server runs unchanged.
package jobtest
