// Package provision creates the template's tables and queues on an AWS
// emulator (moto, LocalStack), idempotently, and resolves the references the
// functions' environments make to them. The definitions come from
// template.yaml only: there is no second copy of a table or queue here.
// The routing (RoutingTypes: Stripe's EventBridge destination, when the
// template has it) is created by the emulator's CloudFormation from the
// template's own definitions.
package provision

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/webhook-inbox/webhook-inbox/tools/template"
)

// Queue is a provisioned queue.
type Queue struct {
	Name, URL, ARN string
}

// Resources are the provisioned resources, by logical id.
type Resources struct {
	Tables map[string]string
	Queues map[string]Queue
	// Routing holds the routing resources' physical ids (an event bus's
	// name, a rule's id), nil when the template has none or they were left
	// out.
	Routing map[string]string
	// LeftOut names the routing resources not created: the Provisioner had
	// no CloudFormation client.
	LeftOut []string
}

// Provisioner creates resources with a name prefix, so several stacks (a
// developer's, each test's) share one emulator without meeting.
type Provisioner struct {
	DynamoDB *dynamodb.Client
	SQS      *sqs.Client
	// CloudFormation creates the template's routing (RoutingTypes) in a
	// stack of its own (RoutingStackName); nil leaves the routing out
	// (Resources.LeftOut names it): moto runs none of it as the template
	// needs.
	CloudFormation *cloudformation.Client
	Prefix         string
}

// Name is the physical name of a resource.
func (p *Provisioner) Name(logicalID string) string { return p.Prefix + "-" + logicalID }

// Provision creates every table and queue of t that does not exist yet,
// and the routing when it has a CloudFormation client.
func (p *Provisioner) Provision(ctx context.Context, t *template.Template) (*Resources, error) {
	res := &Resources{Tables: map[string]string{}, Queues: map[string]Queue{}}
	for _, r := range t.Resources("AWS::DynamoDB::Table") {
		name, err := p.table(ctx, r)
		if err != nil {
			return nil, err
		}
		res.Tables[r.LogicalID] = name
	}
	// Queues without a redrive policy first: they are the targets.
	queues := t.Resources("AWS::SQS::Queue")
	sort.SliceStable(queues, func(i, j int) bool {
		return queues[i].Properties["RedrivePolicy"] == nil && queues[j].Properties["RedrivePolicy"] != nil
	})
	for _, r := range queues {
		q, err := p.queue(ctx, r, res)
		if err != nil {
			return nil, err
		}
		res.Queues[r.LogicalID] = q
	}
	routing := routingResources(t)
	switch {
	case len(routing) == 0:
	case p.CloudFormation == nil:
		for _, r := range routing {
			res.LeftOut = append(res.LeftOut, r.LogicalID)
		}
	default:
		if err := p.route(ctx, routing, res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func (p *Provisioner) table(ctx context.Context, r template.Resource) (string, error) {
	name := p.Name(r.LogicalID)
	in := &dynamodb.CreateTableInput{TableName: aws.String(name)}
	if err := convert(r.Properties["AttributeDefinitions"], &in.AttributeDefinitions); err != nil {
		return "", fmt.Errorf("provision %s: AttributeDefinitions: %w", r.LogicalID, err)
	}
	if err := convert(r.Properties["KeySchema"], &in.KeySchema); err != nil {
		return "", fmt.Errorf("provision %s: KeySchema: %w", r.LogicalID, err)
	}
	if gsis, ok := r.Properties["GlobalSecondaryIndexes"]; ok {
		if err := convert(gsis, &in.GlobalSecondaryIndexes); err != nil {
			return "", fmt.Errorf("provision %s: GlobalSecondaryIndexes: %w", r.LogicalID, err)
		}
	}
	mode, _ := r.Properties["BillingMode"].(string)
	in.BillingMode = ddbtypes.BillingMode(mode)
	if in.BillingMode == "" {
		in.BillingMode = ddbtypes.BillingModeProvisioned
	}
	if in.BillingMode == ddbtypes.BillingModeProvisioned {
		in.ProvisionedThroughput = &ddbtypes.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(5), WriteCapacityUnits: aws.Int64(5)}
	}
	_, err := p.DynamoDB.CreateTable(ctx, in)
	var inUse *ddbtypes.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return "", fmt.Errorf("provision %s: create table %s: %w", r.LogicalID, name, err)
	}
	if err := dynamodb.NewTableExistsWaiter(p.DynamoDB).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, 60e9); err != nil {
		return "", fmt.Errorf("provision %s: wait for table %s: %w", r.LogicalID, name, err)
	}
	if ttl, ok := r.Properties["TimeToLiveSpecification"].(map[string]any); ok && ttl["Enabled"] == true {
		attr, _ := ttl["AttributeName"].(string)
		if err := p.ttl(ctx, name, attr); err != nil {
			return "", fmt.Errorf("provision %s: %w", r.LogicalID, err)
		}
	}
	return name, nil
}

