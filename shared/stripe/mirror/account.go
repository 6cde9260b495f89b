package mirror

import "strings"

// Key is the mirror's key of a Stripe object, and how every reader names
// one: the object's id for the platform's own objects (a platform event
// has no account: today's keys), "<account>/<id>" for a connected
// account's (Stripe Connect), so that the same id under two accounts
// (a customer id is unique only within its account) never shares a
// snapshot, an ordering guard or an entitlement. Stripe's ids never
// hold a "/".
func Key(account, id string) string {
	if account == "" {
		return id
	}
	return account + "/" + id
}

// SplitKey is Key's inverse: the account ("" for the platform's own) and
// the object's id.
func SplitKey(key string) (account, id string) {
	if a, rest, ok := strings.Cut(key, "/"); ok {
		return a, rest
	}
	return "", key
}
