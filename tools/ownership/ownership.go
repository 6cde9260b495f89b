package ownership

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Finding is one use of an owned name outside its owner.
type Finding struct {
	Pos  token.Position
	Name string
	Rule string // exact, expression or item
}

func (f Finding) String() string {
	return fmt.Sprintf("%s: %q (%s)", f.Pos, f.Name, f.Rule)
}

// Owned returns the names the package in dir owns: its string constants
// whose identifiers start with attr, index or prefix (any case), and the
// names of its dynamodbav struct tags, from its non-test Go files.
func Owned(dir string) ([]string, error) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				for i, id := range n.Names {
					if i >= len(n.Values) || !ownedIdent(id.Name) {
						continue
					}
					if v, ok := stringLit(n.Values[i]); ok {
						names = append(names, v)
					}
				}
			case *ast.Field:
				if n.Tag == nil {
					return true
				}
				tag, _ := strconv.Unquote(n.Tag.Value)
				if name, _, _ := strings.Cut(reflect.StructTag(tag).Get("dynamodbav"), ","); name != "" && name != "-" {
					names = append(names, name)
				}
			}
			return true
		})
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// Rules is what Scan looks for.
type Rules struct {
	// Names are the owned names.
	Names []string
	// Vocabulary are owned names that other vocabularies use as well: they
	// may appear as whole literals, never in expressions or items.
	Vocabulary map[string]string // name: where else it is used
	// Except are names Scan never reports (a key schema every table
	// shares, say), with the reason.
	Except map[string]string
	// AllowedIn are, per directory relative to the root (slash-separated),
	// names another owner owns too (its own table's attribute of the same
	// name).
	AllowedIn map[string][]string
}

// Scan reports the uses of owned names in the Go files under root, except
// those in the directories skip (relative, slash-separated; the owner's
// own) and in directories whose names start with "." (tools' virtual
// environments and caches).
func Scan(root string, skip []string, r Rules) ([]Finding, int, error) {
	var out []Finding
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || slices.Contains(skip, rel)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		found, err := ScanSource(rel, src, r.forDir(filepath.ToSlash(filepath.Dir(rel))))
		if err != nil {
			return err
		}
		files++
		out = append(out, found...)
		return nil
	})
	return out, files, err
}

// forDir returns r without the names another owner in dir owns too.
func (r Rules) forDir(dir string) Rules {
	allowed := r.AllowedIn[dir]
	if len(allowed) == 0 {
		return r
	}
	out := r
	out.Names = slices.DeleteFunc(slices.Clone(r.Names), func(n string) bool { return slices.Contains(allowed, n) })
	return out
}

var (
	// An expression: a :value or #name placeholder, a function, a clause.
	expressionLike = regexp.MustCompile(
		`(^|[\s(,])[:#][A-Za-z_]\w*([\s,)]|$)|\b(attribute_exists|attribute_not_exists|attribute_type|if_not_exists|list_append|begins_with|contains|size)\(|^\s*(SET|REMOVE|ADD|DELETE)\s`,
	)
	// Fields of a request whose string value names attributes or an index.
	requestField = regexp.MustCompile(`(Expression|^IndexName|^ExpressionAttributeNames|^AttributesToGet)$`)
	// Fields of a response (or a request) that hold an item or a key.
	itemField = regexp.MustCompile(`^(Item|Key|Attributes|LastEvaluatedKey|ExclusiveStartKey)$`)
)

// ScanSource reports the uses of owned names in one Go file.
func ScanSource(filename string, src []byte, r Rules) ([]Finding, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filename, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	sc := newScan(fset, r)
	ast.Inspect(f, sc.visit)
	return sc.out, nil
}

// scan is one file's scan: the owned names (less the exceptions), each's
// pattern as a word, and what it found.
type scan struct {
	fset  *token.FileSet
	r     Rules
	names []string
	words []*regexp.Regexp
	out   []Finding
	// done holds the literals found in a rule's position: not reported
	// twice.
	done map[*ast.BasicLit]bool
}

