package provider

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/webhook-inbox/webhook-inbox/shared/pipeline/event"
)

// LiveKit's vector, as livekit-server-sdk 2.19.2's WebhookReceiver
// accepted it with the clock anywhere in [nbf-10, exp+9]
// (../shared/FACTS.md).
const (
	liveKitKey         = "APIabcdefg"
	liveKitSecret      = "secret-abababababababababababababab"
	liveKitNBF         = 1700000000
	liveKitExp         = 1700000600
	liveKitBody        = `{"event":"room_started","room":{"sid":"RM_TkVjUvAqgzKz","name":"mytestroom","emptyTimeout":300,"creationTime":"1628545903"},"id":"EV_3ytgPQfdyAVH","createdAt":"1700000000"}`
	liveKitVectorToken = "eyJhbGciOiJIUzI1NiJ9.eyJzaGEyNTYiOiJBWlFiMUh0KzhHMmYvTGVvZTNsU1FUWVQ2dElGQU9TanJWUzh2Q1VsdDE4PSIsImlzcyI6IkFQSWFiY2RlZmciLCJuYmYiOjE3MDAwMDAwMDAsImV4cCI6MTcwMDAwMDYwMH0.FUQbWthqvRVs0zmh7vOgxanmCWHgOPoSa7DgkTVfxSs"
)

func TestLiveKitVector(t *testing.T) {
	at := func(ts int64) Options { return Options{Now: func() time.Time { return time.Unix(ts, 0) }} }
	pair := liveKitKey + ":" + liveKitSecret
	v, err := New(LiveKit, []string{pair}, at(liveKitNBF))
	if err != nil {
		t.Fatal(err)
	}
	env, err := verify(v, []byte(liveKitBody), map[string]string{"Authorization": liveKitVectorToken})
	if err != nil {
		t.Fatal(err)
	}
	want := event.Envelope{ID: "EV_3ytgPQfdyAVH", Type: "room_started", Created: 1700000000, ObjectID: "RM_TkVjUvAqgzKz", ObjectType: "room"}
	if env != want {
		t.Errorf("got %+v, want %+v", env, want)
	}
	// The token for another body, signed with the vector's secret.
	otherBody := `{"event":"room_finished","id":"EV_other"}`
	other, err := signLiveKit(pair, Delivery{Body: []byte(otherBody), Now: time.Unix(liveKitNBF, 0)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		secrets []string
		now     int64
		token   string
		body    string
		want    error
	}{
		{"at nbf-10", []string{pair}, liveKitNBF - 10, liveKitVectorToken, liveKitBody, nil},
		{"at exp+9", []string{pair}, liveKitExp + 9, liveKitVectorToken, liveKitBody, nil},
		{"rotation: another key pair beside it", []string{"APInew:new-secret", pair}, liveKitNBF, liveKitVectorToken, liveKitBody, nil},
		{"expired: exp+10", []string{pair}, liveKitExp + 10, liveKitVectorToken, liveKitBody, ErrTooOld},
		{"not yet: nbf-11", []string{pair}, liveKitNBF - 11, liveKitVectorToken, liveKitBody, ErrTooNew},
		{"wrong secret", []string{liveKitKey + ":secret-other"}, liveKitNBF, liveKitVectorToken, liveKitBody, ErrNoMatch},
		{"another API key", []string{"APIother:" + liveKitSecret}, liveKitNBF, liveKitVectorToken, liveKitBody, ErrNoMatch},
		{"body changed", []string{pair}, liveKitNBF, liveKitVectorToken, liveKitBody + " ", ErrNoMatch},
		{"the token of another body", []string{pair}, liveKitNBF, other[headerLiveKitAuthorization], liveKitBody, ErrNoMatch},
		{"no header", []string{pair}, liveKitNBF, "", liveKitBody, ErrMissingSignature},
		{"Bearer, as LiveKit does not send it", []string{pair}, liveKitNBF, "Bearer " + liveKitVectorToken, liveKitBody, ErrMalformedSignature},
		{"not a JWT", []string{pair}, liveKitNBF, "garbage", liveKitBody, ErrMalformedSignature},
		{"alg none: no secret verifies it", []string{pair}, liveKitNBF, "eyJhbGciOiJub25lIn0." + strings.Split(liveKitVectorToken, ".")[1] + ".", liveKitBody, ErrNoMatch},
		{"no id", []string{pair}, liveKitNBF, other[headerLiveKitAuthorization], otherBody, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := New(LiveKit, tc.secrets, at(tc.now))
			if err != nil {
				t.Fatal(err)
			}
			h := map[string]string{}
			if tc.token != "" {
				h["authorization"] = tc.token
			}
			_, err = verify(v, []byte(tc.body), h)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
	noID := `{"event":"room_started"}`
	h, _ := signLiveKit(pair, Delivery{Body: []byte(noID), Now: time.Unix(liveKitNBF, 0)})
	if _, err := verify(v, []byte(noID), h); !errors.Is(err, event.ErrMissingID) {
		t.Errorf("no id: got %v, want ErrMissingID", err)
	}
	for _, s := range []string{liveKitSecret, ":" + liveKitSecret, liveKitKey + ":"} {
		if _, err := New(LiveKit, []string{s}, Options{}); err == nil {
			t.Errorf("secret %q: got no error, want one (want <API key>:<API secret>)", s)
		}
	}
}
