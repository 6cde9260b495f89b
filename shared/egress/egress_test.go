package egress

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		raw string
		ok  bool
	}{
		{"https://app.example.com/hooks/inbox", true},
		{"HTTPS://app.example.com", true},
		{"http://127.0.0.1:8080/hooks", true},
		{"http://127.0.0.2:8080/hooks", true},
		{"http://[::1]:8080/hooks", true},
		{"http://localhost:8080/hooks", true},
		{"http://LocalHost/hooks", true},
		{"http://app.example.com/hooks", false},
		{"http://10.0.0.5/hooks", false},
		{"http://127.0.0.1.example.com/hooks", false},
		{"http://localhost.example.com/hooks", false},
		{"http://[::ffff:10.0.0.1]/hooks", false},
		{"ftp://app.example.com/hooks", false},
		{"app.example.com/hooks", false},
		{"https:///hooks", false},
		{"", false},
	} {
		t.Run(tc.raw, func(t *testing.T) {
			_, err := Check(tc.raw)
			if (err == nil) != tc.ok {
				t.Errorf("Check(%q): got %v, want ok=%v", tc.raw, err, tc.ok)
			}
		})
	}
}

func TestCheckErrorsNeverShowTokens(t *testing.T) {
	for _, raw := range []string{
		"http://user:pa55word@app.example.com/hooks/t0ken?key=s3cret",
		"ftp://user:pa55word@app.example.com/hooks/t0ken?key=s3cret",
		"http://app.example.com:bad/t0ken?key=s3cret%zz",
		"https:///t0ken?key=s3cret",
	} {
		_, err := Check(raw)
		if err == nil {
			t.Fatalf("Check(%q): got nil error", raw)
		}
		for _, secret := range []string{"pa55word", "t0ken", "s3cret"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("Check(%q): error %q shows %q", raw, err, secret)
			}
		}
	}
}
