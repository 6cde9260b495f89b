package docs

import (
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Problem is one thing a document says that the repository contradicts.
type Problem struct {
	File string
	Line int
	Msg  string
}

func (p Problem) String() string { return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg) }

// Checker checks documents against one repository.
type Checker struct {
	// Root is the repository's root directory.
	Root string
	// Targets are the Makefile's targets (MakeTargets).
	Targets map[string]bool
	// CLI is inboxctl's command tree.
	CLI *cobra.Command
	// Tests are the Test, Benchmark and Fuzz functions the repository
	// declares (TestNames).
	Tests map[string]bool
	// SamEnvs are samconfig.toml's environments (package samconfig): a
	// `sam` command must name one of them, and a deploy must not be
	// --guided. Nil checks no sam command.
	SamEnvs map[string]bool
	// Pending names documents another change is writing, with why: a link
	// to one passes while it does not exist, as long as it names no anchor
	// (there is nothing yet to check one against). Once the file exists
	// the entry is a problem of its own, so that it is removed and the
	// links are checked like any other.
	Pending map[string]string

	docs     map[string]*Doc
	prepared bool
}

// Check checks docs: their commands, their links, and the tests they name.
func (c *Checker) Check(docs []*Doc) []Problem {
	c.docs = map[string]*Doc{}
	for _, d := range docs {
		c.docs[d.Path] = d
	}
	var out []Problem
	for _, d := range docs {
		for _, code := range d.Code {
			for _, f := range c.commands(code.Text, code.Block) {
				out = append(out, Problem{d.Path, code.Line + f.line, f.msg})
			}
			for _, msg := range c.testNames(code.Text) {
				out = append(out, Problem{d.Path, code.Line, msg})
			}
		}
		for _, l := range d.Links {
			if msg := c.link(d, l.Dest); msg != "" {
				out = append(out, Problem{d.Path, l.Line, msg})
			}
		}
	}
	for p, why := range c.Pending {
		if _, err := os.Stat(filepath.Join(c.Root, filepath.FromSlash(p))); err == nil {
			out = append(out, Problem{p, 0, fmt.Sprintf("exists now: remove it from Pending (%s), so that links to it are checked", why)})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Line < out[j].Line
	})
	return out
}

// CheckExamples checks the Example of every command of inboxctl's tree,
// which its --help prints.
func (c *Checker) CheckExamples() []Problem {
	c.prepare()
	var out []Problem
	var walk func(*cobra.Command)
	walk = func(cmd *cobra.Command) {
		for _, f := range c.commands(cmd.Example, true) {
			out = append(out, Problem{cmd.CommandPath() + " --help, example", f.line + 1, f.msg})
		}
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(c.CLI)
	return out
}

// prepare adds to the tree what cobra adds only when it executes: the help
// command and every command's --help flag.
func (c *Checker) prepare() {
	if c.prepared || c.CLI == nil {
		return
	}
	c.prepared = true
	c.CLI.InitDefaultHelpCmd()
	var walk func(*cobra.Command)
	walk = func(cmd *cobra.Command) {
		cmd.InitDefaultHelpFlag()
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(c.CLI)
}

// Commands checks the make and inboxctl commands in one piece of code and
// returns what is wrong with them. A block is read line by line, a line
// that ends in a backslash or is followed by an indented line starting with
// [ or - (a usage synopsis) continuing onto the next.
func (c *Checker) Commands(code string, block bool) []string {
	var out []string
	for _, f := range c.commands(code, block) {
		out = append(out, f.msg)
	}
	return out
}

// finding is a problem on a line of a piece of code, counted from 0.
type finding struct {
	line int
	msg  string
}

func (c *Checker) commands(code string, block bool) []finding {
	c.prepare()
	var out []finding
	for _, l := range commandLines(code, block) {
		for _, seg := range segments(tokenize(l.text)) {
			for _, msg := range c.segment(seg) {
				out = append(out, finding{l.n, msg})
			}
		}
	}
	return out
}

var continuation = regexp.MustCompile(`^\s+[\[-]`)

type line struct {
	n    int
	text string
}

func commandLines(code string, block bool) []line {
	if !block {
		return []line{{0, strings.ReplaceAll(code, "\n", " ")}}
	}
	raw := strings.Split(code, "\n")
	var out []line
	for i := 0; i < len(raw); i++ {
		l := line{i, raw[i]}
		for i+1 < len(raw) && (strings.HasSuffix(strings.TrimRight(l.text, " "), "\\") || continuation.MatchString(raw[i+1])) {
			l.text = strings.TrimSuffix(strings.TrimRight(l.text, " "), "\\") + " " + raw[i+1]
			i++
		}
		out = append(out, l)
	}
	return out
}

// tokenize splits a shell line into words: quotes group (and are removed),
// an unquoted # that starts a word ends the line.
func tokenize(line string) []string {
	var out []string
	var cur strings.Builder
	inWord := false
	var quote rune
	flush := func() {
		if inWord {
			out = append(out, cur.String())
		}
		cur.Reset()
		inWord = false
	}
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			flush()
		case r == '#' && !inWord:
			flush()
			return out
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	flush()
	return out
}

// segments splits words into simple commands at the shell's operators, and
// drops redirections. A | inside [ ] is a synopsis' "or", not a pipe.
func segments(words []string) [][]string {
	var out [][]string
	var cur []string
	depth := 0
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case w == "|" && depth > 0:
			continue
		case w == "|" || w == "||" || w == "&&" || w == ";" || w == "&" || w == "(" || w == ")":
			out = append(out, cur)
			cur = nil
			continue
		case w == "<" || w == ">" || w == ">>" || w == "2>" || w == "&>":
			i++ // and its file
			continue
		case placeholder(w):
		case strings.HasPrefix(w, "<") || strings.HasPrefix(w, ">") || strings.HasPrefix(w, "2>"):
			continue
		}
		depth += strings.Count(w, "[") - strings.Count(w, "]")
		cur = append(cur, w)
	}
	return append(out, cur)
}

