package mirror_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/webhook-inbox/webhook-inbox/shared/storage/ddbattr"
	"github.com/webhook-inbox/webhook-inbox/shared/stripe/mirror"
)

// itemDB answers every read with one item.
type itemDB struct {
	item map[string]types.AttributeValue
}

func (d itemDB) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return &dynamodb.GetItemOutput{Item: d.item}, nil
}

func (d itemDB) Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return &dynamodb.QueryOutput{Items: []map[string]types.AttributeValue{d.item}}, nil
}

func (d itemDB) BatchGetItem(_ context.Context, in *dynamodb.BatchGetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	out := map[string][]map[string]types.AttributeValue{}
	for table := range in.RequestItems {
		out[table] = []map[string]types.AttributeValue{d.item}
	}
	return &dynamodb.BatchGetItemOutput{Responses: out}, nil
}

// gzipJSON gzips a JSON string of n spaces: valid data that inflates to
// about n bytes from a few KB.
func gzipJSON(t *testing.T, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write([]byte(`"`))
	zw.Write(bytes.Repeat([]byte(" "), n))
	zw.Write([]byte(`"`))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func snapshotItem(data []byte) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk":       &types.AttributeValueMemberS{Value: "cus_bomb"},
		"object":   &types.AttributeValueMemberS{Value: "customer"},
		"customer": &types.AttributeValueMemberS{Value: "cus_bomb"},
		"data_gz":  &types.AttributeValueMemberB{Value: data},
	}
}

func TestSnapshotDataInflatesOnlyToTheLimit(t *testing.T) {
	ctx := context.Background()
	bomb := mirror.Reader{DB: itemDB{snapshotItem(gzipJSON(t, 64<<20))}, Table: "mirror"}
	for name, read := range map[string]func() error{
		"Object":          func() error { _, err := bomb.Object(ctx, "cus_bomb"); return err },
		"CustomerObjects": func() error { _, err := bomb.CustomerObjects(ctx, "cus_bomb", ""); return err },
	} {
		err := read()
		if err == nil || !strings.Contains(err.Error(), "cus_bomb") || !strings.Contains(err.Error(), strconv.Itoa(ddbattr.MaxInflated)) {
			t.Errorf("%s of a gzip bomb: got %v, want an error naming the object and the limit", name, err)
		}
	}
	damaged := mirror.Reader{DB: itemDB{snapshotItem([]byte("not gzip"))}, Table: "mirror"}
	if _, err := damaged.Object(ctx, "cus_bomb"); err == nil || !strings.Contains(err.Error(), "cus_bomb") {
		t.Errorf("damaged data: got %v, want an error naming the object", err)
	}
	fine := mirror.Reader{DB: itemDB{snapshotItem(gzipJSON(t, 1<<20))}, Table: "mirror"}
	if snap, err := fine.Object(ctx, "cus_bomb"); err != nil || len(snap.Data) != 1<<20+2 {
		t.Errorf("1 MB of data: got %d bytes, %v; want it whole", len(snap.Data), err)
	}
}