// ttl turns on expiry by attr, unless it is on already. DynamoDB refuses to
// enable TTL twice with a ValidationException that only its message tells
// apart from other invalid requests, so the table's TTL is read first; a
// TTL on another attribute (the template changed) is set to the template's,
// as queues' attributes are.
func (p *Provisioner) ttl(ctx context.Context, table, attr string) error {
	cur, err := p.DynamoDB.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil {
		return fmt.Errorf("read TTL of %s: %w", table, err)
	}
	if d := cur.TimeToLiveDescription; d != nil && aws.ToString(d.AttributeName) == attr &&
		(d.TimeToLiveStatus == ddbtypes.TimeToLiveStatusEnabled || d.TimeToLiveStatus == ddbtypes.TimeToLiveStatusEnabling) {
		return nil
	}
	_, err = p.DynamoDB.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(table),
		TimeToLiveSpecification: &ddbtypes.TimeToLiveSpecification{AttributeName: aws.String(attr), Enabled: aws.Bool(true)},
	})
	if err != nil {
		return fmt.Errorf("enable TTL of %s: %w", table, err)
	}
	return nil
}

// queueAttributes maps template properties to SQS attribute names.
var queueAttributes = map[string]string{
	"VisibilityTimeout":             "VisibilityTimeout",
	"MessageRetentionPeriod":        "MessageRetentionPeriod",
	"DelaySeconds":                  "DelaySeconds",
	"MaximumMessageSize":            "MaximumMessageSize",
	"ReceiveMessageWaitTimeSeconds": "ReceiveMessageWaitTimeSeconds",
	"SqsManagedSseEnabled":          "SqsManagedSseEnabled",
}

func (p *Provisioner) queue(ctx context.Context, r template.Resource, res *Resources) (Queue, error) {
	name := p.Name(r.LogicalID)
	attrs := map[string]string{}
	for prop, attr := range queueAttributes {
		if v, ok := r.Properties[prop]; ok {
			attrs[attr] = template.Scalar(v)
		}
	}
	if rp, ok := r.Properties["RedrivePolicy"].(map[string]any); ok {
		_, target, ok := template.Symbol(rp["deadLetterTargetArn"])
		dlq, found := res.Queues[target.LogicalID]
		if !ok || !found {
			return Queue{}, fmt.Errorf("provision %s: deadLetterTargetArn must be !GetAtt <queue>.Arn of a queue in the template", r.LogicalID)
		}
		maxReceive, ok := template.Int(rp["maxReceiveCount"])
		if !ok {
			return Queue{}, fmt.Errorf("provision %s: RedrivePolicy.maxReceiveCount is not a number", r.LogicalID)
		}
		policy, _ := json.Marshal(map[string]any{"deadLetterTargetArn": dlq.ARN, "maxReceiveCount": maxReceive})
		attrs["RedrivePolicy"] = string(policy)
	}
	out, err := p.SQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		var exists *sqstypes.QueueNameExists
		if !errors.As(err, &exists) {
			return Queue{}, fmt.Errorf("provision %s: create queue %s: %w", r.LogicalID, name, err)
		}
		// Same name, other attributes: the template changed. Apply it.
		got, gerr := p.SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
		if gerr != nil {
			return Queue{}, fmt.Errorf("provision %s: %w", r.LogicalID, gerr)
		}
		if _, serr := p.SQS.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: got.QueueUrl, Attributes: attrs}); serr != nil {
			return Queue{}, fmt.Errorf("provision %s: update queue %s: %w", r.LogicalID, name, serr)
		}
		out = &sqs.CreateQueueOutput{QueueUrl: got.QueueUrl}
	}
	qa, err := p.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       out.QueueUrl,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return Queue{}, fmt.Errorf("provision %s: queue ARN: %w", r.LogicalID, err)
	}
	return Queue{Name: name, URL: aws.ToString(out.QueueUrl), ARN: qa.Attributes["QueueArn"]}, nil
}

