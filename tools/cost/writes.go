package cost

import (
	"context"
	"errors"
	"regexp"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

type nextFunc func() (middleware.InitializeOutput, middleware.Metadata, error)

// target is one item a write names.
type target struct {
	table *Table
	name  string // physical
	kind  WriteKind
	key   Item
	put   Item   // the item of a Put
	upd   update // the expression of an Update
}

type update struct {
	expr   *string
	names  map[string]string
	values map[string]types.AttributeValue
}

// dynamo runs one DynamoDB request and prices it.
func (r *Recorder) dynamo(ctx context.Context, c *Call, params any, call nextFunc) (middleware.InitializeOutput, middleware.Metadata, error) {
	targets, transactional, isWrite := r.targets(params)
	if !isWrite {
		out, md, err := call()
		if err == nil {
			c.Reads = r.reads(ctx, params, out.Result)
		}
		return out, md, err
	}

	befores := make([]Item, len(targets))
	for i, t := range targets {
		befores[i] = r.get(ctx, t.name, t.key)
	}
	out, md, err := call()
	outcome, billed := outcomeOf(err)
	if !billed {
		return out, md, err
	}
	unprocessed := r.unprocessedWrites(out.Result)
	for i, t := range targets {
		if unprocessed[t.name+keyID(t.table, t.key)] {
			continue
		}
		w := Write{Kind: t.kind, Outcome: outcome, Before: befores[i], Transactional: transactional}
		switch {
		case outcome == Applied && t.kind != Delete:
			w.After = r.get(ctx, t.name, t.key)
		case outcome == Applied:
		case t.kind == Put:
			w.After = t.put
		case t.kind == Update:
			w.After = r.wouldUpdate(ctx, t, befores[i])
		case t.kind == ConditionCheck:
			w.After = befores[i]
		}
		c.Writes = append(c.Writes, RecordedWrite{Table: t.table.LogicalID, Write: w, Charge: t.table.Charge(w)})
	}
	return out, md, err
}

// targets are the items of the recorder's tables a write request names,
// and whether it is a transaction; isWrite is false for any other
// request.
func (r *Recorder) targets(params any) (targets []target, transactional, isWrite bool) {
	add := func(name *string, kind WriteKind, key, item Item, u update) {
		t := r.tables[aws.ToString(name)]
		if t == nil {
			return
		}
		if key == nil {
			key = t.Key(item)
		}
		targets = append(targets, target{table: t, name: aws.ToString(name), kind: kind, key: key, put: item, upd: u})
	}
	switch p := params.(type) {
	case *dynamodb.PutItemInput:
		add(p.TableName, Put, nil, p.Item, update{})
	case *dynamodb.UpdateItemInput:
		add(p.TableName, Update, p.Key, nil, update{p.UpdateExpression, p.ExpressionAttributeNames, p.ExpressionAttributeValues})
	case *dynamodb.DeleteItemInput:
		add(p.TableName, Delete, p.Key, nil, update{})
	case *dynamodb.BatchWriteItemInput:
		for name, reqs := range p.RequestItems {
			for _, w := range reqs {
				switch {
				case w.PutRequest != nil:
					add(aws.String(name), Put, nil, w.PutRequest.Item, update{})
				case w.DeleteRequest != nil:
					add(aws.String(name), Delete, w.DeleteRequest.Key, nil, update{})
				}
			}
		}
	case *dynamodb.TransactWriteItemsInput:
		transactional = true
		for _, it := range p.TransactItems {
			switch {
			case it.Put != nil:
				add(it.Put.TableName, Put, nil, it.Put.Item, update{})
			case it.Update != nil:
				u := it.Update
				add(u.TableName, Update, u.Key, nil, update{u.UpdateExpression, u.ExpressionAttributeNames, u.ExpressionAttributeValues})
			case it.Delete != nil:
				add(it.Delete.TableName, Delete, it.Delete.Key, nil, update{})
			case it.ConditionCheck != nil:
				add(it.ConditionCheck.TableName, ConditionCheck, it.ConditionCheck.Key, nil, update{})
			}
		}
	default:
		return nil, false, false
	}
	return targets, transactional, true
}

// outcomeOf is a write's outcome from its error: applied, its condition
// failed, or its transaction cancelled, each billed; billed is false when
// it was refused (validation, throttling): nothing was written or billed.
func outcomeOf(err error) (o Outcome, billed bool) {
	var ccf *types.ConditionalCheckFailedException
	var tce *types.TransactionCanceledException
	switch {
	case err == nil:
		return Applied, true
	case errors.As(err, &ccf):
		return ConditionFailed, true
	case errors.As(err, &tce):
		return Cancelled, true
	}
	return "", false
}

// unprocessedWrites are the items a BatchWriteItem left unwritten: it bills
// only the others.
func (r *Recorder) unprocessedWrites(result any) map[string]bool {
	out, ok := result.(*dynamodb.BatchWriteItemOutput)
	if !ok {
		return nil
	}
	m := map[string]bool{}
	for name, reqs := range out.UnprocessedItems {
		t := r.tables[name]
		if t == nil {
			continue
		}
		for _, w := range reqs {
			switch {
			case w.PutRequest != nil:
				m[name+keyID(t, w.PutRequest.Item)] = true
			case w.DeleteRequest != nil:
				m[name+keyID(t, w.DeleteRequest.Key)] = true
			}
		}
	}
	return m
}

// keyID identifies an item of t by its primary key.
func keyID(t *Table, item Item) string {
	return "\x00" + render(item[t.Hash]) + "\x00" + render(item[t.Range])
}

// get reads an item, strongly consistent, without recording it.
func (r *Recorder) get(ctx context.Context, table string, key Item) Item {
	out, err := r.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil || len(out.Item) == 0 {
		return nil
	}
	return out.Item
}

var (
	namePlaceholder  = regexp.MustCompile(`#[A-Za-z0-9_]+`)
	valuePlaceholder = regexp.MustCompile(`:[A-Za-z0-9_]+`)
)

// wouldUpdate returns the item t's update expression would have written
// over before: it runs the same expression, without its condition, on a
// copy of before in the scratch table, so the emulator's own update engine
// computes it. On any failure it returns before (the item stays as it was).
func (r *Recorder) wouldUpdate(ctx context.Context, t target, before Item) Item {
	scratch := r.scratch[t.table.LogicalID]
	if scratch == "" || t.upd.expr == nil {
		return before
	}
	var err error
	if before != nil {
		_, err = r.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(scratch), Item: before})
	} else {
		_, err = r.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(scratch), Key: t.key})
	}
	if err != nil {
		return before
	}
	expr := aws.ToString(t.upd.expr)
	in := &dynamodb.UpdateItemInput{TableName: aws.String(scratch), Key: t.key, UpdateExpression: t.upd.expr, ReturnValues: types.ReturnValueAllNew}
	// DynamoDB refuses placeholders the expression does not use, and the
	// condition's are gone.
	for _, p := range namePlaceholder.FindAllString(expr, -1) {
		if v, ok := t.upd.names[p]; ok {
			if in.ExpressionAttributeNames == nil {
				in.ExpressionAttributeNames = map[string]string{}
			}
			in.ExpressionAttributeNames[p] = v
		}
	}
	for _, p := range valuePlaceholder.FindAllString(expr, -1) {
		if v, ok := t.upd.values[p]; ok {
			if in.ExpressionAttributeValues == nil {
				in.ExpressionAttributeValues = map[string]types.AttributeValue{}
			}
			in.ExpressionAttributeValues[p] = v
		}
	}
	out, err := r.db.UpdateItem(ctx, in)
	if err != nil {
		return before
	}
	return out.Attributes
}
