package cli

import (
	"cmp"
	"context"
	"fmt"
	neturl "net/url"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/webhook-inbox/webhook-inbox/internal/awsconfig"
)

// localRegion is the local stack's region (make dev, the emulators), used
// when nothing names one: an emulator keeps each region's resources apart.
const localRegion = "us-east-1"

// aws loads the AWS configuration once.
func (a *app) aws(ctx context.Context) (aws.Config, error) {
	if a.cfg != nil {
		return *a.cfg, nil
	}
	if a.stage != "" && !stagePattern.MatchString(a.stage) {
		return aws.Config{}, usagef("--stage %q: a stage is 1-20 lower-case letters, digits or dashes, as in template.yaml", a.stage)
	}
	if a.stage != "" && a.stack != "" {
		return aws.Config{}, usagef("--stage %s and --stack %s: pass one (--stage %s is --stack %s)", a.stage, a.stack, a.stage, StackName(a.stage))
	}
	if a.stack != "" && !stackPattern.MatchString(a.stack) {
		return aws.Config{}, usagef("--stack %q: a stack name is a letter, then up to 127 letters, digits or dashes", a.stack)
	}
	general, services, err := a.endpointsOf()
	if err != nil {
		return aws.Config{}, err
	}
	var opts []func(*config.LoadOptions) error
	// The region as the SDK and the AWS CLI resolve it: the flag, then
	// AWS_REGION and AWS_DEFAULT_REGION (read through getenv, like every
	// other setting of a run), then the profile's region, which the SDK
	// reads from the shared config. A fixed default would send a profile
	// that names eu-west-1 to us-east-1, where its stack is not.
	// The local stack (no --stage, --stack or --profile) is in
	// localRegion whatever the shared config's default profile says.
	region := cmp.Or(a.region, strings.TrimSpace(a.getenv("AWS_REGION")), strings.TrimSpace(a.getenv("AWS_DEFAULT_REGION")))
	if region == "" && !a.deployed() && a.profile == "" {
		region = localRegion
	}
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	if a.profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(a.profile))
	}
	if !a.deployed() && a.profile == "" && a.getenv("AWS_ACCESS_KEY_ID") == "" && (general != "" || len(services) > 0) {
		// Emulators accept any credentials.
		opts = append(opts, config.WithCredentialsProvider(aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test", Source: "inboxctl-local"}, nil
		})))
	}
	cfg, err := awsconfig.Load(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return aws.Config{}, usagef("no AWS region: pass --region, set AWS_REGION, or set the profile's region (aws configure set region <region>%s)",
			profileFlag(a.profile))
	}
	if a.deployed() {
		stageEndpoints(&cfg)
	}
	awsconfig.SetEndpoints(&cfg, general, services)
	a.cfg = &cfg
	return cfg, nil
}

// endpointServices are the services inboxctl calls, as --endpoint
// SERVICE=URL names them (the suffix of AWS_ENDPOINT_URL_<SERVICE>, in
// lower case).
var endpointServices = []string{"dynamodb", "sqs", "ssm", "cloudformation"}

// endpointsOf returns the endpoint of every service (cfg.BaseEndpoint) and
// each service's own, by the suffix of its variable (DYNAMODB). A
// service's endpoint is, first found: --endpoint SERVICE=URL,
// AWS_ENDPOINT_URL_<SERVICE>, --endpoint URL, AWS_ENDPOINT_URL, and the
// local stack's emulator unless --stage or --profile is given. The more
// specific setting wins, as in the SDK and the functions: the make
// test-localstack shell (AWS_ENDPOINT_URL at LocalStack,
// AWS_ENDPOINT_URL_DYNAMODB at moto) works with --endpoint at LocalStack.
// The variables are read through getenv, which keeps every setting of a
// run in one place.
//
// A deployed stage is reached at AWS's own endpoints, or at those typed
// for this run with --endpoint, never at one from the environment: see
// stageEndpoints.
func (a *app) endpointsOf() (general string, services map[string]string, err error) {
	flags := map[string]string{}
	for _, v := range a.endpoints {
		service, url := "", v
		if k, u, ok := strings.Cut(v, "="); ok && !strings.Contains(k, "/") {
			service, url = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(u)
			if !slices.Contains(endpointServices, service) {
				return "", nil, usagef(
					"--endpoint %s: no service %q: name one of %s, or give a URL for every service",
					v,
					k,
					strings.Join(endpointServices, ", "),
				)
			}
		}
		if u, perr := neturl.Parse(url); perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "", nil, usagef("--endpoint %s: %q is not an http(s) URL", v, url)
		}
		if _, dup := flags[service]; dup {
			return "", nil, usagef("--endpoint %s: given twice for %s", v, cmp.Or(service, "every service"))
		}
		flags[service] = url
	}
	env := func(k string) string {
		if a.deployed() {
			return ""
		}
		return strings.TrimSpace(a.getenv(k))
	}
	general = cmp.Or(flags[""], env("AWS_ENDPOINT_URL"))
	if general == "" && !a.deployed() && a.profile == "" {
		general = LocalEndpoint
	}
	services = map[string]string{}
	for _, s := range endpointServices {
		suffix := strings.ToUpper(s)
		if v := cmp.Or(flags[s], env("AWS_ENDPOINT_URL_"+suffix), general); v != "" {
			services[suffix] = v
		}
	}
	return general, services, nil
}

// stageEndpoints makes cfg reach AWS's own endpoints, whatever the
// environment and the shared config say (AWS_ENDPOINT_URL,
// AWS_ENDPOINT_URL_<SERVICE>, a profile's endpoint_url); only --endpoint,
// set afterwards, applies. An endpoint left in the shell by local work
// would otherwise get the stage's requests, signed with its credentials (a
// signed SSM read can be replayed to AWS for minutes), and answer them with
// a stack and secrets of its own.
func stageEndpoints(cfg *aws.Config) {
	cfg.BaseEndpoint = nil
	// The service clients (and package secrets') consult this before any
	// configured endpoint, as they do for
	// AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true.
	cfg.ConfigSources = append([]any{ignoreConfiguredEndpoints{}}, cfg.ConfigSources...)
}

type ignoreConfiguredEndpoints struct{}

func (ignoreConfiguredEndpoints) GetIgnoreConfiguredEndpoints(context.Context) (bool, bool, error) {
	return true, true, nil
}
