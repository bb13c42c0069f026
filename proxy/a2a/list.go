package a2a

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/internal/frames"
	"github.com/sidecar-dev/sidecar/rawjson"
)

// ListTasks' page sizes, as the specification gives them: 50 unless the
// caller asks, at most 100.
const (
	defaultPageSize = 50
	maxPageSize     = 100
)

// listFilter is what ListTasks asks: the tasks of one context, in one
// state, updated at or after a time, a page of them after a cursor.
type listFilter struct {
	contextID string
	state     string    // in 0.3's spelling (stateWorking …); "": any
	after     time.Time // zero: any
	pageSize  int
	cursor    *cursor // nil: the first page
	artifacts bool    // includeArtifacts
}

// cursor is where a page ended: the last task's update time and id, in
// the list's order (most recently updated first, then by id). The next
// page begins at the first task after it, so a task changing between
// pages moves but never repeats a page.
type cursor struct {
	updated time.Time
	id      string
}

// token is c as a page token: opaque to the caller.
func (c cursor) token() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.updated.UnixNano(), 10) + "." + c.id))
}

// readCursor reads a page token the door gave.
func readCursor(token string) (*cursor, error) {
	bad := fmt.Errorf("pageToken %q is no page token this agent gave", core.Clip(token))
	if len(token) > 2*maxID {
		return nil, bad
	}
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return nil, bad
	}
	nanos, id, ok := strings.Cut(string(b), ".")
	n, err := strconv.ParseInt(nanos, 10, 64)
	if !ok || err != nil || id == "" {
		return nil, bad
	}
	return &cursor{time.Unix(0, n), id}, nil
}

// before reports whether the task at k comes before the cursor, or is
// where it is, in the list's order: a more recent update, or the same and
// a greater id.
func (c cursor) before(k cursor) bool {
	if d := k.updated.Compare(c.updated); d != 0 {
		return d > 0
	}
	return k.id >= c.id
}

// states are the states ListTasks' status filter names, in 1.0's
// spelling, and the door's spelling of each; a state the door never
// reaches matches no task.
var states = map[string]string{
	"TASK_STATE_SUBMITTED": stateSubmitted, "TASK_STATE_WORKING": stateWorking,
	"TASK_STATE_COMPLETED": stateCompleted, "TASK_STATE_FAILED": stateFailed,
	"TASK_STATE_CANCELED": stateCanceled, "TASK_STATE_INPUT_REQUIRED": stateInputRequired,
	"TASK_STATE_REJECTED": "rejected", "TASK_STATE_AUTH_REQUIRED": stateAuthRequired,
}

// readListFilter reads ListTasks' params: {"contextId", "status",
// "pageSize", "pageToken", "statusTimestampAfter", "includeArtifacts",
// "historyLength", "tenant"}, each optional (listFilter.set).
func readListFilter(params json.RawMessage) (listFilter, error) {
	f := listFilter{pageSize: defaultPageSize}
	if len(params) == 0 || string(params) == "null" {
		return f, nil
	}
	if params[0] != '{' {
		return f, fmt.Errorf("params must be an object")
	}
	var err error
	rawjson.Members(params, func(key, value []byte) bool {
		name := rawjson.Key(key)
		text := string(value)
		if value[0] == '"' { // a string, or a number as ProtoJSON may write one ("10")
			if text, err = idString(name, value); err != nil {
				return false
			}
		}
		err = f.set(name, text)
		return err == nil
	})
	return f, err
}

// readListQuery reads ListTasks' parameters from the query of the
// HTTP+JSON binding's GET /tasks: the same names, as strings.
func readListQuery(q url.Values) (listFilter, error) {
	f := listFilter{pageSize: defaultPageSize}
	for name, values := range q {
		if len(values) != 1 {
			return f, fmt.Errorf("%s is given %d times", core.Clip(name), len(values))
		}
		if len(values[0]) > maxID {
			return f, fmt.Errorf("%s is longer than %d bytes", core.Clip(name), maxID)
		}
		if err := f.set(name, values[0]); err != nil {
			return f, err
		}
	}
	return f, nil
}

