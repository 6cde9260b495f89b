package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/webhook-inbox/webhook-inbox/internal/stripefixture"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
)

// DefaultWebhookURL is the local stack's endpoint.
const DefaultWebhookURL = "http://127.0.0.1:3000/webhooks/stripe"

type sendOpts struct {
	url                       string
	secret                    secretFlags
	id, objectID, customer    string
	status, apiVersion        string
	created                   int64
	livemode, shuffle, asJSON bool
	strict                    bool
	repeat                    int
	provider                  string
}

// SendJSON is the stable JSON shape of one delivery made by send --json
// (one per line).
type SendJSON struct {
	ID     string `json:"id"`
	Type   string `json:"type"`
	Status int    `json:"status"`
	Body   string `json:"body"`
}

func (a *app) sendCmd() *cobra.Command {
	var o sendOpts
	cmd := &cobra.Command{
		Use:   "send <event-type>",
		Short: "Sign and POST a realistic Stripe event built from Stripe's sample objects",
		Long: `send builds an event of the given type from Stripe's own sample objects,
signs it as Stripe does (Stripe-Signature, v1 scheme) and POSTs it.

A type the stack does not handle (inboxctl types) is sent with a warning
on stderr, naming the handled type perhaps meant: the receiver stores it
as ignored. --strict refuses it instead (exit 2, nothing sent).

--repeat N sends the same delivery N times (duplicates); --shuffle, with
several event types, sends them in random order (reordering).

--provider github|shopify|standard sends that provider's sample delivery
of the type instead (issues.opened, orders/create, user.created, ...),
signed as the provider signs, with GITHUB_WEBHOOK_SECRET,
SHOPIFY_WEBHOOK_SECRET or STANDARD_WEBHOOK_SECRET (or --secret-file), to
/webhooks/<provider>. A sender GENERIC_SENDERS declares is one too:
--provider <name> signs a generic sample as declared, with
<NAME>_WEBHOOK_SECRET (the type given goes in its type field).

The signing secret is never given on the command line: it comes from
STRIPE_WEBHOOK_SECRET (the first one, when several are listed), or from
--secret-file (- for stdin), or --dev for the local stack's development
secret. Without one, send stops.`,
		Example: `  inboxctl send --dev customer.subscription.created
  inboxctl send --dev invoice.paid --customer cus_123 --repeat 3
  inboxctl send customer.subscription.created customer.subscription.updated --object-id sub_1 --shuffle
  inboxctl send --provider github issues.opened --repeat 2`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, types []string) error {
			if err := a.checkProvider(o.provider); err != nil {
				return err
			}
			if o.provider != event.ProviderStripe {
				return a.sendProvider(cmd.Context(), o.provider, types, o)
			}
			return a.send(cmd.Context(), types, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.url, "url", "", "webhook URL (default: WEBHOOK_URL, else --stage's WebhookUrl output, else "+DefaultWebhookURL+")")
	o.secret.register(cmd)
	f.StringVar(&o.id, "id", "", "event id (default: random; with several types, a suffix per type)")
	f.StringVar(
		&o.objectID,
		"object-id",
		"",
		"data.object.id (default: with --customer, that customer's own subscription sub_<suffix>; else a fresh id per send)",
	)
	f.StringVar(&o.customer, "customer", "", "customer id of the object")
	f.StringVar(&o.status, "status", "", "data.object.status (default: the usual one for the event type)")
	f.StringVar(&o.apiVersion, "api-version", "", "api_version of the event (default: "+stripefixture.APIVersion+")")
	f.Int64Var(&o.created, "created", 0, "event created time, Unix seconds (default: now; with several types, one second apart)")
	f.BoolVar(&o.livemode, "livemode", false, "send a live-mode event")
	f.IntVar(&o.repeat, "repeat", 1, "deliver each event N times")
	f.BoolVar(&o.shuffle, "shuffle", false, "deliver in random order")
	f.BoolVar(&o.asJSON, "json", false, "print each delivery as a JSON line")
	f.BoolVar(&o.strict, "strict", false, "refuse a type the stack does not handle, instead of warning (stripe)")
	f.StringVar(
		&o.provider,
		"provider",
		event.ProviderStripe,
		"the provider to send as: stripe, github, shopify or standard (a sample from samples/, signed with GITHUB_WEBHOOK_SECRET, ... or --secret-file)",
	)
	return cmd
}

func (a *app) send(ctx context.Context, types []string, o sendOpts) error {
	if o.repeat < 1 {
		return usageError{fmt.Errorf("--repeat must be at least 1")}
	}
	secrets, err := a.signingSecrets(o.secret)
	if err != nil {
		return err
	}
	// Flag, then the stage's output, then the environment, as every name.
	url, err := a.resolve(ctx, o.url, outWebhookURL, "WEBHOOK_URL", DefaultWebhookURL)
	if err != nil {
		return err
	}
	// A delivery is signed with one secret: the current one, listed first.
	secret := secrets[0]
	created := o.created
	if created == 0 {
		created = a.now().Unix() - int64(len(types))
	}
	type delivery struct {
		id, typ string
		body    []byte
	}
	var deliveries []delivery
	for i, typ := range types {
		id := o.id
		if id != "" && len(types) > 1 {
			id = fmt.Sprintf("%s_%d", o.id, i+1)
		}
		objectID, err := sendObjectID(typ, o)
		if err != nil {
			return usageError{err}
		}
		body, err := stripefixture.Build(typ, stripefixture.Options{
			ID: id, ObjectID: objectID, Customer: o.customer, Created: created + int64(i),
			Livemode: o.livemode, Status: o.status, APIVersion: o.apiVersion,
		})
		if err != nil {
			return usageError{err}
		}
		var env struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(body, &env)
		for range o.repeat {
			deliveries = append(deliveries, delivery{id: env.ID, typ: typ, body: body})
		}
	}
	handled := a.handledTypes()
	for _, typ := range types {
		if slices.Contains(handled, typ) {
			continue
		}
		if o.strict {
			return usagef("--strict: %s", unhandledTypeMessage(typ, handled))
		}
		fmt.Fprintf(a.stderr, "inboxctl: warning: %s\n", unhandledTypeMessage(typ, handled))
	}
	if o.shuffle {
		a.shuffle(len(deliveries), func(i, j int) { deliveries[i], deliveries[j] = deliveries[j], deliveries[i] })
	}
	client := &http.Client{Timeout: 35 * time.Second}
	failed := 0
	for _, d := range deliveries {
		status, body, err := Deliver(ctx, client, url, d.body, secret, a.now())
		if err != nil {
			return fmt.Errorf("POST %s: %w\n(is the local stack running? start it with `make dev`, or pass --url)", url, err)
		}
		if status/100 != 2 {
			failed++
		}
		a.printSent(o.asJSON, SendJSON{ID: d.id, Type: d.typ, Status: status, Body: body})
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d deliveries were not accepted", failed, len(deliveries))
	}
	return nil
}

// sendObjectID is the id of the object a sent event carries: --object-id;
// else, with --customer, the customer's own subscription (sub_ and the
// customer id's suffix, so that a customer's subscription events shape
// one subscription, and two customers never share one); else a fresh id,
// so that two sends never make one object of two stories. A customer
// event's object is the customer itself (Build sets it).
func sendObjectID(typ string, o sendOpts) (string, error) {
	if o.objectID != "" {
		return o.objectID, nil
	}
	prefix, err := stripefixture.ObjectPrefix(typ)
	if err != nil {
		return "", err
	}
	switch {
	case prefix == "cus_":
		return "", nil
	case prefix == "sub_" && o.customer != "":
		return prefix + strings.TrimPrefix(o.customer, "cus_"), nil
	}
	return stripefixture.NewID(prefix), nil
}

// printSent prints one delivery's answer: a JSON line (SendJSON), or a
// line for people.
func (a *app) printSent(asJSON bool, r SendJSON) {
	if asJSON {
		line, _ := json.Marshal(r)
		fmt.Fprintln(a.stdout, string(line))
		return
	}
	fmt.Fprintf(a.stdout, "%s  %-40s  %d %s\n", r.ID, r.Type, r.Status, r.Body)
}

// Deliver signs body as Stripe signs a delivery (Stripe-Signature, v1,
// with secret at now) and POSTs it to url: send's delivery, which scripts
// of the local stack (devstack -demo) make the same way. It returns the
// answer's status and the start of its body.
func Deliver(ctx context.Context, client *http.Client, url string, body []byte, secret string, now time.Time) (int, string, error) {
	return post(ctx, client, url, body, provider.SignStripe(body, secret, now))
}

func post(ctx context.Context, client *http.Client, url string, body []byte, sig string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("User-Agent", "Stripe/1.0 (+https://stripe.com/docs/webhooks)")
	req.Header.Set("Stripe-Signature", sig)
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, strings.TrimSpace(string(b)), nil
}
