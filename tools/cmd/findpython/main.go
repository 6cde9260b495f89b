// Command findpython prints the path of a Python interpreter of at least
// the version asked, found on PATH or through pyenv, for the virtualenvs
// make builds: LocalStack (dev/localstack.lock) needs a newer Python than
// the project's other tools, and a machine may well have it only through
// pyenv, whose shims for other versions fail when run.
//
//	findpython -min 3.13 -for "LocalStack"
//
// It prefers the minimum version itself (the lock files are resolved for
// it), then newer ones; PATH before pyenv. When none is found it fails and
// names what it tried and what to install.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

func main() {
	min := flag.String("min", "3.13", "lowest acceptable version, major.minor")
	what := flag.String("for", "this", "what needs it, for the error message")
	flag.Parse()
	want, err := parseVersion(*min)
	if err != nil {
		fmt.Fprintln(os.Stderr, "findpython: -min:", err)
		os.Exit(2)
	}
	path, err := find(want, *what, os.Getenv("PATH"), pyenvRoot(), run)
	if err != nil {
		fmt.Fprintln(os.Stderr, "findpython:", err)
		os.Exit(1)
	}
	fmt.Println(path)
}

type version struct{ major, minor int }

func (v version) String() string { return fmt.Sprintf("%d.%d", v.major, v.minor) }

func (v version) less(w version) bool {
	return v.major < w.major || v.major == w.major && v.minor < w.minor
}

func parseVersion(s string) (version, error) {
	parts := strings.Split(strings.TrimSpace(s), ".")
	if len(parts) < 2 {
		return version{}, fmt.Errorf("%q is not major.minor", s)
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return version{}, fmt.Errorf("%q is not major.minor", s)
	}
	return version{major, minor}, nil
}

// candidate is an interpreter and the version it reported.
type candidate struct {
	path  string
	v     version
	pyenv bool
}

// run asks an interpreter its version.
func run(path string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "-c", `import sys; print("%d.%d" % sys.version_info[:2])`).Output()
	return strings.TrimSpace(string(out)), err
}

func pyenvRoot() string {
	if r := os.Getenv("PYENV_ROOT"); r != "" {
		return r
	}
	if out, err := exec.Command("pyenv", "root").Output(); err == nil {
		return strings.TrimSpace(string(out))
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".pyenv")
	}
	return ""
}

// find returns the best interpreter of at least want: on the directories
// of pathList, then in pyenv's versions under root.
func find(want version, what, pathList, root string, ask func(string) (string, error)) (string, error) {
	s := &search{want: want, ask: ask, seen: map[string]bool{}}
	s.onPath(pathList)
	pyenvNote := s.inPyenv(root)
	var ok []candidate
	for _, c := range s.found {
		if !c.v.less(want) {
			ok = append(ok, c)
		}
	}
	if len(ok) == 0 {
		tried := s.tried
		if len(tried) == 0 {
			tried = []string{fmt.Sprintf("no python%d on PATH", want.major)}
		}
		return "", fmt.Errorf("%s needs Python >= %s, and none was found.\n  tried: %s\n  %s\n"+
			"Install Python %s (`pyenv install %s`, or your system's python%s package), then run make again",
			what, want, strings.Join(tried, "; "), pyenvNote, want, want, want)
	}
	sort.SliceStable(ok, func(i, j int) bool {
		a, b := ok[i], ok[j]
		if (a.v == want) != (b.v == want) {
			return a.v == want
		}
		if a.v != b.v {
			return a.v.less(b.v)
		}
		return !a.pyenv && b.pyenv
	})
	return ok[0].path, nil
}

// search is one find's interpreters tried and found.
type search struct {
	want  version
	ask   func(string) (string, error)
	found []candidate
	tried []string
	seen  map[string]bool
}

// try asks the interpreter at path its version, once per real file.
func (s *search) try(path string, pyenv bool) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		real = path
	}
	if s.seen[real] {
		return
	}
	s.seen[real] = true
	out, err := s.ask(path)
	if err != nil {
		s.tried = append(s.tried, path+" does not run (a pyenv shim for a version not selected?)")
		return
	}
	v, err := parseVersion(out)
	if err != nil {
		s.tried = append(s.tried, path+" reports no version")
		return
	}
	s.tried = append(s.tried, fmt.Sprintf("%s is %s", path, v))
	s.found = append(s.found, candidate{path, v, pyenv})
}

// onPath tries pythonX.Y (from the wanted minor version up six) and
// pythonX on the directories of pathList.
func (s *search) onPath(pathList string) {
	want := s.want
	var names []string
	for minor := want.minor; minor <= want.minor+6; minor++ {
		names = append(names, fmt.Sprintf("python%d.%d", want.major, minor))
	}
	names = append(names, fmt.Sprintf("python%d", want.major))
	for _, dir := range filepath.SplitList(pathList) {
		if dir == "" {
			continue
		}
		for _, name := range names {
			p := filepath.Join(dir, name)
			if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
				s.try(p, false)
			}
		}
	}
}

// inPyenv tries the versions of the wanted major under pyenv's root; it
// returns what pyenv has, for the error.
func (s *search) inPyenv(root string) string {
	want := s.want
	pyenvNote := "no pyenv"
	if root == "" {
		return pyenvNote
	}
	entries, err := os.ReadDir(filepath.Join(root, "versions"))
	if err != nil {
		return pyenvNote
	}
	var have []string
	for _, e := range entries {
		if v, err := parseVersion(e.Name()); err == nil && v.major == want.major {
			have = append(have, e.Name())
			p := filepath.Join(root, "versions", e.Name(), "bin", fmt.Sprintf("python%d", want.major))
			if _, err := os.Stat(p); err == nil {
				s.try(p, true)
			}
		}
	}
	if len(have) == 0 {
		return fmt.Sprintf("pyenv (%s) has no Python %d", root, want.major)
	}
	return fmt.Sprintf("pyenv (%s) has %s", root, strings.Join(have, ", "))
}
