// Package browser drives the operator console (internal/console) in
// Debian's Chromium, headless, from Go with chromedp, against make dev's
// stack: the pipeline of tools/devstack with a team effect of the test's
// own that fails until the test fixes it, and the console as make dev
// serves it (tools/devconsole). Events go in through the stack's gateway;
// the test filters the failed ones, replays one, redrives a dead-lettered
// message, checks the token is required and its cookie goes to no other
// local server, the keyboard and the phone width, and saves a screenshot
// of each step.
//
// Its test is built only with the browser tag: `make test-browser` runs it
// (installing chromium with apt-get when it runs as root and the browser
// is missing); `make test` does not, so that it needs no browser.
package browser
