package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/webhook-inbox/webhook-inbox/shared/platform/version"
)

func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print inboxctl's version: the release in CHANGELOG.md, as the functions log it",
		Long: `version prints the release this inboxctl was built from, as CHANGELOG.md names
it. Each function writes the same version on its "cold start" log line, so
an inboxctl and a deployed stack can be compared.`,
		Args: args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintln(a.stdout, "inboxctl", version.String())
			return err
		},
	}
}