// set reads one ListTasks parameter, its value as text (a string's
// contents, a number's or a boolean's JSON). An unknown name is ignored,
// as ProtoJSON readers may; historyLength is read and has nothing to
// shorten: only a task whose agent asked keeps a history, its messages
// and questions (questions.go); tenant names no tenant this door tells
// apart.
func (f *listFilter) set(name, value string) error {
	var err error
	switch name {
	case "contextId":
		f.contextID = value
	case "status":
		if st, ok := states[value]; ok {
			f.state = st
		} else if value != "" && value != "TASK_STATE_UNSPECIFIED" {
			return fmt.Errorf("status %q is no TaskState", core.Clip(value))
		}
	case "pageSize":
		n, perr := strconv.Atoi(value)
		if perr != nil || n < 1 || n > maxPageSize {
			return fmt.Errorf("pageSize must be a whole number from 1 to %d", maxPageSize)
		}
		f.pageSize = n
	case "pageToken":
		if value != "" {
			f.cursor, err = readCursor(value)
		}
	case "statusTimestampAfter":
		if value != "" {
			if f.after, err = time.Parse(time.RFC3339Nano, value); err != nil {
				return fmt.Errorf("statusTimestampAfter %q is no RFC 3339 time", core.Clip(value))
			}
		}
	case "includeArtifacts":
		if f.artifacts, err = strconv.ParseBool(value); err != nil || value != "true" && value != "false" {
			return fmt.Errorf("includeArtifacts must be true or false")
		}
	case "historyLength":
		if n, perr := strconv.Atoi(value); perr != nil || n < 0 {
			return fmt.Errorf("historyLength must be a whole number, 0 or more")
		}
	}
	return err
}

// list is a page of owner's tasks that f matches, most recently updated
// first, each a copy safe to encode without the lock (without its
// artifact unless f asks for artifacts), the token of the next page (""
// on the last), and how many tasks match in all. A page with artifacts
// holds at most partLimit (limits.reply_bytes) bytes of them besides its
// first task's, so a page's answer is at most about as large as one
// task's: it may be shorter than pageSize. The store is locked to find
// the matches and to copy the page, not while they are sorted: calls go
// on meanwhile (a task changed since is listed as it is now, where it
// was; one forgotten since is left out).
func (s *store) list(owner core.Owner, f listFilter) (page []task, next string, total int) {
	type match struct {
		t   *task
		key cursor // its place in the list, as it was found
	}
	var found []match
	s.mu.Lock()
	for _, t := range s.order {
		if t.owner == owner && (f.contextID == "" || t.contextID == f.contextID) &&
			(f.state == "" || t.state == f.state) && (f.after.IsZero() || !t.updated.Before(f.after)) {
			found = append(found, match{t, cursor{t.updated, t.id}})
		}
	}
	s.mu.Unlock()
	slices.SortFunc(found, func(a, b match) int {
		if d := b.key.updated.Compare(a.key.updated); d != 0 {
			return d
		}
		return cmp.Compare(b.key.id, a.key.id)
	})
	total = len(found)
	if f.cursor != nil {
		i, _ := slices.BinarySearchFunc(found, *f.cursor, func(m match, c cursor) int {
			if c.before(m.key) {
				return -1
			}
			return 1
		})
		found = found[i:]
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var size int64
	for i, m := range found {
		if i == f.pageSize || f.artifacts && i > 0 && size+m.t.size > s.partLimit {
			return page, found[i-1].key.token(), total
		}
		switch {
		case s.tasks[m.key.id] != m.t: // forgotten since
		case f.artifacts:
			size += m.t.size
			page = append(page, m.t.clone())
		default:
			page = append(page, m.t.head())
		}
	}
	return page, "", total
}

// serveList answers ListTasks: a page of owner's tasks, {"tasks": […],
// "nextPageToken", "pageSize", "totalSize"} as 1.0 shapes it.
func (d *Door) serveList(ctx context.Context, v version, req request, owner core.Owner) *core.Answer {
	f, err := readListFilter(req.params)
	if err != nil {
		return answer(req, nil, &rpcError{codeInvalidParams, err.Error()})
	}
	page, next, total, err := d.listTasks(ctx, owner, f)
	if err != nil {
		return storeAnswer(req, err)
	}
	objs, texts := v.tasks(page)
	a := answer(req, listResult{objs, next, f.pageSize, total}, nil)
	if len(texts) > 0 && a.Body != nil {
		var b bytes.Buffer
		writeText(&b, a.Body, texts)
		a.Body = b.Bytes()
	}
	return a
}

// tasks are a ListTasks page's tasks as v shapes them, and the texts to
// write in place of their marks (writeText), in both bindings.
func (v version) tasks(page []task) ([]any, []*frames.Text) {
	objs := make([]any, len(page))
	var texts []*frames.Text
	for i := range page {
		objs[i] = v.task(&page[i])
		texts = append(texts, page[i].texts()...)
	}
	return objs, texts
}

// listResult is ListTasksResponse.
type listResult struct {
	Tasks         []any  `json:"tasks"`
	NextPageToken string `json:"nextPageToken"`
	PageSize      int    `json:"pageSize"`
	TotalSize     int    `json:"totalSize"`
}
