// Package jobschema holds the JSON Schema (draft 2020-12) of sluice's YAML
// job files, embedded in the binary; `sluice schema` prints it.
//
// Editors use it for completion and checking. With the YAML language
// server (VS Code, Neovim, …) add a first line to a job file:
//
//	# yaml-language-server: $schema=https://github.com/sluicedata/sluice/jobschema/job.schema.json
//
// or save `sluice schema > job.schema.json` and point $schema at the file.
// The schema mirrors package dsl's YAML walk: the same keys
// (additionalProperties is false everywhere), the same kinds, and the same
// combination rules (table or stdout; keys exactly with mode merge; format
// only with stdout; timezone only with a schedule). What it cannot check —
// expressions, cron syntax, column types — `sluice validate` does.
package jobschema

import (
	_ "embed"
	"slices"
)

// ID is the schema's $id.
const ID = "https://github.com/sluicedata/sluice/jobschema/job.schema.json"

//go:embed job.schema.json
var schema []byte

// JSON returns the schema document (indented JSON ending in a newline).
// The caller may modify the returned slice.
func JSON() []byte { return slices.Clone(schema) }
