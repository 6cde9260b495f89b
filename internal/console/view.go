package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/webhook-inbox/webhook-inbox/internal/ops"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

// page is what every template receives.
type page struct {
	Title string
	// Nav is the section the page belongs to, for the navigation's
	// aria-current.
	Nav   string
	Stack string
	// CSRF is the run's form token, for the action forms.
	CSRF string
	// Error is shown above the page's content.
	Error string
	// DLQDepth is the dead-letter queue's depth, shown in the navigation;
	// -1 when it could not be read.
	DLQDepth int
	Data     any
}

// sections map each page template to its navigation section.
var sections = map[string]string{
	"health": "health", "events": "events", "event": "events", "replay": "events", "object": "events",
	"dlq": "dlq", "redrive": "dlq", "reconciler": "reconciler", "audit": "reconciler", "error": "",
}

func (s *Server) parse() error {
	funcs := template.FuncMap{
		"utc":       utc,
		"ago":       func(t time.Time) string { return ago(s.cfg.Now(), t) },
		"unix":      func(v int64) time.Time { return unixTime(v) },
		"ms":        func(v int64) time.Time { return time.UnixMilli(v) },
		"iso":       func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"clip":      clip,
		"root":      func() string { return s.root },
		"statusCSS": statusClass,
		"action":    actionText,
		"path":      url.PathEscape,
		"query":     url.QueryEscape,
		"dur":       func(d time.Duration) string { return d.Round(time.Millisecond).String() },
		"plural": func(n int, one, many string) string {
			if n == 1 {
				return "1 " + one
			}
			return strconv.Itoa(n) + " " + many
		},
	}
	layout, err := template.New("layout.html").Funcs(funcs).ParseFS(files, "templates/layout.html")
	if err != nil {
		return fmt.Errorf("console: parse layout: %w", err)
	}
	s.pages = map[string]*template.Template{}
	for name := range sections {
		t, err := template.Must(layout.Clone()).ParseFS(files, "templates/"+name+".html")
		if err != nil {
			return fmt.Errorf("console: parse %s: %w", name, err)
		}
		s.pages[name] = t
	}
	return nil
}