// placeholder reports whether w stands for a value the reader fills in.
func placeholder(w string) bool {
	w = strings.Trim(w, "[]")
	return strings.HasPrefix(w, "<") && strings.Contains(w, ">") || strings.HasPrefix(w, "$") || w == "..."
}

var assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

func (c *Checker) segment(words []string) []string {
	var out []string
	if len(words) > 0 && words[0] == "export" {
		words = words[1:]
	}
	for len(words) > 0 && (words[0] == "$" || assignment.MatchString(words[0])) {
		out = append(out, secretAssignment(words[0])...)
		words = words[1:]
	}
	return append(out, c.command(words)...)
}

// command checks one command, its assignments taken off.
func (c *Checker) command(words []string) []string {
	if len(words) == 0 {
		return nil
	}
	switch {
	case words[0] == "make":
		return c.make(words[1:])
	case words[0] == "sam":
		return c.sam(words[1:])
	case words[0] == "aws" || words[0] == "awslocal":
		return secretArgument(words)
	case words[0] == "inboxctl" || strings.HasSuffix(words[0], "/inboxctl"):
		return c.inboxctl(words[1:])
	case words[0] == "go" && len(words) > 1 && words[1] == "run":
		for i := 2; i < len(words); i++ {
			if strings.HasPrefix(words[i], "-") {
				continue
			}
			if words[i] == "./cmd/inboxctl" {
				return c.inboxctl(words[i+1:])
			}
			return nil
		}
	}
	return nil
}

// secretVariables are the variables that hold a secret's value (the
// local stack's and inboxctl's).
var secretVariables = []string{"STRIPE_WEBHOOK_SECRET", "STRIPE_API_KEY", "FORWARD_SECRET"}

// publicValue reports whether v is a value the docs may show on a
// command line: the local stack's development secret, published in the
// code, or a reference to one read elsewhere.
func publicValue(v string) bool {
	return v == "" || strings.Contains(v, "local_development_only") || strings.HasPrefix(v, "file://")
}

// secretAssignment reports a secret's value typed into a command line: it
// stays in the shell's history. `read -rs NAME` reads it from the terminal
// instead.
func secretAssignment(w string) []string {
	name, value, _ := strings.Cut(w, "=")
	// $VAR or $(command): a value read elsewhere, not typed here.
	if slices.Contains(secretVariables, name) && !publicValue(value) && !strings.HasPrefix(value, "$") {
		return []string{
			fmt.Sprintf("%s=...: a secret typed on a command line stays in the shell's history; read it with `read -rs %s && export %s`", name, name, name),
		}
	}
	return nil
}

