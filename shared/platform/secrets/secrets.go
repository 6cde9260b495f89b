package secrets

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ErrNotSecureString is returned for a parameter of another type: a
// String parameter is stored unencrypted and readable with ssm:GetParameter
// alone (no kms:Decrypt), and shows in the console and in CloudTrail's
// GetParameter responses, so a secret there has already leaked.
var ErrNotSecureString = errors.New("secrets: parameter is not a SecureString")

// SSM is what Read needs of Parameter Store; *Client implements it.
type SSM interface {
	GetParameter(ctx context.Context, name string) (Parameter, error)
}

// Read returns the decrypted value of the parameter name, which must be a
// SecureString (ErrNotSecureString otherwise; its value is not returned).
func Read(ctx context.Context, client SSM, name string) (string, error) {
	p, err := client.GetParameter(ctx, name)
	if err != nil {
		// The error names the parameter, never its value.
		return "", fmt.Errorf("secrets: read parameter %s: %w", name, err)
	}
	if p.Value == "" {
		return "", fmt.Errorf("secrets: parameter %s is empty", name)
	}
	if p.Type != "SecureString" {
		return "", fmt.Errorf("%w: %s is a %s; store it again with --type SecureString and rotate the secret it held", ErrNotSecureString, name, p.Type)
	}
	return p.Value, nil
}

// List splits a parameter holding several secrets, separated by commas or
// newlines (for example the current and the previous signing secret during a
// rotation).
func List(v string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == '\n' || r == '\r' }) {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
