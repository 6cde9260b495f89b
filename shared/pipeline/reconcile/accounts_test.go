package reconcile

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

type fakeSeen struct {
	accounts []string
	err      error
}

func (f fakeSeen) Page(context.Context, string, string, int) ([]string, string, error) {
	return f.accounts, "", f.err
}

type fakeAccountLister struct {
	accounts []string
	err      error
}

func (f fakeAccountLister) ListAccounts(context.Context) ([]string, error) { return f.accounts, f.err }

// TestARunListsEveryAccountItFinds: a run lists the configured accounts,
// those seen and those the platform lists, each once; a source that fails
// is counted and logged, and the others' accounts are listed all the same.
func TestARunListsEveryAccountItFinds(t *testing.T) {
	tests := []struct {
		name         string
		seen         fakeSeen
		listed       *fakeAccountLister
		wantAccounts []string
		wantFailures int
	}{
		{name: "seen and configured", seen: fakeSeen{accounts: []string{"acct_seen", "acct_conf"}},
			wantAccounts: []string{"", "acct_conf", "acct_seen"}},
		{name: "listed too", seen: fakeSeen{accounts: []string{"acct_seen"}}, listed: &fakeAccountLister{accounts: []string{"acct_listed", "acct_seen"}},
			wantAccounts: []string{"", "acct_conf", "acct_listed", "acct_seen"}},
		{name: "seen unreadable", seen: fakeSeen{err: errors.New("dynamodb unavailable")}, listed: &fakeAccountLister{accounts: []string{"acct_listed"}},
			wantAccounts: []string{"", "acct_conf", "acct_listed"}, wantFailures: 1},
		{name: "listing failed", seen: fakeSeen{accounts: []string{"acct_seen"}}, listed: &fakeAccountLister{err: errors.New("stripe: 500")},
			wantAccounts: []string{"", "acct_conf", "acct_seen"}, wantFailures: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := &recordingLister{}
			var logs bytes.Buffer
			cfg := Config{Stripe: l, Events: &fakeEvents{}, Checkpoints: &fakeCheckpoints{}, Ingester: nopIngester{}, Queue: nopQueue{},
				Types: []string{"invoice.paid"}, ConnectAccounts: []string{"acct_conf"}, SeenAccounts: tc.seen,
				Logger: slog.New(slog.NewJSONHandler(&logs, nil))}
			if tc.listed != nil {
				cfg.ListAccounts = *tc.listed
			}
			r, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			res, err := r.Run(context.Background(), RunOptions{})
			if err != nil {
				t.Fatalf("run: %v; want the known accounts listed", err)
			}
			var got []string
			for _, q := range l.queries {
				got = append(got, q.Account)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.wantAccounts) {
				t.Errorf("listed for: got %q, want %q", got, tc.wantAccounts)
			}
			if res.AccountFailures != tc.wantFailures || res.Accounts != len(tc.wantAccounts)-1 {
				t.Errorf("got %d accounts, %d failures; want %d, %d", res.Accounts, res.AccountFailures, len(tc.wantAccounts)-1, tc.wantFailures)
			}
			if logged := strings.Contains(logs.String(), `"account_failures"`); logged != (tc.wantFailures > 0) {
				t.Errorf("account_failures metric on the run's line: got %v, want %v: %s", logged, tc.wantFailures > 0, logs.String())
			}
		})
	}
}
