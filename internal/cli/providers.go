package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/boot"
	"github.com/webhook-inbox/webhook-inbox/shared/platform/secrets"
	"github.com/webhook-inbox/webhook-inbox/shared/providers/provider"
)

// samples are realistic deliveries of the providers other than Stripe,
// shaped like each provider's documentation: samples/<provider>/
// <type>.json, where a Shopify topic's "/" is a directory.
//
//go:embed samples
var samples embed.FS

// checkProvider refuses a --provider that names neither a provider nor a
// sender GENERIC_SENDERS declares.
func (a *app) checkProvider(name string) error {
	if provider.Known(name) {
		return nil
	}
	senders, err := a.senders()
	if err != nil {
		return usageError{err}
	}
	names := slices.Clone(provider.Names)
	for _, s := range senders {
		if s.Name == name {
			return nil
		}
		names = append(names, s.Name)
	}
	return usagef("--provider %q: want %s (or a sender %s declares)", name, strings.Join(names, ", "), provider.SendersVariable)
}

// senders are the senders GENERIC_SENDERS declares, as the receiver reads
// them.
func (a *app) senders() ([]provider.Sender, error) {
	return provider.ParseSenders(a.getenv(provider.SendersVariable))
}

// sender returns the declared sender named name, if one is.
func (a *app) sender(name string) (provider.Sender, bool) {
	senders, _ := a.senders()
	for _, s := range senders {
		if s.Name == name {
			return s, true
		}
	}
	return provider.Sender{}, false
}

// genericSamples is the sample directory of every declared sender: one
// body, whose id and type the declaration's fields receive
// (provider.Sender.Sample).
const genericSamples = "generic"

// sampleTypes lists the types send has a sample of for provider.
func sampleTypes(name string) []string {
	var out []string
	root := path.Join("samples", name)
	_ = fs.WalkDir(samples, root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, strings.TrimSuffix(strings.TrimPrefix(p, root+"/"), ".json"))
		}
		return nil
	})
	slices.Sort(out)
	return out
}

// providerSecrets returns the provider's signing secrets: --secret-file,
// else <PROVIDER>_WEBHOOK_SECRET. --dev names Stripe's development secret
// only: the local stack serves another provider only with a secret chosen
// for it.
func (a *app) providerSecrets(name string, s secretFlags) ([]string, error) {
	variable := boot.WebhookSecretVariable(name)
	switch {
	case len(s.plain) > 0:
		return nil, usagef("--secret is not accepted: set %s, or pass --secret-file FILE (- for stdin)", variable)
	case s.dev:
		return nil, usagef("--dev is the local stack's Stripe secret; for %s set %s (as for make dev) or pass --secret-file", name, variable)
	case s.file != "":
		return a.readSecretFile(s.file)
	}
	if v := secrets.List(a.getenv(variable)); len(v) > 0 {
		return v, nil
	}
	return nil, usagef("no signing secret for %s: set %s (comma-separated during a rotation) or pass --secret-file FILE (- for stdin)", name, variable)
}

// providerURL is the provider's endpoint: --url as given, else the
// Stripe endpoint's (--stage's output, WEBHOOK_URL or the local stack's)
// with the provider's name in place of stripe.
func (a *app) providerURL(ctx context.Context, name, flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	u, err := a.resolve(ctx, "", outWebhookURL, "WEBHOOK_URL", DefaultWebhookURL)
	if err != nil {
		return "", err
	}
	base, ok := strings.CutSuffix(u, "/webhooks/stripe")
	if !ok {
		return "", usagef("the webhook URL %s does not end in /webhooks/stripe: pass --url for %s", u, name)
	}
	return base + "/webhooks/" + name, nil
}

