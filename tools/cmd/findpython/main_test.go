package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeBin makes an executable file at dir/name.
func fakeBin(t *testing.T, dir, name string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFind(t *testing.T) {
	want := version{3, 13}
	for _, tc := range []struct {
		name string
		// path holds name -> reported version ("" fails to run, as a pyenv
		// shim of an unselected version does); pyenv holds versions.
		path  map[string]string
		pyenv map[string]string
		// pick is the chosen file's name and whether it is pyenv's.
		pick      string
		fromPyenv bool
		err       string
	}{
		{name: "on PATH", path: map[string]string{"python3.13": "3.13", "python3": "3.11"}, pick: "python3.13"},
		{name: "python3 is new enough", path: map[string]string{"python3": "3.13"}, pick: "python3"},
		{name: "a shim that fails, then pyenv", path: map[string]string{"python3.13": "", "python3": "3.11"}, pyenv: map[string]string{"3.12.1": "3.12", "3.13.0": "3.13"}, pick: "python3", fromPyenv: true},
		{name: "the minimum before newer ones", path: map[string]string{"python3.14": "3.14"}, pyenv: map[string]string{"3.13.0": "3.13"}, pick: "python3", fromPyenv: true},
		{name: "newer when the minimum is missing", path: map[string]string{"python3.14": "3.14", "python3": "3.11"}, pick: "python3.14"},
		{name: "none", path: map[string]string{"python3.13": "", "python3": "3.11"}, pyenv: map[string]string{"3.12.1": "3.12"},
			err: "LocalStack needs Python >= 3.13, and none was found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			bin, root := filepath.Join(dir, "bin"), filepath.Join(dir, "pyenv")
			reports := map[string]string{}
			for name, v := range tc.path {
				reports[fakeBin(t, bin, name)] = v
			}
			for dirName, v := range tc.pyenv {
				reports[fakeBin(t, filepath.Join(root, "versions", dirName, "bin"), "python3")] = v
			}
			ask := func(p string) (string, error) {
				if v := reports[p]; v != "" {
					return v, nil
				}
				return "", errors.New("exit status 127")
			}
			got, err := find(want, "LocalStack", bin, root, ask)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "pyenv install 3.13") {
					t.Fatalf("got %q, %v; want an error %q that says what to install", got, err, tc.err)
				}
				for _, name := range []string{"python3.13 does not run", "python3 is 3.11", "has 3.12.1"} {
					if !strings.Contains(err.Error(), name) {
						t.Errorf("error does not say %q:\n%v", name, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if filepath.Base(got) != tc.pick || strings.HasPrefix(got, root) != tc.fromPyenv {
				t.Errorf("got %s, want %s (from pyenv: %v)", got, tc.pick, tc.fromPyenv)
			}
		})
	}
}

// TestRunAsksTheInterpreter: run executes the file and reads its answer.
func TestRunAsksTheInterpreter(t *testing.T) {
	p := fakeBin(t, t.TempDir(), "python3")
	if err := os.WriteFile(p, []byte("#!/bin/sh\necho 3.13\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if v, err := run(p); err != nil || v != "3.13" {
		t.Errorf("got %q, %v", v, err)
	}
}
