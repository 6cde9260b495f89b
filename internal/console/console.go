package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base32"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/webhook-inbox/webhook-inbox/internal/ops"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/storage/store"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
)

// Events is what the console reads of the events table; *store.Events
// implements it.
type Events interface {
	List(ctx context.Context, q store.Query) (store.Page, error)
	Get(ctx context.Context, provider, id string) (event.Record, error)
	ByObject(ctx context.Context, objectID string) ([]event.Record, error)
	ByCustomer(ctx context.Context, account, customer string, limit int) (store.CustomerEvents, error)
}

// Mirror is what the console reads of the mirror; *mirror.Reader
// implements it.
type Mirror interface {
	Object(ctx context.Context, id string) (mirror.Snapshot, error)
	Entitlement(ctx context.Context, customer string) (mirror.Entitlement, error)
}

// Reconciler reads the reconciler's state: each group's checkpoint, in the
// reconciler's order, its last runs and the audit's last runs (with the
// objects they repaired), newest first.
type Reconciler interface {
	Checkpoints(ctx context.Context) ([]store.Checkpoint, error)
	Runs(ctx context.Context) ([]store.Run, error)
	Audits(ctx context.Context) ([]store.AuditRun, error)
}

// Actions are what an operator does from the console: the operations of
// inboxctl's replay and dlq commands, which *ops.Stack implements
// (internal/ops).
type Actions interface {
	// Replay replays one event as `inboxctl replay` does (force: move a
	// failed_permanent event back to failed first); with dryRun it only
	// says what it would do.
	Replay(ctx context.Context, provider, id string, force, dryRun bool) (ReplayResult, error)
	// DeadLetters peeks at up to max messages of the dead-letter queue
	// without consuming them, as `inboxctl dlq list` does.
	DeadLetters(ctx context.Context, max int) (DLQ, error)
	// Redrive moves the dead-lettered message messageID back to the
	// webhook queue, or every message when messageID is empty, as
	// `inboxctl dlq redrive` does.
	Redrive(ctx context.Context, messageID string) (RedriveResult, error)
	// Health counts provider's events received between since and until by
	// status and hour, with the dead-letter queue's depth, as `inboxctl
	// status` does; it never scans the table.
	Health(ctx context.Context, provider string, since, until time.Time) (Health, error)
	// DLQDepth is the dead-letter queue's approximate depth: one call,
	// made for every page's navigation.
	DLQDepth(ctx context.Context) (int, error)
}

// The results of Actions are the operations' own.
type (
	// ReplayResult is what a replay did with one event; Done: it was
	// enqueued, or would be by a dry run.
	ReplayResult = ops.ReplayResult
	// DLQ is a peek at the dead-letter queue.
	DLQ = ops.DLQ
	// DLQMessage is one dead-lettered message beside its event's status.
	DLQMessage = ops.DLQMessage
	// RedriveResult is what a redrive did.
	RedriveResult = ops.RedriveResult
)

// Config configures a Server.
type Config struct {
	Events     Events
	Mirror     Mirror
	Reconciler Reconciler
	Actions    Actions
	// Token is the run's access token; Listen's URL carries it, and the
	// path every page lives under (RunPath) is derived from it.
	Token string
	// Stack names the stack the console shows, in its header ("local
	// stack webhook-inbox-local", "stage prod").
	Stack string
	// Providers are offered by the events filter; event.Providers when
	// empty. Types are suggested for the type filter.
	Providers []string
	Types     []string
	// ReconcilerOff, when set, says why the reconciler does not run here
	// ("no Stripe API key is configured"); the pages say so while no run is
	// recorded.
	ReconcilerOff string
	// Explain adds what to do next to an error (inboxctl's hints); nil
	// shows errors as they are.
	Explain func(error) error
	// Now is the clock of relative times; time.Now when nil.
	Now    func() time.Time
	Logger *slog.Logger
}

// Server serves the console. It is an http.Handler.
type Server struct {
	cfg  Config
	csrf string
	// root is RunPath(cfg.Token): every page's path starts with it.
	root    string
	pages   map[string]*template.Template
	handler http.Handler
}

