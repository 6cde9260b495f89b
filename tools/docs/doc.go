// Package docs holds the project's documentation to the code: README.md and
// docs/*.md show commands and link to each other, and a command renamed or
// a heading moved would otherwise mislead the next reader without failing
// anything. Its test (make test) reads every Markdown file and reports:
//
//   - a `make <target>` whose target the Makefile does not define;
//   - an `inboxctl ...` whose subcommand or flag inboxctl's command tree
//     (internal/cli) does not have, or has only hidden;
//   - a relative link whose file does not exist, or whose #anchor names no
//     heading of the file it points to, with GitHub's rules for anchors
//     (Slug);
//   - a test, benchmark or fuzz target named in code that no _test.go file
//     of the repository declares.
//
// Commands are read where a reader would copy them from: fenced code blocks
// (except those marked go, json, yaml, toml or mermaid) and inline code
// spans, at the start of a shell command (after VAR=value assignments, or
// as `go run ./cmd/inboxctl`), never in prose. The examples of inboxctl's
// own --help are read the same way.
//
// The Markdown is read with a few rules rather than a Markdown library: the
// checks need only fences, code spans, headings and links, and a library
// would be a dependency for a test that reads six files.
package docs