// secretArgument reports a parameter's value given as an argument of
// `aws ssm put-parameter`: other users see it (ps, /proc) and the shell
// keeps it. --value file:///dev/stdin reads it from a pipe.
func secretArgument(words []string) []string {
	if !slices.Contains(words, "put-parameter") {
		return nil
	}
	for i, w := range words {
		name, value, has := strings.Cut(w, "=")
		if name != "--value" {
			continue
		}
		if !has && i+1 < len(words) {
			value = words[i+1]
		}
		if !publicValue(value) {
			return []string{
				fmt.Sprintf(
					"%s ssm put-parameter --value %s: a secret on the command line is visible to other users (ps) and kept in shell history; pipe it to --value file:///dev/stdin",
					words[0],
					value,
				),
			}
		}
	}
	return nil
}

// sam checks a SAM CLI command against samconfig.toml: a deploy runs
// from one of its environments (--config-env), never --guided (its
// prompts stop on defaults that answer no), and an environment a command
// names exists.
func (c *Checker) sam(words []string) []string {
	if c.SamEnvs == nil || len(words) == 0 {
		return nil
	}
	sub := words[0]
	var env string
	var out []string
	for i := 1; i < len(words); i++ {
		name, value, has := strings.Cut(words[i], "=")
		switch name {
		case "--config-env":
			if !has && i+1 < len(words) {
				value = words[i+1]
				i++
			}
			env = value
		case "--guided", "-g":
			out = append(
				out,
				fmt.Sprintf("sam %s --guided: its prompts stop on defaults that answer no; deploy from samconfig.toml with --config-env <env>", sub),
			)
		}
	}
	switch {
	case env != "" && !placeholder(env) && !c.SamEnvs[env]:
		out = append(out, fmt.Sprintf("sam %s --config-env %s: samconfig.toml has no environment %q", sub, env, env))
	case env == "" && sub == "deploy":
		out = append(out, "sam deploy without --config-env: deploy one of samconfig.toml's environments (sam deploy --config-env <env>)")
	}
	return out
}

func (c *Checker) make(words []string) []string {
	var out []string
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case w == "-C" || w == "-f" || w == "-j":
			i++
		case strings.HasPrefix(w, "-"), assignment.MatchString(w), placeholder(w), strings.ContainsAny(w, "<>$"):
		case !c.Targets[w]:
			out = append(out, fmt.Sprintf("make %s: the Makefile has no target %q", w, w))
		}
	}
	return out
}

func (c *Checker) inboxctl(words []string) []string {
	if c.CLI == nil {
		return nil
	}
	cmd := c.CLI
	args := false // a positional argument came: no more subcommands
	var out []string
	for i := 0; i < len(words); i++ {
		w := strings.Trim(words[i], "[]")
		if w == "" || w == "|" || w == "..." || w == "--" {
			continue
		}
		if strings.HasPrefix(w, "-") && w != "-" {
			name, _, hasValue := strings.Cut(w, "=")
			f := lookup(cmd, name)
			switch {
			case f == nil:
				out = append(out, fmt.Sprintf("%s: no flag %s", cmd.CommandPath(), name))
			case f.Hidden:
				out = append(out, fmt.Sprintf("%s: %s is hidden (no longer accepted)", cmd.CommandPath(), name))
			case !hasValue && f.NoOptDefVal == "":
				i++ // its value
			}
			continue
		}
		if args || !cmd.HasAvailableSubCommands() {
			args = true
			continue
		}
		sub := subcommand(cmd, w)
		if sub == nil {
			if placeholder(w) {
				args = true
				continue
			}
			return append(out, fmt.Sprintf("%s: no command %q", cmd.CommandPath(), w))
		}
		cmd = sub
	}
	return out
}