// Resolve turns a template value into the string a function's environment
// gets in AWS: Ref of a table is its name, Ref of a queue its URL, GetAtt
// .Arn an ARN, anything else its scalar form.
func (r *Resources) Resolve(v any) (string, error) {
	ref, getAtt, ok := template.Symbol(v)
	switch {
	case !ok:
		return r.substitute(template.Scalar(v))
	case ref.LogicalID != "":
		return r.ref(ref.LogicalID)
	case getAtt.Attr == "Arn":
		return r.arn(getAtt.LogicalID)
	}
	return "", fmt.Errorf("provision: GetAtt %s.%s: not a provisioned resource", getAtt.LogicalID, getAtt.Attr)
}

// ref is what Ref gives for a provisioned resource: a table's name, a
// queue's URL.
func (r *Resources) ref(id string) (string, error) {
	if name, ok := r.Tables[id]; ok {
		return name, nil
	}
	if q, ok := r.Queues[id]; ok {
		return q.URL, nil
	}
	return "", fmt.Errorf("provision: Ref %s: not a provisioned resource", id)
}

// arn is what GetAtt Arn gives for a provisioned resource.
func (r *Resources) arn(id string) (string, error) {
	if q, ok := r.Queues[id]; ok {
		return q.ARN, nil
	}
	if name, ok := r.Tables[id]; ok {
		return fmt.Sprintf("arn:aws:dynamodb:%s:%s:table/%s", template.Region, template.AccountID, name), nil
	}
	return "", fmt.Errorf("provision: GetAtt %s.Arn: not a provisioned resource", id)
}

// subVar is a variable the template's intrinsic processor leaves in a !Sub
// string: a resource's ${LogicalId} or ${LogicalId.Arn}.
var subVar = regexp.MustCompile(`\$\{([A-Za-z0-9]+)(\.Arn)?\}`)

// substitute resolves the resource variables left in a !Sub string.
func (r *Resources) substitute(s string) (string, error) {
	var err error
	out := subVar.ReplaceAllStringFunc(s, func(v string) string {
		m := subVar.FindStringSubmatch(v)
		resolve := r.ref
		if m[2] != "" {
			resolve = r.arn
		}
		got, e := resolve(m[1])
		if e != nil && err == nil {
			err = fmt.Errorf("provision: %s in %q: %w", v, s, e)
		}
		return got
	})
	return out, err
}

// Environment resolves a function's environment variables.
func (r *Resources) Environment(f template.Function) (map[string]string, error) {
	env := map[string]string{}
	for k, v := range f.Environment {
		s, err := r.Resolve(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", f.LogicalID, k, err)
		}
		env[k] = s
	}
	return env, nil
}

// convert copies a generic template value into an SDK type through JSON:
// the template's property names are the API's member names.
func convert(v any, dst any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, dst)
}
