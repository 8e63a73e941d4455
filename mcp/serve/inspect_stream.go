package serve

import (
	"bytes"
	"encoding/json"
	"sync"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/core/inspect"
)

// streamFilter applies the result rules to what an upstream sends during
// a call (IN-1): progress notifications and log messages. A notification
// cannot be an error or wait for an operator, so block and approve drop
// it; redact passes it with the spans replaced; flag passes it. What it
// found is listed with the call's result and audited with the call.
// Notifications of one call come from the upstream's reader while the
// call runs, hence the lock.
type streamFilter struct {
	pol *inspect.Policy

	mu    sync.Mutex
	found []inspect.Reported
}

// apply is the notification to pass on, or false to drop it.
func (f *streamFilter) apply(method string, params map[string]any) (map[string]any, bool) {
	var in string
	switch method {
	case string(mcpgo.MethodNotificationProgress):
		in = "progress"
	case string(mcpgo.MethodNotificationMessage):
		in = "log"
	default:
		return params, true
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return params, true
	}
	r, err := f.pol.CheckMessage(raw, in)
	if err != nil || len(r.Reported) == 0 {
		return params, true
	}
	f.mu.Lock()
	f.found = append(f.found, r.Reported...)
	f.mu.Unlock()
	switch r.Action {
	case inspect.ActionBlock, inspect.ActionApprove:
		return nil, false
	}
	red := r.Redactable(f.pol, inspect.Results)
	if len(red) == 0 {
		return params, true
	}
	out, err := inspect.RedactJSON(raw, red)
	if err != nil {
		return nil, false
	}
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(out))
	d.UseNumber()
	if d.Decode(&m) != nil {
		return nil, false
	}
	return m, true
}

// taken is what the filter found so far.
func (f *streamFilter) taken() []inspect.Reported {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]inspect.Reported(nil), f.found...)
}
