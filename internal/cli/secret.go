package cli

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/webhook-inbox/webhook-inbox/internal/devsecret"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/secrets"
)

// secretFlags are how send and verify take signing secrets. A secret's
// value is never a flag: ps, /proc and shell history show command lines.
// It comes from STRIPE_WEBHOOK_SECRET, from a file (or stdin) named by
// --secret-file, or, for the local stack only and only when asked, --dev.
type secretFlags struct {
	file string
	dev  bool
	// plain catches the --secret flag of earlier versions, to refuse it
	// with a reason rather than as an unknown flag.
	plain []string
}

// maxSecretFile bounds what --secret-file reads: a few secrets.
const maxSecretFile = 64 << 10

func (s *secretFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&s.file, "secret-file", "", "read the signing secret(s) from this file, one per line or comma-separated (- for stdin)")
	f.BoolVar(&s.dev, "dev", false, "use the local stack's development secret (make dev's "+devsecret.Webhook+")")
	f.StringArrayVar(&s.plain, "secret", nil, "no longer accepted: use STRIPE_WEBHOOK_SECRET or --secret-file")
	_ = f.MarkHidden("secret")
}

// signingSecrets returns the secrets: --secret-file, else --dev, else
// STRIPE_WEBHOOK_SECRET (comma-separated). There is no silent default: a
// delivery checked against, or signed with, a secret nobody chose says
// nothing true about the endpoint.
func (a *app) signingSecrets(s secretFlags) ([]string, error) {
	switch {
	case len(s.plain) > 0:
		return nil, usagef("--secret is not accepted: a secret on the command line is visible to other users (ps) and kept in shell history; " +
			"set STRIPE_WEBHOOK_SECRET, or pass --secret-file FILE (- for stdin)")
	case s.file != "" && s.dev:
		return nil, usagef("--secret-file and --dev: pass one")
	case s.dev && a.deployed():
		return nil, usagef(
			"--dev is the local stack's development secret; %s needs the endpoint's own: set STRIPE_WEBHOOK_SECRET or pass --secret-file",
			a.target(),
		)
	case s.file != "":
		return a.readSecretFile(s.file)
	case s.dev:
		return []string{devsecret.Webhook}, nil
	}
	if v := secrets.List(a.getenv("STRIPE_WEBHOOK_SECRET")); len(v) > 0 {
		return v, nil
	}
	return nil, usagef("no signing secret: set STRIPE_WEBHOOK_SECRET (comma-separated during a rotation), pass --secret-file FILE (- for stdin), " +
		"or --dev for the local stack's development secret")
}

func (a *app) readSecretFile(name string) ([]string, error) {
	var in io.Reader
	if name == "-" {
		if a.stdin == nil || a.stdinTTY {
			return nil, usagef("--secret-file -: pipe the secret on stdin")
		}
		in = a.stdin
	} else {
		f, err := os.Open(name)
		if err != nil {
			return nil, usagef("--secret-file: %v", err)
		}
		defer f.Close()
		in = f
	}
	b, err := io.ReadAll(io.LimitReader(in, maxSecretFile+1))
	if err != nil {
		return nil, fmt.Errorf("read --secret-file %s: %w", name, err)
	}
	if len(b) > maxSecretFile {
		return nil, usagef("--secret-file %s is larger than %d bytes: that is not a list of signing secrets", name, maxSecretFile)
	}
	list := secrets.List(string(b))
	if len(list) == 0 {
		return nil, usagef("--secret-file %s holds no secret", name)
	}
	return list, nil
}

// headerValue returns the Stripe-Signature value of what was pasted into
// --header: the whole header line is accepted, name included, since that is
// what a captured request shows. Only the name is taken off; the value is
// checked as the receiver checks it.
func headerValue(pasted string) string {
	if name, rest, ok := strings.Cut(pasted, ":"); ok && strings.EqualFold(strings.TrimSpace(name), "stripe-signature") {
		return rest
	}
	return pasted
}