//go:embed templates/*.html templates/console.css
var files embed.FS

// NewToken returns a random access token for one run: 26 characters of
// base32, 130 bits.
func NewToken() string { return rand.Text() }

// New returns a Server for cfg.
func New(cfg Config) (*Server, error) {
	var missing []string
	for name, v := range map[string]any{"Events": cfg.Events, "Mirror": cfg.Mirror, "Reconciler": cfg.Reconciler, "Actions": cfg.Actions} {
		if v == nil {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("console: config without %s", strings.Join(missing, ", "))
	}
	if len(cfg.Token) < 16 {
		return nil, errors.New("console: a token of at least 16 characters is required (NewToken)")
	}
	if len(cfg.Providers) == 0 {
		cfg.Providers = event.Providers
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Explain == nil {
		cfg.Explain = func(err error) error { return err }
	}
	s := &Server{cfg: cfg, csrf: rand.Text(), root: RunPath(cfg.Token)}
	if err := s.parse(); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.health)
	mux.HandleFunc("GET /console.css", s.css)
	mux.HandleFunc("GET /events", s.events)
	mux.HandleFunc("GET /events/{provider}/{id}", s.event)
	mux.HandleFunc("GET /events/{provider}/{id}/replay", s.replayConfirm)
	mux.HandleFunc("POST /events/{provider}/{id}/replay", s.replay)
	mux.HandleFunc("GET /objects/{id}", s.object)
	mux.HandleFunc("GET /find", s.find)
	mux.HandleFunc("GET /dlq", s.dlq)
	mux.HandleFunc("GET /dlq/redrive", s.redriveConfirm)
	mux.HandleFunc("POST /dlq/redrive", s.redrive)
	mux.HandleFunc("GET /reconciler", s.reconciler)
	mux.HandleFunc("GET /audit", s.audit)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, http.StatusNotFound, "There is no page at "+r.URL.Path+".")
	})
	// Go's CSRF protection refuses a cross-site POST by its Sec-Fetch-Site
	// or Origin header; the form token (checkForm) covers browsers that
	// send neither.
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.refuse(r, "cross_origin")
		s.fail(w, r, http.StatusForbidden, "This request came from another site: actions are taken from the console's own pages only.")
	}))
	s.handler = s.guard(cop.Handler(mux))
	return s, nil
}

// ServeHTTP serves the console.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// RunPath is the path every page of the console run with token lives
// under: "/" and 26 characters of base32 of a SHA-256 of the token. A
// browser keeps cookies by host and path, never by port, so the access
// cookie, scoped to this path, goes to no other server on the same
// loopback host: none is visited at a path nobody but this run's URL
// names. It is derived from the token, so Listen's URL and the Server
// agree without a second value; it shows in the address bar and history,
// and reveals nothing of the token.
func RunPath(token string) string {
	sum := sha256.Sum256([]byte("inboxctl console path\x00" + token))
	return "/" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:16]))
}

// cookieName is the access cookie of the console listening at host (the
// port keeps apart the names of two consoles' cookies in one browser).
func cookieName(host string) string {
	_, port, _ := net.SplitHostPort(host)
	return "inboxctl_console_" + port
}

