package provision

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cftypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/smithy-go"

	"github.com/webhook-inbox/webhook-inbox/tools/template"
)

// RoutingTypes are the resource types of the template's routing: Stripe's
// EventBridge destination (its event bus and rule) and the queue policy
// that lets only that rule send. Provision has them created by the
// emulator's own CloudFormation from the template's definitions, so what
// runs locally is what the template says, translated by CloudFormation
// rather than by a second copy here; the queues they name are the ones
// Provision created, by their ARNs and URLs.
var RoutingTypes = []string{"AWS::Events::EventBus", "AWS::Events::Rule", "AWS::SQS::QueuePolicy"}

// routingWait bounds the wait for the routing stack: a handful of
// resources, created in seconds on LocalStack, so the waiters poll every
// half second or so (the SDK's defaults start at 30 s, for AWS).
const routingWait = 2 * time.Minute

func pollCreate(o *cloudformation.StackCreateCompleteWaiterOptions) {
	o.MinDelay, o.MaxDelay = 300*time.Millisecond, 2*time.Second
}

func pollUpdate(o *cloudformation.StackUpdateCompleteWaiterOptions) {
	o.MinDelay, o.MaxDelay = 300*time.Millisecond, 2*time.Second
}

func pollDelete(o *cloudformation.StackDeleteCompleteWaiterOptions) {
	o.MinDelay, o.MaxDelay = 300*time.Millisecond, 2*time.Second
}

// routingResources returns the template's routing resources, sorted by
// logical id.
func routingResources(t *template.Template) []template.Resource {
	var out []template.Resource
	for _, typ := range RoutingTypes {
		out = append(out, t.Resources(typ)...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LogicalID < out[j].LogicalID })
	return out
}

// RoutingStackName is the name of the stack holding the routing of the
// resources provisioned with prefix.
func RoutingStackName(prefix string) string {
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, prefix+"-routing")
	if c := name[0]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
		name = "r" + name
	}
	return name
}

// route has CloudFormation create (or update) the routing resources, in a
// stack of their own, and records their physical ids.
func (p *Provisioner) route(ctx context.Context, routing []template.Resource, res *Resources) error {
	local := map[string]bool{}
	for _, r := range routing {
		local[r.LogicalID] = true
	}
	resources := map[string]any{}
	for _, r := range routing {
		props, err := res.cfnValue(r.Properties, local)
		if err != nil {
			return fmt.Errorf("provision %s: %w", r.LogicalID, err)
		}
		resources[r.LogicalID] = map[string]any{"Type": r.Type, "Properties": props}
	}
	body, err := json.Marshal(map[string]any{
		"AWSTemplateFormatVersion": "2010-09-09",
		"Description":              "webhook-inbox's routing on an emulator (tools/provision): the template's own definitions, its queues by their provisioned ARNs and URLs",
		"Resources":                resources,
	})
	if err != nil {
		return fmt.Errorf("provision routing: %w", err)
	}
	name := RoutingStackName(p.Prefix)
	if err := p.deployStack(ctx, name, string(body)); err != nil {
		return fmt.Errorf(
			"provision routing (%s): %w; the template's EventBridge destination needs an emulator whose CloudFormation and EventBridge run it: LocalStack (docs/localstack.md)",
			name,
			err,
		)
	}
	out, err := p.CloudFormation.DescribeStackResources(ctx, &cloudformation.DescribeStackResourcesInput{StackName: aws.String(name)})
	if err != nil {
		return fmt.Errorf("provision routing: resources of %s: %w", name, err)
	}
	res.Routing = map[string]string{}
	for _, r := range out.StackResources {
		res.Routing[aws.ToString(r.LogicalResourceId)] = aws.ToString(r.PhysicalResourceId)
	}
	return nil
}

