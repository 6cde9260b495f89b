package ownership_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/webhook-inbox/webhook-inbox/tools/ownership"
)

// src uses owned names in every way Scan must report, and in the ways it
// must not: comments, struct tags, prose, log keys of shared vocabulary.
const src = "package p\n\n" + `
import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

const attrStatusAt = "status_at" // want status_at declared

// status_day and by_status in a comment are documentation.
type JSON struct {
	StatusAt string ` + "`json:\"status_at\"`" + `
}

func f(out *dynamodb.GetItemOutput, item map[string]types.AttributeValue) {
	_ = "pending_shard"                                   // want pending_shard exact
	_ = aws.String("by_status")                           // want by_status exact
	_ = &dynamodb.QueryInput{
		IndexName:              aws.String(idx),
		KeyConditionExpression: aws.String("status_at < x"), // want status_at expression (a request field)
		ProjectionExpression:   aws.String("pk"),           // excepted: every table's key
	}
	update := "SET #st = :s, status_at = :now"            // want status_at expression (placeholders)
	_ = "#status = :status"                               // placeholders named like an attribute: not reported
	_ = map[string]types.AttributeValue{"status": nil}    // want status item (shared vocabulary too)
	_ = out.Item["status_at"]                             // want status_at item
	_ = "checkpoint#stripe#1"                             // want checkpoint# exact (a key prefix)
	_ = "it reads the by_status index one day at a time"  // prose: not reported
	_ = "status_at"                                       // shared vocabulary: a log key
	_ = item["status"]                                    // a map that is not a response's: not reported
	_ = update
}
`

func TestScanSource(t *testing.T) {
	r := ownership.Rules{
		Names:      []string{"pk", "status", "status_at", "status_day", "pending_shard", "by_status", "checkpoint#"},
		Vocabulary: map[string]string{"status": "a word", "status_at": "a log key"},
		Except:     map[string]string{"pk": "every table's key"},
	}
	got, err := ownership.ScanSource("p.go", []byte(src), r)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, f := range got {
		lines = append(lines, fmt.Sprintf("%d %s %s", f.Pos.Line, f.Name, f.Rule))
	}
	// Each "// want <name> <rule>" comment marks a line to be reported.
	var want []string
	for i, line := range strings.Split(src, "\n") {
		if _, w, ok := strings.Cut(line, "// want "); ok {
			f := strings.Fields(w)
			want = append(want, fmt.Sprintf("%d %s %s", i+1, f[0], f[1]))
		}
	}
	if len(want) != 8 {
		t.Fatalf("the source marks %d lines, want 8", len(want))
	}
	if !slices.Equal(lines, want) {
		t.Errorf("findings:\n got %q\nwant %q", lines, want)
	}
}

func TestOwnedReadsConstantsAndTags(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("package p\n"+body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("a.go", `const (
	attrPK = "pk"
	indexByDay = "by_day"
	prefixCheck = "check#"
	other = "not owned"
)
type item struct {
	Seq int `+"`dynamodbav:\"seq\"`"+`
	Skip int `+"`dynamodbav:\"-\"`"+`
}`)
	write("a_test.go", `const attrTestOnly = "x"`)
	got, err := ownership.Owned(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"by_day", "check#", "pk", "seq"}; !slices.Equal(got, want) {
		t.Errorf("owned: got %q, want %q", got, want)
	}
}
