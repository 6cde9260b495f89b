package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/stripe/stripe-go/v81"

	"github.com/webhook-inbox/webhook-inbox/shared/boot"
	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/hooks"
)

// TypesJSON is the JSON shape of `inboxctl types --json`: what to enter
// when registering the endpoint in Stripe.
type TypesJSON struct {
	Provider string `json:"provider"`
	// APIVersion is the Stripe API version the code is built for (stripe-go's
	// pin): the endpoint's events must be rendered in it, or the receiver
	// counts each as an api_version_mismatch.
	APIVersion string `json:"api_version"`
	// Types is the receiver's allowlist, sorted: the events to select.
	Types []string `json:"types"`
	// WebhookURL is the stack's WebhookUrl output, with --stage or --stack.
	WebhookURL string `json:"webhook_url,omitempty"`
}

func (a *app) typesCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "types",
		Short: "Print the event types and the API version to choose when registering the endpoint in Stripe",
		Long: `types prints what to enter in Stripe's Dashboard (Developers, Webhooks, Add
endpoint): the API version the code is built for, and every event type the
receiver handles (the mirror's and your effects'), each to be selected by
name. A wildcard such as customer.subscription.* selects types the inbox
does not handle too; their deliveries are stored as ignored, and paid for.

With --stage or --stack it also prints the stack's WebhookUrl, the URL to
register. Without, it reads EVENT_TYPES as the functions do (the template
does not set it, so a deployed stack handles the built-in list).`,
		Example: `  inboxctl types
  inboxctl --stage prod types --json`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.types(cmd.Context(), asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON (TypesJSON in docs/cli.md)")
	return cmd
}

func (a *app) types(ctx context.Context, asJSON bool) error {
	getenv := boot.Env(a.getenv)
	res := TypesJSON{Provider: "stripe", APIVersion: stripe.APIVersion}
	if a.deployed() {
		// The deployed functions read no EVENT_TYPES (the template sets
		// none): a value in this shell says nothing about them.
		getenv = func(string) string { return "" }
		url, err := a.resolve(ctx, "", outWebhookURL, "", "")
		if err != nil {
			return err
		}
		res.WebhookURL = url
	}
	res.Types = boot.HandledTypeList(boot.EventTypesFrom(getenv), hooks.Registry())
	if asJSON {
		return writeJSON(a.stdout, res)
	}
	var b strings.Builder
	fmt.Fprintln(&b, "Register the endpoint in Stripe's Dashboard (Developers, Webhooks, Add endpoint):")
	fmt.Fprintln(&b)
	if res.WebhookURL != "" {
		fmt.Fprintf(&b, "  endpoint URL  %s\n", res.WebhookURL)
	}
	fmt.Fprintf(&b, "  API version   %s\n", res.APIVersion)
	fmt.Fprintf(&b, "  events        these %d, each selected by name (a wildcard selects types stored as ignored):\n\n", len(res.Types))
	for _, t := range res.Types {
		fmt.Fprintf(&b, "    %s\n", t)
	}
	_, err := fmt.Fprint(a.stdout, b.String())
	return err
}
