package repo_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/tools/repo"
)

// The sizes a reader can hold in mind: a file read in one sitting, a
// function seen whole on one screen.
const (
	maxFileLines = 600
	maxFuncLines = 80
)

// TestFilesAndFunctionsStayReadable holds every non-test Go file of what
// ships (functions/, shared/, cmd/, internal/) and of tools/ (whose
// numbers the docs quote) to at most maxFileLines lines, and each of their
// functions, from its func line to its closing brace, to maxFuncLines.
// Tests are not held to it: a table of cases is long by nature.
func TestFilesAndFunctionsStayReadable(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	var files, funcs []string
	seen := 0
	for _, dir := range []string{"functions", "shared", "cmd", "internal", "tools"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			rel, _ := filepath.Rel(root, path)
			f, fn, err := oversize(path, rel)
			if err != nil {
				return err
			}
			seen++
			files, funcs = append(files, f...), append(funcs, fn...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if seen < 100 {
		t.Fatalf("read %d Go files, want every one of the tree (more than 100)", seen)
	}
	for _, f := range files {
		t.Errorf("%s: split it by what its parts do (at most %d lines)", f, maxFileLines)
	}
	for _, f := range funcs {
		t.Errorf("%s: split it into steps with names (at most %d lines)", f, maxFuncLines)
	}
}

// oversize returns the file (as "path: N lines") when it is too long, and
// each of its functions that is.
func oversize(path, rel string) (files, funcs []string, err error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, nil, err
	}
	if n := fset.File(f.Pos()).LineCount(); n > maxFileLines {
		files = append(files, fmt.Sprintf("%s: %d lines", rel, n))
	}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		start, end := fset.Position(fd.Pos()).Line, fset.Position(fd.End()).Line
		if n := end - start + 1; n > maxFuncLines {
			name := fd.Name.Name
			if fd.Recv != nil && len(fd.Recv.List) > 0 {
				name = types(fd.Recv.List[0].Type) + "." + name
			}
			funcs = append(funcs, fmt.Sprintf("%s:%d: %s: %d lines", rel, start, name, n))
		}
	}
	return files, funcs, nil
}

// types names a receiver's type, without its pointer or type parameters.
func types(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return types(e.X)
	case *ast.IndexExpr:
		return types(e.X)
	case *ast.IndexListExpr:
		return types(e.X)
	case *ast.Ident:
		return e.Name
	}
	return "?"
}
