package secrets

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/ssm/types"
)

type fakeSSM struct {
	value string
	err   error
	in    *ssm.GetParameterInput
}

func (f *fakeSSM) GetParameter(_ context.Context, in *ssm.GetParameterInput, _ ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	f.in = in
	if f.err != nil {
		return nil, f.err
	}
	return &ssm.GetParameterOutput{Parameter: &types.Parameter{Value: aws.String(f.value)}}, nil
}

func TestRead(t *testing.T) {
	f := &fakeSSM{value: "whsec_a,whsec_b"}
	v, err := Read(context.Background(), f, "/p")
	if err != nil || v != "whsec_a,whsec_b" {
		t.Fatalf("got %q, %v", v, err)
	}
	if !aws.ToBool(f.in.WithDecryption) {
		t.Error("SecureString read without decryption")
	}
	_, err = Read(context.Background(), &fakeSSM{err: errors.New("AccessDenied")}, "/p")
	if err == nil || !strings.Contains(err.Error(), "/p") {
		t.Errorf("error should name the parameter: %v", err)
	}
	if _, err := Read(context.Background(), &fakeSSM{value: ""}, "/p"); err == nil {
		t.Error("empty parameter: got nil error")
	}
}

func TestList(t *testing.T) {
	got := List(" whsec_new ,\nwhsec_old\r\n,,")
	if want := []string{"whsec_new", "whsec_old"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