// sendProvider signs and POSTs samples of a provider other than Stripe,
// as that provider would (package provider's Sign).
func (a *app) sendProvider(ctx context.Context, name string, types []string, o sendOpts) error {
	if o.repeat < 1 {
		return usageError{fmt.Errorf("--repeat must be at least 1")}
	}
	list, err := a.providerSecrets(name, o.secret)
	if err != nil {
		return err
	}
	url, err := a.providerURL(ctx, name, o.url)
	if err != nil {
		return err
	}
	sign, deliveries, err := a.providerDeliveries(name, types, o)
	if err != nil {
		return err
	}
	if o.shuffle {
		a.shuffle(len(deliveries), func(i, j int) { deliveries[i], deliveries[j] = deliveries[j], deliveries[i] })
	}
	// A provider that signs its URL (Square) signs the one it is
	// configured with, which the local stack's receiver reads too.
	signURL := strings.TrimSpace(a.getenv(provider.SettingVariable(name, provider.SettingURL)))
	if signURL == "" {
		signURL = url
	}
	client := &http.Client{Timeout: 35 * time.Second}
	failed := 0
	for _, d := range deliveries {
		// A delivery is signed with one secret: the current one, listed first.
		headers, err := sign(
			list[0],
			provider.Delivery{ID: d.id, Type: d.typ, Shop: "inbox-dev.myshopify.com", URL: signURL, Body: d.body, Now: a.now()},
		)
		if err != nil {
			return usageError{err}
		}
		status, body, err := postWith(ctx, client, url, d.body, headers)
		if err != nil {
			return fmt.Errorf(
				"POST %s: %w\n(is the local stack running with %s set? start it with `make dev`, or pass --url)",
				url,
				err,
				boot.WebhookSecretVariable(name),
			)
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

// providerDelivery is one delivery sendProvider posts.
type providerDelivery struct {
	id, typ string
	body    []byte
}

// signer signs a delivery with a secret, as its provider does.
type signer func(secret string, d provider.Delivery) (map[string]string, error)

// providerDeliveries reads a sample of each of types, stamps each with
// its id (--id, numbered for more than one type, or a fresh one), each
// --repeat times, and returns them with how the provider signs.
func (a *app) providerDeliveries(name string, types []string, o sendOpts) (signer, []providerDelivery, error) {
	// A declared sender signs as declared, any type, on one sample body.
	sender, declared := a.sender(name)
	var sign signer = func(secret string, d provider.Delivery) (map[string]string, error) {
		return provider.Sign(name, secret, d)
	}
	dir := name
	if declared {
		sign, dir = sender.Spec().Sign, genericSamples
	}
	var deliveries []providerDelivery
	for i, typ := range types {
		file := typ
		if declared {
			file = sampleTypes(genericSamples)[0]
		}
		body, err := samples.ReadFile(path.Join("samples", dir, file+".json"))
		if err != nil {
			return nil, nil, usagef("no %s sample of type %q (have: %s)", name, typ, strings.Join(sampleTypes(name), ", "))
		}
		id := o.id
		switch {
		case id == "":
			id = newDeliveryID(name)
		case len(types) > 1:
			id = fmt.Sprintf("%s_%d", o.id, i+1)
		}
		// A provider whose id is in the body sends it there.
		if declared {
			body, id, err = sender.Sample(body, id, typ)
		} else {
			body, id, err = provider.Stamp(name, body, id)
		}
		if err != nil {
			return nil, nil, usageError{err}
		}
		for range o.repeat {
			deliveries = append(deliveries, providerDelivery{id: id, typ: typ, body: body})
		}
	}
	return sign, deliveries, nil
}

// newDeliveryID is a fresh id in the provider's own shape: a GUID for
// GitHub and Shopify, msg_... for Standard Webhooks senders.
func newDeliveryID(name string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	if name == provider.Standard {
		return "msg_" + hex.EncodeToString(b[:12])
	}
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// postWith POSTs body with the given headers.
func postWith(ctx context.Context, client *http.Client, url string, body []byte, headers map[string]string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, strings.TrimSpace(string(b)), nil
}
