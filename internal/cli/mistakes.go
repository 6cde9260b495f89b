package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/spf13/cobra"
)

// refuseUnknownSubcommands makes every command that only groups others
// (dlq) refuse an unknown subcommand as a usage error, with cobra's
// suggestions: cobra itself prints the group's help and exits 0, so
// `inboxctl dlq lst` would look like an answer. The group alone still
// prints its help.
func refuseUnknownSubcommands(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		refuseUnknownSubcommands(c)
	}
	if !cmd.HasParent() || !cmd.HasAvailableSubCommands() || cmd.Runnable() {
		return
	}
	cmd.Args = cobra.ArbitraryArgs
	// Cobra's default, which it sets only on the command it runs.
	cmd.SuggestionsMinimumDistance = 2
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return c.Help()
		}
		return usagef("unknown command %q for %q%s", args[0], c.CommandPath(), didYouMean(c.SuggestionsFor(args[0])))
	}
}

// didYouMean is cobra's suggestion text for names.
func didYouMean(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return "\n\nDid you mean this?\n\t" + strings.Join(names, "\n\t")
}

// suggest returns the names among candidates close to word, by cobra's
// own measure (a prefix, or a Levenshtein distance of 2 at most), the one
// the command line uses for a mistyped command: a throwaway command whose
// subcommands are the candidates asks it.
func suggest(word string, candidates []string) []string {
	probe := &cobra.Command{Use: "probe", SuggestionsMinimumDistance: 2}
	for _, c := range candidates {
		probe.AddCommand(&cobra.Command{Use: c, Run: func(*cobra.Command, []string) {}})
	}
	return probe.SuggestionsFor(word)
}

// unhandledTypeMessage says that send's type typ is not one of handled,
// and which handled one was perhaps meant.
func unhandledTypeMessage(typ string, handled []string) string {
	msg := fmt.Sprintf("%s is not a type this stack handles: the receiver stores it as ignored and nothing runs", typ)
	if s := suggest(typ, handled); len(s) > 0 {
		msg += " (did you mean " + strings.Join(s, " or ") + "?)"
	} else {
		msg += " (inboxctl types lists the handled ones)"
	}
	return msg
}

// ExitNeverSeen is the exit code of a command about an id the stack has
// never seen (entitlement of a customer no event mentions): not "this
// customer has no subscription", which a typo would otherwise read as.
const ExitNeverSeen = 3

// neverSeenError: the id is in no table of the stack.
type neverSeenError struct{ msg string }

func (e neverSeenError) Error() string { return e.msg }

// idKinds are the Stripe id prefixes an operator pastes, with the command
// that takes each.
var idKinds = []struct{ prefix, kind, command string }{
	{"sub_", "a subscription id", "inboxctl object %s (its customer's entitlement: inboxctl entitlement <cus_...>)"},
	{"in_", "an invoice id", "inboxctl object %s"},
	{"evt_", "an event id", "inboxctl event %s"},
	{"cs_", "a checkout session id", "inboxctl object %s"},
	{"price_", "a price id", "inboxctl object %s"},
	{"prod_", "a product id", "inboxctl object %s"},
	{"pi_", "a payment intent id", "inboxctl events (the mirror keeps no payment intents)"},
	{"ch_", "a charge id", "inboxctl events (the mirror keeps no charges)"},
}

// checkCustomerID refuses, as a usage error, what is not a customer id
// (cus_...): an email, or an id of another kind, saying which command
// takes it.
func checkCustomerID(id string) error {
	if strings.HasPrefix(id, "cus_") {
		return nil
	}
	if strings.Contains(id, "@") {
		return usagef(
			"%s is an email, not a customer id (cus_...): the mirror keeps no customer's email to look it up by; find the customer id in Stripe's dashboard (Customers, search by email)",
			id,
		)
	}
	for _, k := range idKinds {
		if strings.HasPrefix(id, k.prefix) {
			return usagef("%s is %s, not a customer id (cus_...): try %s", id, k.kind, fmt.Sprintf(k.command, id))
		}
	}
	return usagef("%s is not a customer id: Stripe's start with cus_", id)
}

// neverSeen is the neverSeenError of customer of account: no snapshot
// in the mirror, no entitlement and no event that concerns it.
func neverSeen(customer, account string) error {
	who := customer
	if account != "" {
		who += " of account " + account
	}
	return neverSeenError{
		fmt.Sprintf(
			"%s: never seen: no event about it and nothing in the mirror (check the id, --account, the stage and the mode: a test-mode id is not a live one)",
			who,
		),
	}
}

// credentialsOK resolves cfg's credentials once, before any call: without
// any, every command would end with the SDK's whole provider chain
// ("failed to refresh cached credentials, no EC2 IMDS role found, ...")
// and nothing saying what to do.
func credentialsOK(ctx context.Context, cfg aws.Config, profile string) error {
	if cfg.Credentials == nil {
		return errors.New("no AWS credentials: run `aws configure` (or `aws sso login`), or pass --profile")
	}
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		fix := "run `aws configure` (or `aws sso login`), or pass --profile with a profile that has them"
		if profile != "" {
			fix = "run `aws sso login --profile " + profile + "` or `aws configure --profile " + profile + "`"
		}
		return fmt.Errorf("no AWS credentials: %w\n(%s)", err, fix)
	}
	return nil
}
