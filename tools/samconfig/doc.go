// Package samconfig reads samconfig.toml as the SAM CLI reads it: its
// environments (one per stage), the stack each deploys, and the template
// parameters its deploy passes, parsed by SAM's own rules for
// parameter_overrides. Its test holds every environment to template.yaml
// and to the deploy section of docs/operations.md, so that
// `sam deploy --config-env <env>` deploys what the docs say, and tools/docs
// checks each `sam` command the docs show against the environments.
//
// A parameter override is split the way SAM splits it, not the way it
// looks: SAM reads "ReconcileRate=rate(10 minutes)" as rate(10 (a value
// ends at a space unless quoted), which CloudFormation then refuses. Parse
// reports such an entry instead of guessing.
package samconfig
