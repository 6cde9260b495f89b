package stripefake

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// list answers GET /v1/events with Stripe's semantics.
func (s *Server) list(q url.Values, account string) (int, []byte) {
	lq, status, body := parseList(q, account)
	if status != 0 {
		return status, body
	}
	// Newest first. A cursor is a position in this order whether or not the
	// cursor's event matches the filters, as with Stripe.
	all := append([]stored(nil), s.events...)
	sort.Slice(all, func(i, j int) bool { return newer(all[i], all[j]) })
	var matched []stored
	for _, e := range all {
		if lq.match(e) {
			matched = append(matched, e)
		}
	}
	page, hasMore, status, body := s.page(lq, matched)
	if status != 0 {
		return status, body
	}
	return http.StatusOK, listBody(page, hasMore)
}

// listQuery is a GET /v1/events's page size, cursor and filter.
type listQuery struct {
	limit         int
	after, before string
	match         func(stored) bool
}

// badParameter is Stripe's answer to an invalid parameter.
func badParameter(msg, param string) (int, []byte) {
	return http.StatusBadRequest, errorBody("invalid_request_error", "parameter_invalid", msg, param)
}

// parseList reads a GET /v1/events's query for account; a status other
// than 0 is Stripe's answer to an invalid one, with body.
func parseList(q url.Values, account string) (lq listQuery, status int, body []byte) {
	lq.limit = DefaultLimit
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxLimit {
			status, body = badParameter("Invalid limit: must be between 1 and 100", "limit")
			return lq, status, body
		}
		lq.limit = n
	}
	types := typesOf(q)
	if len(types) > MaxTypes {
		status, body = badParameter("Invalid array: types can have at most 20 elements", "types")
		return lq, status, body
	}
	single := q.Get("type")
	if single != "" && len(types) > 0 {
		status, body = badParameter("You may pass either `type` or `types`, but not both.", "types")
		return lq, status, body
	}
	lq.after, lq.before = q.Get("starting_after"), q.Get("ending_before")
	if lq.after != "" && lq.before != "" {
		status, body = badParameter("You may only specify one of these parameters: starting_after, ending_before.", "starting_after")
		return lq, status, body
	}
	bounds, status, body := createdBounds(q)
	if status != 0 {
		return lq, status, body
	}
	lq.match = matcher(account, bounds, types, single)
	return lq, 0, nil
}

// createdBounds reads created, created[gt], [gte], [lt] and [lte].
func createdBounds(q url.Values) (bounds []func(int64) bool, status int, body []byte) {
	for _, op := range []string{"", "gt", "gte", "lt", "lte"} {
		key := "created"
		if op != "" {
			key += "[" + op + "]"
		}
		v := q.Get(key)
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			status, body = badParameter("Invalid integer: "+v, key)
			return nil, status, body
		}
		switch op {
		case "":
			bounds = append(bounds, func(c int64) bool { return c == n })
		case "gt":
			bounds = append(bounds, func(c int64) bool { return c > n })
		case "gte":
			bounds = append(bounds, func(c int64) bool { return c >= n })
		case "lt":
			bounds = append(bounds, func(c int64) bool { return c < n })
		case "lte":
			bounds = append(bounds, func(c int64) bool { return c <= n })
		}
	}
	return bounds, 0, nil
}

// matcher matches the events of account within bounds, of one of types,
// or of single (a type, or a prefix ending in *).
func matcher(account string, bounds []func(int64) bool, types []string, single string) func(stored) bool {
	typeSet := map[string]bool{}
	for _, t := range types {
		typeSet[t] = true
	}
	return func(e stored) bool {
		if e.account != account {
			return false
		}
		for _, b := range bounds {
			if !b(e.created) {
				return false
			}
		}
		switch {
		case len(typeSet) > 0:
			return typeSet[e.typ]
		case strings.HasSuffix(single, "*"):
			return strings.HasPrefix(e.typ, strings.TrimSuffix(single, "*"))
		case single != "":
			return e.typ == single
		}
		return true
	}
}

// page is lq's page of matched (newest first): after or before its
// cursor, or the first; a status other than 0 answers an unknown cursor.
func (s *Server) page(lq listQuery, matched []stored) (page []stored, hasMore bool, status int, body []byte) {
	cursorOf := func(id string) (stored, bool) {
		i, ok := s.byID[id]
		if !ok {
			return stored{}, false
		}
		return s.events[i], true
	}
	switch {
	case lq.after != "":
		c, ok := cursorOf(lq.after)
		if !ok {
			return nil, false, http.StatusNotFound, errorBody("invalid_request_error", "resource_missing", fmt.Sprintf("No such event: '%s'", lq.after), "starting_after")
		}
		var rest []stored
		for _, e := range matched {
			if newer(c, e) {
				rest = append(rest, e)
			}
		}
		page, hasMore = head(rest, lq.limit)
	case lq.before != "":
		c, ok := cursorOf(lq.before)
		if !ok {
			return nil, false, http.StatusNotFound, errorBody("invalid_request_error", "resource_missing", fmt.Sprintf("No such event: '%s'", lq.before), "ending_before")
		}
		// The limit events just newer than the cursor, still newest first.
		var rest []stored
		for _, e := range matched {
			if newer(e, c) {
				rest = append(rest, e)
			}
		}
		if len(rest) > lq.limit {
			page, hasMore = rest[len(rest)-lq.limit:], true
		} else {
			page = rest
		}
	default:
		page, hasMore = head(matched, lq.limit)
	}
	return page, hasMore, 0, nil
}

// listBody is a list object of page, as Stripe formats it.
func listBody(page []stored, hasMore bool) []byte {
	var b bytes.Buffer
	b.WriteString("{\n  \"object\": \"list\",\n  \"data\": [")
	for i, e := range page {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n")
		b.Write(e.raw)
	}
	fmt.Fprintf(&b, "\n  ],\n  \"has_more\": %t,\n  \"url\": \"/v1/events\"\n}", hasMore)
	return b.Bytes()
}

func newer(a, b stored) bool {
	if a.created != b.created {
		return a.created > b.created
	}
	return a.seq > b.seq
}

func head(es []stored, limit int) ([]stored, bool) {
	if len(es) > limit {
		return es[:limit], true
	}
	return es, false
}

// typesOf reads types[] in any of the encodings Stripe accepts: types[]=a,
// types[0]=a&types[1]=b, in index order.
func typesOf(q url.Values) []string {
	type indexed struct {
		i int
		v string
	}
	var out []indexed
	for k, vs := range q {
		rest, ok := strings.CutPrefix(k, "types[")
		if !ok || !strings.HasSuffix(rest, "]") {
			continue
		}
		idx := strings.TrimSuffix(rest, "]")
		i := -1
		if idx != "" {
			n, err := strconv.Atoi(idx)
			if err != nil {
				continue
			}
			i = n
		}
		for _, v := range vs {
			out = append(out, indexed{i, v})
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].i < out[b].i })
	types := make([]string, len(out))
	for i, t := range out {
		types[i] = t.v
	}
	return types
}
