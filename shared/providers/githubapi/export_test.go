package githubapi

import "net/http"

// HTTPClient is the client go-github sends with: its transport adds the
// credential.
func (c *Client) HTTPClient() *http.Client { return c.gh.Client() }
