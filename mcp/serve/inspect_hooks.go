package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/confirm"
	"github.com/toolgate/toolgate/core/inspect"
)

// Hook is an external guard (IN-4): each call in its directions is POSTed
// to URL, and the answer's verdict applies.
type Hook struct {
	URL        string
	Arguments  bool // called for arguments, before the upstream
	Results    bool // called for results, before the client
	Timeout    time.Duration
	FailAllow  bool // a guard that fails lets the call pass; else it is refused
	Headers    map[string]string
	HTTPClient *http.Client // nil: a client of its own without redirects
}

// HookRequest is what a guard receives (docs/security.md#external-guards).
type HookRequest struct {
	Direction string          `json:"direction"` // "arguments" or "result"
	Tool      string          `json:"tool"`
	Upstream  string          `json:"upstream,omitempty"`
	Endpoint  string          `json:"endpoint"`
	Actor     HookActor       `json:"actor"`
	Content   json.RawMessage `json:"content"` // the arguments object, or the CallToolResult
}

// HookActor names who calls; never their credential.
type HookActor struct {
	ID     string `json:"id"`
	Tenant string `json:"tenant,omitempty"`
}

// HookVerdict is a guard's answer.
type HookVerdict struct {
	Verdict    string          `json:"verdict"` // allow, redact, block, approve
	Reason     string          `json:"reason,omitempty"`
	Redactions []HookRedaction `json:"redactions,omitempty"`
}

// HookRedaction is one span to replace: a JSON pointer to a string of
// the content and byte offsets into it.
type HookRedaction struct {
	Path     string `json:"path"`
	Start    int    `json:"start"`
	End      int    `json:"end"`
	Detector string `json:"detector,omitempty"`
}

// HookType is the finding type of what a guard redacted or asked about.
const HookType inspect.Type = "hook"

// maxHookAnswer bounds a guard's answer read.
const maxHookAnswer = 1 << 20

var errHookAnswer = errors.New("the guard's answer is not a verdict")

// ask POSTs req to the hook and reads its verdict within its timeout.
func (h *Hook) ask(ctx context.Context, req HookRequest) (HookVerdict, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return HookVerdict{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, h.Timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(body))
	if err != nil {
		return HookVerdict{}, err
	}
	hr.Header.Set("Content-Type", "application/json")
	for k, v := range h.Headers {
		hr.Header.Set(k, v)
	}
	client := h.HTTPClient
	if client == nil {
		client = hookClient
	}
	resp, err := client.Do(hr)
	if err != nil {
		return HookVerdict{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return HookVerdict{}, fmt.Errorf("the guard answered HTTP %d", resp.StatusCode)
	}
	var v HookVerdict
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxHookAnswer)).Decode(&v); err != nil {
		return HookVerdict{}, errHookAnswer
	}
	switch v.Verdict {
	case "allow", "redact", "block", "approve":
		return v, nil
	}
	return HookVerdict{}, errHookAnswer
}

// hookClient follows no redirect: a guard's URL is where content goes,
// and nowhere else.
var hookClient = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// hookHost names a guard in texts: its host, never its path or query
// (which may carry a key).
func hookHost(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Host
	}
	return "the guard"
}

// runHooks asks each hook of direction d about content, in order, and
// applies its verdict: the content (redacted) to go on with, or an error
// refusing the call. An approve verdict waits for an operator.
func (e *Endpoint) runHooks(ctx context.Context, actor core.Actor, c *core.ToolCall, hooks []Hook, d inspect.Direction, content json.RawMessage, found *[]inspect.Reported) (json.RawMessage, error) {
	for i := range hooks {
		h := &hooks[i]
		if d == inspect.Arguments && !h.Arguments || d == inspect.Results && !h.Results {
			continue
		}
		v, err := h.ask(ctx, HookRequest{Direction: d.String(), Tool: c.Tool.Name, Upstream: c.Tool.Source, Endpoint: e.opts.Path,
			Actor: HookActor{ID: actor.ID, Tenant: actor.Tenant}, Content: content})
		if err != nil {
			// The error may carry the URL; the log names the host only.
			e.opts.Logger.Warn("an external guard failed", "guard", hookHost(h.URL), "tool", c.Tool.Name, "allowed", h.FailAllow, "err", hookErrorKind(err))
			if h.FailAllow {
				continue
			}
			return nil, e.hookRefusal(d, fmt.Sprintf("the external guard at %s did not answer", hookHost(h.URL)))
		}
		why := fmt.Sprintf("the external guard at %s", hookHost(h.URL))
		if v.Reason != "" {
			why += " (" + truncate(v.Reason, 200) + ")"
		}
		switch v.Verdict {
		case "block":
			*found = append(*found, inspect.Reported{Type: HookType, Detector: hookHost(h.URL), Action: inspect.ActionBlock, In: d.String()})
			return nil, e.hookRefusal(d, why+" refused it")
		case "approve":
			*found = append(*found, inspect.Reported{Type: HookType, Detector: hookHost(h.URL), Action: inspect.ActionApprove, In: d.String()})
			if err := e.waitOperator(ctx, actor, concealedCall(c, nil), why+" asked for an operator"); err != nil {
				return nil, err
			}
		case "redact":
			var fs []inspect.Finding
			for _, r := range v.Redactions {
				det := r.Detector
				if det == "" {
					det = "guard"
				}
				fs = append(fs, inspect.Finding{Type: HookType, Detector: det, Path: r.Path, Start: r.Start, End: r.End})
				*found = append(*found, inspect.Reported{Type: HookType, Detector: det, Path: r.Path, Action: inspect.ActionRedact, In: d.String()})
			}
			red, err := inspect.RedactJSON(content, fs)
			if err != nil {
				return nil, e.hookRefusal(d, why+" asked for a redaction that could not be made")
			}
			content = red
		}
	}
	return content, nil
}

func (e *Endpoint) hookRefusal(d inspect.Direction, why string) error {
	if d == inspect.Arguments {
		return &confirm.RefusedError{Err: ErrInspectBlocked, Text: "Not run: " + why + "; the call was not sent"}
	}
	return &resultBlockedError{text: "Blocked: " + why}
}

// hookErrorKind is a guard failure for the log: its kind, not its text,
// which may quote the URL.
func hookErrorKind(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, errHookAnswer):
		return "bad answer"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return "unreachable"
	}
	return "failed"
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
