package egress

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Check parses raw and returns it when the inbox may send secrets there:
// https to any host, or http to a loopback host. Its errors name the
// scheme and host only, never the path, query or user info, which may
// carry a token.
func Check(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error quotes the whole URL: say only that it does not parse.
		return nil, fmt.Errorf("egress: not a URL")
	}
	if u.Host == "" || u.Hostname() == "" {
		return nil, fmt.Errorf("egress: %s URL without a host: want https://<host>", safeScheme(u))
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return u, nil
	case "http":
		if Loopback(u.Hostname()) {
			return u, nil
		}
		return nil, fmt.Errorf("egress: http://%s: want https (plain http only to a loopback host: 127.0.0.1, ::1, localhost)", u.Host)
	default:
		return nil, fmt.Errorf("egress: %s://%s: want https", safeScheme(u), u.Host)
	}
}

// Loopback reports whether host (without a port) names this machine:
// localhost, or an address in 127.0.0.0/8 or ::1.
func Loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// safeScheme is the URL's scheme, or a placeholder for one that is empty.
func safeScheme(u *url.URL) string {
	if u.Scheme == "" {
		return "(no scheme)"
	}
	return u.Scheme
}

// NoRedirect is an http.Client CheckRedirect that follows no redirect:
// the 3xx comes back as the answer. A client that adds a credential in
// its transport adds it again on every hop, to whatever host the Location
// names (net/http strips only the headers of the first request), so every
// client that carries a secret sets it.
func NoRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Send sends req once with client (http.DefaultClient's settings when
// nil) and follows no redirect: a 3xx comes back as the answer, for the
// caller to refuse, since following it would send the same secrets to a
// host nobody configured. Its error names the request's host only:
// *url.Error would print the whole URL, whose path or query may hold a
// token; the cause it wraps still classifies the failure.
func Send(client *http.Client, req *http.Request) (*http.Response, error) {
	c := http.Client{}
	if client != nil {
		c = *client
	}
	c.CheckRedirect = NoRedirect
	resp, err := c.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("%s to host %s: %w", req.Method, req.URL.Host, err)
	}
	return resp, nil
}
