package cli

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
)

// VerifyJSON is the stable JSON shape of inboxctl verify --json. Problem is
// one of the provider.Problem values ("none" when valid); MatchedSecret
// counts from 1 (0: none matched).
type VerifyJSON struct {
	Valid         bool     `json:"valid"`
	Problem       string   `json:"problem"`
	Message       string   `json:"message"`
	Timestamp     string   `json:"timestamp,omitempty"`
	AgeSeconds    int64    `json:"age_seconds"`
	Signatures    int      `json:"signatures"`
	Secrets       int      `json:"secrets"`
	MatchedSecret int      `json:"matched_secret"`
	Alteration    string   `json:"alteration,omitempty"`
	Notes         []string `json:"notes"`
}

// maxPayload bounds what verify reads; the receiver refuses more than 1 MB.
const maxPayload = 8 << 20

type verifyOpts struct {
	secret            secretFlags
	header, file      string
	tolerance, skew   time.Duration
	ignoreAge, asJSON bool
}

func (a *app) verifyCmd() *cobra.Command {
	var o verifyOpts
	cmd := &cobra.Command{
		Use:   "verify --header 't=...,v1=...' < payload",
		Short: "Check a captured delivery's signature and say exactly why it fails",
		Long: `verify checks a delivery's Stripe-Signature header against its body, as the
receiver does, and when it fails says exactly why: no or a malformed header,
no v1 signature, wrong secret, stale or future timestamp (with its age), or
a body changed on its way (trailing newline added or removed, LF/CRLF, JSON
minified or re-indented, HTML characters escaped, base64-encoded), naming
the change after which it verifies.

The header is parsed exactly as the receiver parses it (one t=, no spaces);
a whole pasted header line, "Stripe-Signature: " included, is accepted.

The body is read from --file or stdin, byte for byte: capture it raw (for
example with ` + "`inboxctl event <id> --payload`" + ` or from your framework before it
parses the JSON). Secrets are never given on the command line: they come
from STRIPE_WEBHOOK_SECRET (comma-separated during a rotation), or from
--secret-file (one per line; - for stdin, with the body in --file), or
--dev for the local stack's development secret. Without one, verify stops.

Exit code 0 when the delivery verifies, 1 when it does not.`,
		Example: `  read -rs STRIPE_WEBHOOK_SECRET && export STRIPE_WEBHOOK_SECRET
  inboxctl verify --header "$SIG" < body.json
  inboxctl verify --secret-file ~/.config/whsec --header "t=1700000000,v1=5257a8..." --file body.json
  inboxctl event evt_123 --payload | inboxctl verify --dev --header "$SIG" --ignore-age`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("header") {
				return usagef("--header is required: the Stripe-Signature header's value, as received")
			}
			return a.verify(o)
		},
	}
	f := cmd.Flags()
	o.secret.register(cmd)
	f.StringVar(&o.header, "header", "", "the Stripe-Signature header, as received")
	f.StringVar(&o.file, "file", "", "read the body from this file instead of stdin")
	f.DurationVar(&o.tolerance, "tolerance", provider.DefaultTolerance, "how old a signature may be (the receiver's SIGNATURE_TOLERANCE)")
	f.DurationVar(&o.skew, "future-skew", provider.DefaultFutureSkew, "how far ahead a timestamp may be (SIGNATURE_FUTURE_SKEW)")
	f.BoolVar(&o.ignoreAge, "ignore-age", false, "check the signature only, not the timestamp's age (for deliveries captured earlier)")
	f.BoolVar(&o.asJSON, "json", false, "print the diagnosis as JSON (VerifyJSON in docs/cli.md)")
	return cmd
}

// signatureOptions are the receiver's checks as verify's flags set them.
func (o verifyOpts) signatureOptions(now func() time.Time) provider.Options {
	opts := provider.Options{Tolerance: o.tolerance, FutureSkew: o.skew, Now: now}
	if o.ignoreAge {
		// A century either way: the timestamp still has to parse.
		opts.Tolerance, opts.FutureSkew = 100*365*24*time.Hour, 100*365*24*time.Hour
	}
	return opts
}

func (a *app) verify(o verifyOpts) error {
	if o.secret.file == "-" && o.file == "" {
		return usagef("--secret-file - reads the secret from stdin: pass the body with --file")
	}
	secrets, err := a.signingSecrets(o.secret)
	if err != nil {
		return err
	}
	var in io.Reader = a.stdin
	if o.file != "" {
		f, err := os.Open(o.file)
		if err != nil {
			return usagef("--file: %v", err)
		}
		defer f.Close()
		in = f
	} else if a.stdinTTY || a.stdin == nil {
		return usagef("pipe the body on stdin (inboxctl verify ... < body.json) or pass --file")
	}
	body, err := io.ReadAll(io.LimitReader(in, maxPayload+1))
	if err != nil {
		return fmt.Errorf("read the body: %w", err)
	}
	if len(body) == 0 {
		return usagef("the body is empty: pipe the captured body, byte for byte, on stdin or pass --file")
	}
	if len(body) > maxPayload {
		return usagef("the body is larger than %d bytes: that is not a Stripe event", maxPayload)
	}
	d := provider.DiagnoseStripe(body, headerValue(o.header), secrets, o.signatureOptions(a.now))
	var age int64 // in seconds, as the receiver counts: d.Age saturates
	if !d.Timestamp.IsZero() {
		age = a.now().Unix() - d.Timestamp.Unix()
	}
	j := VerifyJSON{
		Valid: d.Valid, Problem: string(d.Problem), Message: d.Message, Timestamp: ts(d.Timestamp),
		AgeSeconds: age, Signatures: d.Signatures, Secrets: len(secrets),
		MatchedSecret: d.Secret + 1, Alteration: d.Alteration, Notes: d.Notes,
	}
	if j.Notes == nil {
		j.Notes = []string{}
	}
	if o.asJSON {
		if err := writeJSON(a.stdout, j); err != nil {
			return err
		}
	} else {
		verdict := a.paint(green, "valid")
		if !d.Valid {
			verdict = a.paint(red, "invalid") + " (" + j.Problem + ")"
		}
		fmt.Fprintf(a.stdout, "%s: %s\n", verdict, d.Message)
		for _, n := range d.Notes {
			fmt.Fprintf(a.stdout, "note: %s\n", n)
		}
		if !d.Timestamp.IsZero() {
			fmt.Fprintf(a.stdout, "signed at %s (%s); %d v1 signature(s), %d secret(s) tried, %d-byte body\n",
				when(d.Timestamp), ago(a.now(), d.Timestamp), d.Signatures, len(secrets), len(body))
		}
	}
	if !d.Valid {
		return failedError{"the delivery does not verify"}
	}
	return nil
}
