package docs

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"
)

// Doc is one Markdown file as the checks read it.
type Doc struct {
	// Path is the file's path from the repository's root, with slashes.
	Path string
	// Code holds the text a reader could copy: each fenced or indented
	// block whose language is not one of skipLanguages, and each inline
	// code span.
	Code []Code
	// Links holds the destination of every link and image.
	Links []Link
	// Anchors holds the fragment GitHub gives each heading, and the ids of
	// HTML anchors.
	Anchors map[string]bool
}

// Code is a code block or an inline code span.
type Code struct {
	Line  int
	Text  string
	Block bool
}

// Link is a link's destination, as written.
type Link struct {
	Line int
	Dest string
}

// skipLanguages are fenced blocks that show source or data, not commands.
var skipLanguages = map[string]bool{"go": true, "json": true, "yaml": true, "toml": true, "mermaid": true}

var htmlAnchor = regexp.MustCompile(`<a\s+(?:[^>]*\s)?(?:id|name)="([^"]+)"`)

var markdown = goldmark.New(goldmark.WithExtensions(extension.GFM))

// Parse reads one Markdown file.
func Parse(path string, src []byte) *Doc {
	d := &Doc{Path: path, Anchors: map[string]bool{}}
	lines := newLineIndex(src)
	seen := map[string]int{}
	root := markdown.Parser().Parse(text.NewReader(src))
	_ = ast.Walk(root, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.FencedCodeBlock:
			if !skipLanguages[strings.ToLower(string(n.Language(src)))] {
				d.addBlock(n.Lines(), src, lines)
			}
			return ast.WalkSkipChildren, nil
		case *ast.CodeBlock:
			d.addBlock(n.Lines(), src, lines)
			return ast.WalkSkipChildren, nil
		case *ast.CodeSpan:
			d.Code = append(d.Code, Code{Line: lines.at(start(n)), Text: strings.TrimSpace(plain(n, src))})
			return ast.WalkSkipChildren, nil
		case *ast.Link:
			d.Links = append(d.Links, Link{Line: lines.at(start(n)), Dest: string(n.Destination)})
		case *ast.Image:
			d.Links = append(d.Links, Link{Line: lines.at(start(n)), Dest: string(n.Destination)})
		case *ast.Heading:
			slug := Slug(plain(n, src))
			// GitHub numbers repeated headings: x, x-1, x-2.
			if k := seen[slug]; k > 0 {
				seen[slug] = k + 1
				slug = slug + "-" + strconv.Itoa(k)
			} else {
				seen[slug] = 1
			}
			d.Anchors[slug] = true
		}
		return ast.WalkContinue, nil
	})
	for _, m := range htmlAnchor.FindAllSubmatch(src, -1) {
		d.Anchors[string(m[1])] = true
	}
	return d
}

func (d *Doc) addBlock(segs *text.Segments, src []byte, lines lineIndex) {
	if segs.Len() == 0 {
		return
	}
	d.Code = append(d.Code, Code{Line: lines.at(segs.At(0).Start), Text: string(segs.Value(src)), Block: true})
}

// plain is the text of n as it renders, without markup: what GitHub makes
// a heading's anchor from.
func plain(n ast.Node, src []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch c := c.(type) {
		case *ast.Text:
			b.Write(c.Value(src))
			if c.SoftLineBreak() || c.HardLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(c.Value)
		case *ast.RawHTML:
			return ast.WalkSkipChildren, nil
		}
		return ast.WalkContinue, nil
	})
	return strings.ReplaceAll(b.String(), "\n", " ")
}

// start is the offset of the first text inside an inline node, -1 when it
// has none; then its block's first line.
func start(n ast.Node) int {
	at := -1
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if t, ok := c.(*ast.Text); ok && entering {
			at = t.Segment.Start
			return ast.WalkStop, nil
		}
		return ast.WalkContinue, nil
	})
	for p := n; at < 0 && p != nil; p = p.Parent() {
		if p.Type() == ast.TypeBlock && p.Lines().Len() > 0 {
			at = p.Lines().At(0).Start
		}
	}
	return at
}

// Slug is the anchor GitHub gives a heading with this text: lower case,
// each space a hyphen, and every character that is not a letter, a digit,
// a mark, a hyphen or an underscore dropped ("Cost: `make cost`" is
// cost-make-cost).
func Slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// lineIndex holds the offset of each line's start.
type lineIndex []int

func newLineIndex(src []byte) lineIndex {
	idx := lineIndex{0}
	for i, c := range src {
		if c == '\n' {
			idx = append(idx, i+1)
		}
	}
	return idx
}

// at is the 1-based line of offset off (0 when unknown).
func (l lineIndex) at(off int) int {
	if off < 0 {
		return 0
	}
	lo, hi := 0, len(l)
	for lo+1 < hi {
		mid := (lo + hi) / 2
		if l[mid] <= off {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo + 1
}