func lookup(cmd *cobra.Command, name string) *pflag.Flag {
	var f *pflag.Flag
	if strings.HasPrefix(name, "--") {
		n := strings.TrimPrefix(name, "--")
		if f = cmd.LocalFlags().Lookup(n); f == nil {
			f = cmd.InheritedFlags().Lookup(n)
		}
	} else if n := strings.TrimPrefix(name, "-"); len(n) == 1 {
		if f = cmd.LocalFlags().ShorthandLookup(n); f == nil {
			f = cmd.InheritedFlags().ShorthandLookup(n)
		}
	}
	return f
}

func subcommand(cmd *cobra.Command, name string) *cobra.Command {
	for _, sub := range cmd.Commands() {
		if sub.Name() == name || sub.HasAlias(name) {
			return sub
		}
	}
	return nil
}

var testName = regexp.MustCompile(`\b(?:Test|Benchmark|Fuzz)[A-Z][A-Za-z0-9_]*`)

func (c *Checker) testNames(code string) []string {
	if c.Tests == nil {
		return nil
	}
	var out []string
	for _, n := range testName.FindAllString(code, -1) {
		if !c.Tests[n] {
			out = append(out, fmt.Sprintf("%s: no _test.go file declares it", n))
		}
	}
	return out
}

var scheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
var lineAnchor = regexp.MustCompile(`^L[0-9]+(-L[0-9]+)?$`)

// link checks one link of d and returns what is wrong with it, or "".
func (c *Checker) link(d *Doc, dest string) string {
	if dest == "" || scheme.MatchString(dest) || strings.HasPrefix(dest, "//") {
		return ""
	}
	p, frag, _ := strings.Cut(dest, "#")
	if u, err := url.PathUnescape(p); err == nil {
		p = u
	}
	target := d.Path
	if p != "" {
		target = path.Clean(path.Join(path.Dir(d.Path), p))
		if target == ".." || strings.HasPrefix(target, "../") || path.IsAbs(p) {
			return fmt.Sprintf("link %s: leaves the repository", dest)
		}
		if _, err := os.Stat(filepath.Join(c.Root, filepath.FromSlash(target))); err != nil {
			if _, pending := c.Pending[target]; pending {
				if frag != "" {
					return fmt.Sprintf("link %s: %s is not written yet, so no anchor in it can be checked; link the file", dest, target)
				}
				return ""
			}
			return fmt.Sprintf("link %s: no file %s", dest, target)
		}
	}
	if frag == "" {
		return ""
	}
	if !strings.HasSuffix(target, ".md") {
		if lineAnchor.MatchString(frag) {
			return ""
		}
		return fmt.Sprintf("link %s: #%s in a file that is not Markdown", dest, frag)
	}
	t, err := c.doc(target)
	if err != nil {
		return fmt.Sprintf("link %s: %v", dest, err)
	}
	if !t.Anchors[frag] {
		return fmt.Sprintf("link %s: %s has no heading with anchor #%s", dest, target, frag)
	}
	return ""
}

func (c *Checker) doc(p string) (*Doc, error) {
	if d, ok := c.docs[p]; ok {
		return d, nil
	}
	src, err := os.ReadFile(filepath.Join(c.Root, filepath.FromSlash(p)))
	if err != nil {
		return nil, err
	}
	d := Parse(p, src)
	c.docs[p] = d
	return d, nil
}

var rule = regexp.MustCompile(`(?m)^([A-Za-z0-9][A-Za-z0-9_.-]*(?:[ \t]+[A-Za-z0-9][A-Za-z0-9_.-]*)*)[ \t]*:([^=]|$)`)

// MakeTargets returns the targets a Makefile defines explicitly.
func MakeTargets(makefile []byte) map[string]bool {
	out := map[string]bool{}
	for _, m := range rule.FindAllSubmatch(makefile, -1) {
		for _, t := range strings.Fields(string(m[1])) {
			out[t] = true
		}
	}
	return out
}

var testFunc = regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz)[A-Za-z0-9_]*)\(`)

// TestNames returns the Test, Benchmark and Fuzz functions declared in the
// _test.go files under root, outside hidden directories (the virtualenvs,
// .git).
func TestNames(root string) (map[string]bool, error) {
	out := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && p != root && strings.HasPrefix(e.Name(), ".") {
			return filepath.SkipDir
		}
		if e.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range testFunc.FindAllSubmatch(src, -1) {
			out[string(m[1])] = true
		}
		return nil
	})
	return out, err
}
