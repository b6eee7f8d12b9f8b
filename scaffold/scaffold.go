// Package scaffold writes the files of a new sluice project, as
// `sluice init` makes it: a setup script for a demo source table with
// change tracking and streams, one YAML and one SQL job reading them with a
// test of each (`sluice test`), a README and a .gitignore for SQLite
// databases. It does no database I/O.
package scaffold

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"text/template"
)

//go:embed project
var project embed.FS

// ErrExists is wrapped by Write's error when a file it would write exists.
var ErrExists = errors.New("refusing to overwrite existing files")

// Options are the parts of a project that vary.
type Options struct {
	// Name titles the README (for example the directory's base name).
	Name string
	// Conn is the connection URL the project's commands use, as it may
	// be printed (its password already masked); "" for the default
	// connection (sqlite:sluice.db in the working directory).
	Conn string
}

// Files returns the project's files: slash-separated paths relative to
// the project directory (".gitignore", "README.md", "setup.sql",
// "jobs/…") mapped to their contents.
func Files(o Options) (map[string][]byte, error) {
	out := map[string][]byte{}
	err := fs.WalkDir(project, "project", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := project.ReadFile(p)
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(p, "project/")
		switch {
		case rel == "gitignore": // embed leaves out dotfiles
			rel = ".gitignore"
		case strings.HasSuffix(rel, ".tmpl"):
			rel = strings.TrimSuffix(rel, ".tmpl")
			if b, err = render(p, b, o); err != nil {
				return err
			}
		}
		out[rel] = b
		return nil
	})
	return out, err
}

// render executes a README template with o.
func render(name string, text []byte, o Options) ([]byte, error) {
	t, err := template.New(path.Base(name)).Parse(string(text))
	if err != nil {
		return nil, err
	}
	data := struct{ Name, ConnFlag, ConnNote string }{Name: o.Name,
		ConnNote: "the default, `sqlite:sluice.db` in this directory (or `$SLUICE_CONN`); give another with `--conn URL`."}
	if o.Conn != "" {
		data.ConnFlag = " --conn '" + o.Conn + "'"
		data.ConnNote = "`" + o.Conn + "` (or set `$SLUICE_CONN` and leave out `--conn`)."
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Write creates dir if needed and writes the project's files into it. It
// overwrites nothing: when any of the files exists it writes none and
// returns an error wrapping ErrExists that names them all. It returns the
// paths written (dir joined with each file), sorted.
func Write(dir string, o Options) ([]string, error) {
	files, err := Files(o)
	if err != nil {
		return nil, err
	}
	rels := make([]string, 0, len(files))
	for rel := range files {
		rels = append(rels, rel)
	}
	slices.Sort(rels)
	var exist []string
	for _, rel := range rels {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if _, err := os.Lstat(p); err == nil {
			exist = append(exist, p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	if len(exist) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrExists, strings.Join(exist, ", "))
	}
	var written []string
	for _, rel := range rels {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return written, err
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return written, err
		}
		_, err = f.Write(files[rel])
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return written, err
		}
		written = append(written, p)
	}
	return written, nil
}
