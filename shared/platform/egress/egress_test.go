package egress

import (
	"net/http"
	"net/http/httptest"
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

// TestSendFollowsNoRedirectAndNamesTheHostOnly: a 307 comes back as the
// answer (nothing is re-sent to the Location), and a failed request's
// error keeps the URL's path and query (a token) out.
func TestSendFollowsNoRedirectAndNamesTheHostOnly(t *testing.T) {
	var elsewhere int
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { elsewhere++ }))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/steal", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/hook", strings.NewReader("{}"))
	resp, err := Send(nil, req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect || elsewhere != 0 {
		t.Errorf("got %d with %d request(s) to the Location, want the 307 itself and none", resp.StatusCode, elsewhere)
	}

	req, _ = http.NewRequest(http.MethodPost, "http://127.0.0.1:1/hook?token=s3cret", strings.NewReader("{}"))
	_, err = Send(nil, req)
	if err == nil || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "/hook") ||
		!strings.Contains(err.Error(), "POST to host 127.0.0.1:1") {
		t.Errorf("error %v: want the host only", err)
	}
}