func newScan(fset *token.FileSet, r Rules) *scan {
	names := slices.DeleteFunc(slices.Clone(r.Names), func(n string) bool { _, ok := r.Except[n]; return ok })
	words := make([]*regexp.Regexp, len(names))
	for i, n := range names {
		// Not a :value or #name placeholder of the same spelling.
		expr := `(^|[^\w:#])` + regexp.QuoteMeta(n)
		if !strings.HasSuffix(n, "#") {
			expr += `([^\w]|$)`
		}
		words[i] = regexp.MustCompile(expr)
	}
	return &scan{fset: fset, r: r, names: names, words: words, done: map[*ast.BasicLit]bool{}}
}

func (sc *scan) report(lit *ast.BasicLit, name, rule string) {
	sc.out = append(sc.out, Finding{Pos: sc.fset.Position(lit.Pos()), Name: name, Rule: rule})
}

// inWords reports the first owned name lit holds as a word.
func (sc *scan) inWords(lit *ast.BasicLit, rule string) {
	v, ok := unquote(lit)
	if !ok || sc.done[lit] {
		return
	}
	for i, n := range sc.names {
		if sc.words[i].MatchString(v) {
			sc.done[lit] = true
			sc.report(lit, n, rule)
			return
		}
	}
}

// exact reports the owned name lit is (or, for a prefix ending in #,
// starts with); the vocabulary shared between packages only when
// vocabularyToo.
func (sc *scan) exact(lit *ast.BasicLit, rule string, vocabularyToo bool) {
	v, ok := unquote(lit)
	if !ok || sc.done[lit] {
		return
	}
	for _, n := range sc.names {
		_, shared := sc.r.Vocabulary[n]
		if (v == n || strings.HasSuffix(n, "#") && strings.HasPrefix(v, n)) && (vocabularyToo || !shared) {
			sc.done[lit] = true
			sc.report(lit, n, rule)
			return
		}
	}
}

// visit checks one node of the file (ast.Inspect).
func (sc *scan) visit(n ast.Node) bool {
	switch n := n.(type) {
	case *ast.ValueSpec:
		// A package's own attribute constant for an owned name: the
		// owner's attribute declared a second time.
		for i, id := range n.Names {
			if i < len(n.Values) && ownedIdent(id.Name) {
				if lit, ok := n.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					sc.exact(lit, "declared", true)
				}
			}
		}
	case *ast.ImportSpec, *ast.Field:
		// Import paths and struct tags (a Field's other parts hold no
		// literal that matters here).
		return false
	case *ast.KeyValueExpr:
		if key, ok := n.Key.(*ast.Ident); ok && requestField.MatchString(key.Name) {
			ast.Inspect(n.Value, func(m ast.Node) bool {
				if lit, ok := m.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					sc.inWords(lit, "expression")
				}
				return true
			})
		}
	case *ast.CompositeLit:
		if isItemMap(n.Type) {
			for _, el := range n.Elts {
				if kv, ok := el.(*ast.KeyValueExpr); ok {
					if lit, ok := kv.Key.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						sc.exact(lit, "item", true)
					}
				}
			}
		}
	case *ast.IndexExpr:
		if sel, ok := n.X.(*ast.SelectorExpr); ok && itemField.MatchString(sel.Sel.Name) {
			if lit, ok := n.Index.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				sc.exact(lit, "item", true)
			}
		}
	case *ast.BasicLit:
		if n.Kind != token.STRING {
			return true
		}
		if v, ok := unquote(n); ok && expressionLike.MatchString(v) {
			sc.inWords(n, "expression")
		}
		sc.exact(n, "exact", false)
	}
	return true
}

// ownedIdent reports whether a constant of this name declares an owned
// name: attr*, index* or prefix*, in any case.
func ownedIdent(name string) bool {
	l := strings.ToLower(name)
	return strings.HasPrefix(l, "attr") || strings.HasPrefix(l, "index") || strings.HasPrefix(l, "prefix")
}

// isItemMap reports whether t is map[string]<pkg>.AttributeValue.
func isItemMap(t ast.Expr) bool {
	m, ok := t.(*ast.MapType)
	if !ok {
		return false
	}
	sel, ok := m.Value.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "AttributeValue"
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	return unquote(lit)
}

func unquote(lit *ast.BasicLit) (string, bool) {
	if lit.Kind != token.STRING {
		return "", false
	}
	v, err := strconv.Unquote(lit.Value)
	return v, err == nil
}
