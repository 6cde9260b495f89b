// Package githubapi is the project's one client of GitHub's REST API: the
// webhook deliveries of repository, organization and GitHub App hooks,
// listed page by page and redelivered, on google/go-github, with one
// classification of GitHub's rate limits (RateLimited).
//
// GitHub keeps each hook's deliveries for three days (Retention) and lists
// them newest first, paginated by an opaque cursor in the Link header; a
// redelivery is a new delivery with the same guid and redelivery=true,
// which GitHub signs and sends like the first.
//
// Repository and organization hooks are read with a token (a fine-grained
// token with read and write access to the repository's or organization's
// webhooks: redelivering is a write); a GitHub App's own hook only with a
// JSON Web Token the app signs with its private key, minted here for each
// request (RS256, valid 9 minutes, as GitHub allows at most 10). Both are
// asked for on each request (Config.Token, Config.AppKey), so a secret read
// on first need costs the function's init nothing.
//
// The credentials go only to GitHub's API, or to a base that egress.Check
// allows (https, or plain http to a loopback stand-in), and only to that
// base's scheme and host: the transport refuses a request to any other
// (ErrNotAPIHost), and no redirect is followed (egress.NoRedirect), since
// the transport would add the credential again on every hop, to whatever
// host a Location names. go-github's own WithAuthToken does the same, so
// its default redirect following is not kept. A 3xx comes back as a
// *github.RedirectionError naming the Location.
//
// go-github recognises a primary rate limit only on a 403 with
// x-ratelimit-remaining: 0; GitHub also answers 429, and 403 or 429 with
// retry-after for its secondary limits. RateLimited reads all of them from
// the response's headers, so the caller has one wait to honour.
package githubapi
