package secrets

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
)

type fakeSSM struct {
	value string
	typ   string // SecureString when empty
	err   error
	name  string
}

func (f *fakeSSM) GetParameter(_ context.Context, name string) (Parameter, error) {
	f.name = name
	if f.err != nil {
		return Parameter{}, f.err
	}
	typ := f.typ
	if typ == "" {
		typ = "SecureString"
	}
	return Parameter{Name: name, Value: f.value, Type: typ}, nil
}

func TestRead(t *testing.T) {
	f := &fakeSSM{value: "whsec_a,whsec_b"}
	v, err := Read(context.Background(), f, "/p")
	if err != nil || v != "whsec_a,whsec_b" {
		t.Fatalf("got %q, %v", v, err)
	}
	if f.name != "/p" {
		t.Errorf("read parameter %q, want /p", f.name)
	}
	_, err = Read(context.Background(), &fakeSSM{err: errors.New("AccessDenied")}, "/p")
	if err == nil || !strings.Contains(err.Error(), "/p") {
		t.Errorf("error should name the parameter: %v", err)
	}
	if _, err := Read(context.Background(), &fakeSSM{value: ""}, "/p"); err == nil {
		t.Error("empty parameter: got nil error")
	}
}

// TestReadRefusesPlainParameters: a secret stored as a String (or
// StringList) parameter is refused, and the error carries the parameter's
// name but never its value.
func TestReadRefusesPlainParameters(t *testing.T) {
	for _, typ := range []string{"String", "StringList"} {
		v, err := Read(context.Background(), &fakeSSM{value: "whsec_plain", typ: typ}, "/p")
		if !errors.Is(err, ErrNotSecureString) {
			t.Errorf("%s: got %q, %v; want ErrNotSecureString", typ, v, err)
			continue
		}
		if v != "" || strings.Contains(err.Error(), "whsec_plain") || !strings.Contains(err.Error(), "/p") {
			t.Errorf("%s: got %q, %v; want no value, the parameter's name and not its value", typ, v, err)
		}
	}
}

func TestList(t *testing.T) {
	got := List(" whsec_new ,\nwhsec_old\r\n,,")
	if want := []string{"whsec_new", "whsec_old"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