// guard answers before any page: security headers on every answer, 403
// for a Host the console does not listen as, 401 outside the run's path
// or without the token. A request carrying the token in its URL gets the
// cookie (host-only, on the run's path) and is sent to the same page
// without it, so the token leaves the address bar and history. The pages
// are served with the run's path stripped.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		if !loopbackHost(r.Host) {
			s.refuse(r, "host")
			http.Error(w, "403 forbidden: the console answers only at its loopback address (127.0.0.1, ::1 or localhost)", http.StatusForbidden)
			return
		}
		rest, ok := strings.CutPrefix(r.URL.Path, s.root)
		if !ok || (rest != "" && rest[0] != '/') {
			s.refuse(r, "path")
			s.unauthorized(w)
			return
		}
		if t := r.URL.Query().Get("token"); t != "" && r.Method == http.MethodGet {
			if !s.tokenOK(t) {
				s.refuse(r, "bad_token")
				s.unauthorized(w)
				return
			}
			http.SetCookie(w, &http.Cookie{Name: cookieName(r.Host), Value: s.cfg.Token, Path: s.root, HttpOnly: true, SameSite: http.SameSiteStrictMode})
			q := r.URL.Query()
			q.Del("token")
			s.redirect(w, r, rest, q)
			return
		}
		c, err := r.Cookie(cookieName(r.Host))
		if err != nil || !s.tokenOK(c.Value) {
			s.refuse(r, "no_token")
			s.unauthorized(w)
			return
		}
		clean := path.Clean("/" + rest)
		if strings.HasSuffix(rest, "/") && clean != "/" {
			clean += "/"
		}
		if clean != rest {
			// net/http's ServeMux would redirect to the clean path without
			// the run's; this keeps it.
			s.redirect(w, r, rest, r.URL.Query())
			return
		}
		r2 := r.Clone(r.Context())
		r2.URL.Path, r2.URL.RawPath = rest, strings.TrimPrefix(r.URL.RawPath, s.root)
		next.ServeHTTP(w, r2)
	})
}

// redirect answers 303 to the console's page p with query q. The
// Location is always a path of this run's (RunPath, then p cleaned and
// escaped): never "//host" or "/\host", which a browser reads as another
// host, whatever p holds.
func (s *Server) redirect(w http.ResponseWriter, r *http.Request, p string, q url.Values) {
	u := url.URL{Path: s.root + path.Clean("/"+p), RawQuery: q.Encode()}
	http.Redirect(w, r, u.String(), http.StatusSeeOther)
}

func (s *Server) tokenOK(t string) bool {
	return subtle.ConstantTimeCompare([]byte(t), []byte(s.cfg.Token)) == 1
}

func (s *Server) unauthorized(w http.ResponseWriter) {
	http.Error(w, "401 unauthorized: open the console with the URL `inboxctl console` printed (it carries this run's token)", http.StatusUnauthorized)
}

// refuse logs a refused request: never its query (a wrong token is
// someone's token).
func (s *Server) refuse(r *http.Request, why string) {
	s.cfg.Logger.Warn("console: request refused", slog.String("reason", why), slog.String("method", r.Method), slog.String("path", r.URL.Path))
}

// loopbackHost reports whether a request's Host names a loopback address.
func loopbackHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkForm reports whether a POST carries the run's form token.
func (s *Server) checkForm(w http.ResponseWriter, r *http.Request) bool {
	if err := r.ParseForm(); err != nil {
		s.fail(w, r, http.StatusBadRequest, "The form could not be read: "+err.Error())
		return false
	}
	if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(s.csrf)) != 1 {
		s.refuse(r, "form_token")
		s.fail(
			w,
			r,
			http.StatusForbidden,
			"This form is not one the console made in this run (its form token is missing or old): go back, reload the page and try again.",
		)
		return false
	}
	return true
}

// Listen listens on addr, which must be a loopback address (127.0.0.1:8080,
// [::1]:0, localhost:8080; port 0 picks a free port), and returns the
// listener and the console's URL: the run's path (RunPath) carrying token.
func Listen(addr, token string) (net.Listener, string, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, "", fmt.Errorf("console: address %q: %w", addr, err)
	}
	if host == "localhost" {
		// One address, not whatever localhost resolves to first.
		addr = net.JoinHostPort("127.0.0.1", addr[strings.LastIndex(addr, ":")+1:])
	} else if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, "", ErrNotLoopback
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("console: listen on %s: %w", addr, err)
	}
	u := url.URL{Scheme: "http", Host: ln.Addr().String(), Path: RunPath(token) + "/", RawQuery: url.Values{"token": {token}}.Encode()}
	return ln, u.String(), nil
}

// ErrNotLoopback: the console listens on loopback addresses only; it
// reaches AWS with the operator's credentials and must not be reachable
// from another machine.
var ErrNotLoopback = errors.New("console: the console listens on a loopback address only (127.0.0.1, ::1 or localhost), never on the network")