// deployStack creates the stack name with body, or updates it when it
// exists with another body, and waits until it has settled.
func (p *Provisioner) deployStack(ctx context.Context, name, body string) error {
	cf := p.CloudFormation
	status, err := p.stackStatus(ctx, name)
	if err != nil {
		return err
	}
	switch {
	case status == "":
	case strings.HasSuffix(string(status), "_FAILED") || status == cftypes.StackStatusRollbackComplete:
		// A stack that never came up cannot be updated: start afresh.
		if _, err := cf.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String(name)}); err != nil {
			return fmt.Errorf("delete failed stack: %w", err)
		}
		if err := cloudformation.NewStackDeleteCompleteWaiter(cf, pollDelete).Wait(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(name)}, routingWait); err != nil {
			return fmt.Errorf("wait for the failed stack's deletion: %w", err)
		}
		status = ""
	default:
		cur, err := cf.GetTemplate(ctx, &cloudformation.GetTemplateInput{StackName: aws.String(name)})
		if err != nil {
			return fmt.Errorf("read the stack's template: %w", err)
		}
		if sameJSON(aws.ToString(cur.TemplateBody), body) {
			return nil
		}
		_, err = cf.UpdateStack(ctx, &cloudformation.UpdateStackInput{StackName: aws.String(name), TemplateBody: aws.String(body)})
		var api smithy.APIError
		if errors.As(err, &api) && strings.Contains(api.ErrorMessage(), "No updates are to be performed") {
			return nil
		}
		if err != nil {
			return fmt.Errorf("update stack: %w", err)
		}
		if err := cloudformation.NewStackUpdateCompleteWaiter(cf, pollUpdate).Wait(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(name)}, routingWait); err != nil {
			return fmt.Errorf("wait for the update: %w%s", err, p.failures(ctx, name))
		}
		return nil
	}
	if _, err := cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String(name), TemplateBody: aws.String(body)}); err != nil {
		return fmt.Errorf("create stack: %w", err)
	}
	if err := cloudformation.NewStackCreateCompleteWaiter(cf, pollCreate).Wait(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(name)}, routingWait); err != nil {
		return fmt.Errorf("wait for the creation: %w%s", err, p.failures(ctx, name))
	}
	return nil
}

// stackStatus is the stack's status, or "" when there is none.
func (p *Provisioner) stackStatus(ctx context.Context, name string) (cftypes.StackStatus, error) {
	out, err := p.CloudFormation.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(name)})
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() == "ValidationError" && strings.Contains(api.ErrorMessage(), "does not exist") {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("describe stack: %w", err)
	}
	if len(out.Stacks) == 0 || out.Stacks[0].StackStatus == cftypes.StackStatusDeleteComplete {
		return "", nil
	}
	return out.Stacks[0].StackStatus, nil
}

// failures says why the stack's resources failed, from its events.
func (p *Provisioner) failures(ctx context.Context, name string) string {
	out, err := p.CloudFormation.DescribeStackEvents(ctx, &cloudformation.DescribeStackEventsInput{StackName: aws.String(name)})
	if err != nil {
		return ""
	}
	var why []string
	for _, e := range out.StackEvents {
		if strings.HasSuffix(string(e.ResourceStatus), "_FAILED") {
			why = append(why, aws.ToString(e.LogicalResourceId)+": "+aws.ToString(e.ResourceStatusReason))
		}
	}
	if len(why) == 0 {
		return ""
	}
	return " (" + strings.Join(why, "; ") + ")"
}

func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}

// cfnValue turns a processed template value back into CloudFormation's
// JSON form for the routing stack: references among its own resources
// (local) stay Ref and Fn::GetAtt, references to what Provision created
// become their names, URLs and ARNs.
func (r *Resources) cfnValue(v any, local map[string]bool) (any, error) {
	ref, getAtt, ok := template.Symbol(v)
	switch {
	case ok && ref.LogicalID != "" && local[ref.LogicalID]:
		return map[string]any{"Ref": ref.LogicalID}, nil
	case ok && getAtt.LogicalID != "" && local[getAtt.LogicalID]:
		return map[string]any{"Fn::GetAtt": []any{getAtt.LogicalID, getAtt.Attr}}, nil
	case ok:
		return r.Resolve(v)
	}
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			c, err := r.cfnValue(e, local)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, err := r.cfnValue(e, local)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case string:
		return r.substitute(x)
	}
	return v, nil
}