// render writes page name with data, or an error page if it does not
// render (a bug: logged).
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name, title string, data any, msg string) {
	var b bytes.Buffer
	p := page{Title: title, Nav: sections[name], Stack: s.cfg.Stack, CSRF: s.csrf, Error: msg, Data: data, DLQDepth: -1}
	if n, err := s.cfg.Actions.DLQDepth(r.Context()); err == nil {
		p.DLQDepth = n
	}
	if err := s.pages[name].ExecuteTemplate(&b, "layout.html", p); err != nil {
		s.cfg.Logger.Error("console: render failed", slog.String("page", name), slog.String("error", err.Error()))
		http.Error(w, "500 internal error: the page did not render (see the console's log)", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// fail answers status with a page saying msg.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	s.render(w, r, status, "error", http.StatusText(status), nil, msg)
}

func (s *Server) css(w http.ResponseWriter, _ *http.Request) {
	b, _ := files.ReadFile("templates/console.css")
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	_, _ = w.Write(b)
}

// actionWords say a replay's action (ops.Action...) in words, where the
// CLI prints the token.
var actionWords = map[string]string{
	ops.ActionEnqueued: "Enqueued", ops.ActionReopened: "Moved back to failed and enqueued",
	ops.ActionWouldEnqueue: "Put it back on the webhook queue", ops.ActionWouldReopen: "Move it back to failed, then put it on the webhook queue",
	ops.ActionSkipped: "Not replayed", ops.ActionNotFound: "Not found", ops.ActionError: "Failed",
}

// actionText is an action in words; an unknown one as it is.
func actionText(action string) string {
	if w, ok := actionWords[action]; ok {
		return w
	}
	return action
}

// utc formats t to the second in UTC, as inboxctl's text output does.
func utc(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05") + " UTC"
}

func unixTime(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.Unix(v, 0)
}

// ago says how long before now t was (or, in the future, how long after).
func ago(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := now.Sub(t)
	suffix := " ago"
	if d < 0 {
		d, suffix = -d, " from now"
	}
	switch {
	case d < 5*time.Second:
		return "just now"
	case d < time.Minute:
		return fmt.Sprintf("%d s%s", int(d/time.Second), suffix)
	case d < time.Hour:
		return fmt.Sprintf("%d min%s", int(d/time.Minute), suffix)
	case d < 48*time.Hour:
		if m := int(d % time.Hour / time.Minute); m > 0 {
			return fmt.Sprintf("%d h %d min%s", int(d/time.Hour), m, suffix)
		}
		return fmt.Sprintf("%d h%s", int(d/time.Hour), suffix)
	}
	return fmt.Sprintf("%d days%s", int(d/(24*time.Hour)), suffix)
}

// clip shortens s to n characters.
func clip(n int, s string) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

func itoa(n int) string { return strconv.Itoa(n) }

// statusClass is the CSS class of a status: what it asks of an operator,
// as inboxctl's colours say it.
func statusClass(v any) string {
	switch st := event.Status(fmt.Sprint(v)); st {
	case event.StatusProcessed:
		return "ok"
	case event.StatusFailed, event.StatusProcessing, event.StatusReceived:
		return "warn"
	case event.StatusFailedPermanent, event.StatusDeadLettered, "missing":
		return "bad"
	}
	return "quiet"
}

// credentialWords are the words that make a member's name sensitive when
// a word of the name is one of them or ends with one (oauth, accesstoken),
// singular or plural.
var credentialWords = []string{
	"secret", "password", "passwd", "passphrase", "token", "signature", "hmac",
	"authorization", "auth", "credential", "cookie", "jwt",
	"apikey", "privatekey", "accesskey", "secretkey", "signingkey",
}

// keyQualifiers are the words that make a following "key" a credential
// (api_key, privateKey); a key alone, an idempotency key or a public key
// is not one.
var keyQualifiers = map[string]bool{"api": true, "private": true, "access": true, "secret": true, "signing": true}

// sensitive reports whether a payload member named name is never shown:
// a payment's client_secret, and anything named like a credential should
// one ever appear in a body. The name is split into words at every rune
// that is not a letter or digit and at each change from lower to upper
// case (clientSecret, APIKey), compared in lower case; it is sensitive
// when a word is, or ends with, one of credentialWords (optionally
// plural), or is "key" or "keys" after one of keyQualifiers. Words that
// only begin like one (tokenization_method, author) are shown.
func sensitive(name string) bool {
	words := nameWords(name)
	for i, w := range words {
		for _, c := range credentialWords {
			if strings.HasSuffix(w, c) || strings.HasSuffix(w, c+"s") {
				return true
			}
		}
		if (w == "key" || w == "keys") && i > 0 && keyQualifiers[words[i-1]] {
			return true
		}
	}
	return false
}

// nameWords splits a member's name into lower-case words: at every rune
// that is neither a letter nor a digit, before an upper-case letter that
// follows a lower-case one, and before the last of a run of upper-case
// letters that a lower-case one follows (APIKey: api, key).
func nameWords(name string) []string {
	rs := []rune(name)
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush()
			continue
		}
		if i > 0 && unicode.IsUpper(r) && len(cur) > 0 {
			prev := rs[i-1]
			if unicode.IsLower(prev) || (unicode.IsUpper(prev) && i+1 < len(rs) && unicode.IsLower(rs[i+1])) {
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	return words
}

// member is one line of indented JSON that holds a member with a scalar
// value: its indentation, its quoted name, the value, and a comma.
var member = regexp.MustCompile(`^(\s*)("(?:[^"\\]|\\.)*"): (.*?)(,?)$`)

// pretty indents a JSON document, keeping its members in their order, and
// redacts the scalar values of sensitive fields. What is not JSON is shown
// as it is, redacted by the same rule line by line.
func pretty(raw []byte) string {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		b.Reset()
		b.Write(raw)
	}
	var out []string
	lines := strings.Split(b.String(), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		m := member.FindStringSubmatch(l)
		var name string
		if m == nil || m[3] == "null" || json.Unmarshal([]byte(m[2]), &name) != nil || !sensitive(name) {
			out = append(out, l)
			continue
		}
		if m[3] == "{" || m[3] == "[" {
			// The whole object or array goes: skip to its closing line, the
			// next one indented as its name.
			closing := m[1] + map[string]string{"{": "}", "[": "]"}[m[3]]
			for i+1 < len(lines) && !strings.HasPrefix(lines[i+1], closing) {
				i++
			}
			i++
			if i < len(lines) {
				m[4] = strings.TrimPrefix(lines[i], closing)
			}
		}
		out = append(out, m[1]+m[2]+`: "[redacted]"`+m[4])
	}
	return strings.Join(out, "\n")
}
