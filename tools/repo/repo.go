// Package repo finds the project's root directory, where the template, the
// virtualenv and the emulator's launcher live.
package repo

import (
	"errors"
	"os"
	"path/filepath"
)

// Root returns the nearest directory at or above the working directory that
// holds template.yaml and go.mod.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if exists(filepath.Join(dir, "template.yaml")) && exists(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("repo: not inside the webhook-inbox project (no template.yaml and go.mod above the working directory)")
		}
		dir = parent
	}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
