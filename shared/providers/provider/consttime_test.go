package provider

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSignaturesAreComparedInConstantTime holds the package's code to
// hmac.Equal for every MAC, token claim or digest it compares: no ==, !=
// or bytes.Equal on a value whose name says it is one (sig, mac, sum,
// digest, hash), other than against a literal, nil or a sentinel error. Two of the vendors' own
// SDKs compare with ===; a comparison that stops at the first differing
// byte tells a forger how much of a guess was right. The one bytes.Equal
// allowed compares a Stripe header with its own re-encoding (inboxctl
// verify's diagnosis), no secret.
func TestSignaturesAreComparedInConstantTime(t *testing.T) {
	allowed := map[string]int{"stripediagnose.go": 1}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var secretish func(e ast.Expr) bool
	secretish = func(e ast.Expr) bool {
		var name string
		switch x := e.(type) {
		case *ast.Ident:
			name = x.Name
		case *ast.SelectorExpr:
			name = x.Sel.Name
		case *ast.CallExpr:
			if s, ok := x.Fun.(*ast.SelectorExpr); ok && (s.Sel.Name == "Sum" || s.Sel.Name == "EncodeToString") {
				return true
			}
			// A conversion, string(mac): what it converts. A length is
			// public.
			if f, ok := x.Fun.(*ast.Ident); ok && f.Name != "len" && len(x.Args) == 1 {
				return secretish(x.Args[0])
			}
		}
		name = strings.ToLower(name)
		for _, w := range []string{"sig", "mac", "sum", "digest", "hash"} {
			if strings.Contains(name, w) {
				return true
			}
		}
		return false
	}
	// A literal (a count's 0, "") or a sentinel error (ErrReplay) is
	// no secret to compare against.
	empty := func(e ast.Expr) bool {
		if _, ok := e.(*ast.BasicLit); ok {
			return true
		}
		id, ok := e.(*ast.Ident)
		return ok && (id.Name == "nil" || strings.HasPrefix(id.Name, "Err"))
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, f, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		equals := 0
		ast.Inspect(file, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.BinaryExpr:
				if (x.Op == token.EQL || x.Op == token.NEQ) && (secretish(x.X) || secretish(x.Y)) && !empty(x.X) && !empty(x.Y) {
					t.Errorf("%s: %s compares a MAC-like value with %s: use hmac.Equal", f, fset.Position(x.Pos()), x.Op)
				}
			case *ast.CallExpr:
				if s, ok := x.Fun.(*ast.SelectorExpr); ok {
					if pkg, ok := s.X.(*ast.Ident); ok && pkg.Name == "bytes" && s.Sel.Name == "Equal" {
						equals++
					}
				}
			}
			return true
		})
		if equals > allowed[f] {
			t.Errorf("%s: %d bytes.Equal, want %d: compare MACs with hmac.Equal", f, equals, allowed[f])
		}
	}
}
