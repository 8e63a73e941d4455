package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/core"
)

// Over Streamable HTTP, the 2026-07-28 revision mirrors the arguments a
// tool's input schema marks with x-mcp-header into Mcp-Param-<Name>
// headers, and a server that checks them refuses a call whose headers are
// missing or differ from the body (-32020, HeaderMismatch). toolgate keeps
// where each tool's marked parameters are from the upstream's last
// tools/list, across reconnects, and adds the headers to every tools/call
// it sends there, the retries of an input_required call included (IM-2).

// paramHeaders holds, per tool of a modern HTTP upstream, the parameters
// its input schema mirrors into headers. Safe for concurrent use.
type paramHeaders struct {
	mu     sync.Mutex
	byTool map[string][]mcpgo.ParamHeaderBinding
}

// of returns tool's bindings; nil for a tool with none.
func (p *paramHeaders) of(tool string) []mcpgo.ParamHeaderBinding {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.byTool[tool]
}

func (p *paramHeaders) set(m map[string][]mcpgo.ParamHeaderBinding) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.byTool = m
}

// modernTools is what ListTools returns of a modern upstream's tools: over
// HTTP, a tool whose x-mcp-header annotations break the revision's rules
// is left out with a warning, as the revision requires of a client, so
// that one bad definition does not cost the others; the rest have their
// bindings recorded for their calls. Any other upstream's tools are
// returned as they are.
func (b *base) modernTools(s *session, tools []core.RemoteTool) []core.RemoteTool {
	if s.modern == nil || !s.modern.http {
		return tools
	}
	kept := tools[:0]
	bindings := map[string][]mcpgo.ParamHeaderBinding{}
	for _, t := range tools {
		if len(t.InputSchema) > 0 {
			tool := &mcpgo.Tool{Name: t.Name, RawInputSchema: t.InputSchema}
			if err := mcpgo.ValidateParamHeaderAnnotations(tool); err != nil {
				b.log.Warn("tool left out: invalid x-mcp-header annotation", "tool", t.Name, "err", err)
				continue
			}
			if bs := mcpgo.ExtractParamHeaderBindings(tool); len(bs) > 0 {
				// In a fixed order, for bindingsChanged.
				slices.SortFunc(bs, func(x, y mcpgo.ParamHeaderBinding) int { return strings.Compare(x.Header, y.Header) })
				bindings[t.Name] = bs
			}
		}
		kept = append(kept, t)
	}
	b.mod.params.set(bindings)
	return kept
}

// errHeaderValue is an argument that no Mcp-Param header can carry.
var errHeaderValue = errors.New("cannot be carried in its header")

// add sets on h the Mcp-Param headers of a tools/call whose params are
// params. An argument that a header cannot carry (a fraction, an integer
// beyond ±(2^53-1), an object or array) is an error: the server would
// refuse the call, so it is not sent. The error names the argument and the
// header, never the value, which may be secret.
func (p *paramHeaders) add(h http.Header, params json.RawMessage) error {
	var call struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(params, &call) != nil {
		return nil
	}
	bindings := p.of(call.Name)
	if len(bindings) == 0 {
		return nil
	}
	var args map[string]json.RawMessage
	if json.Unmarshal(call.Arguments, &args) != nil || args == nil {
		// Not an object: there is no value at any path, and the server
		// expects no header.
		return nil
	}
	for _, bd := range bindings {
		raw, ok := argumentAt(args, bd.Path)
		if !ok || string(raw) == "null" {
			// The revision: no value, no header.
			continue
		}
		v, err := headerValue(raw)
		if err != nil {
			return fmt.Errorf("argument %q: %w %s: %s", strings.Join(bd.Path, "."), errHeaderValue, bd.HeaderName(), err)
		}
		h.Set(bd.HeaderName(), v)
	}
	return nil
}

// argumentAt is the value at path in args, following properties only, as
// the annotation's path does.
func argumentAt(args map[string]json.RawMessage, path []string) (json.RawMessage, bool) {
	if len(path) == 0 {
		return nil, false
	}
	cur, ok := args[path[0]]
	for _, name := range path[1:] {
		if !ok {
			return nil, false
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(cur, &obj) != nil {
			return nil, false
		}
		cur, ok = obj[name]
	}
	return cur, ok
}

// maxHeaderInteger is the largest integer a header carries: the
// revision's JavaScript-safe range, in which the server compares it.
const maxHeaderInteger = 1<<53 - 1

// headerValue encodes one argument as the revision says: a string as it
// is, or base64 in the =?base64?…?= wrapper when it is not plain visible
// ASCII (mcp-go's encoder, so that its servers' decoder agrees); an
// integer in decimal; a boolean as true or false.
func headerValue(raw json.RawMessage) (string, error) {
	var v any
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", errors.New("the string does not decode")
		}
		v = s
	case 't', 'f':
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return "", errors.New("the value does not decode")
		}
		v = b
	case '{':
		return "", errors.New("it is an object, not a string, integer or boolean")
	case '[':
		return "", errors.New("it is an array, not a string, integer or boolean")
	default:
		f, err := strconv.ParseFloat(string(raw), 64)
		switch {
		case err != nil && !errors.Is(err, strconv.ErrRange):
			return "", errors.New("the number does not decode")
		case err != nil || math.Abs(f) > maxHeaderInteger:
			return "", errors.New("the integer is beyond ±(2^53-1)")
		case f != math.Trunc(f):
			return "", errors.New("the number is not an integer")
		}
		v = int64(f)
	}
	s, ok := mcpgo.EncodeHeaderValue(v)
	if !ok {
		return "", errors.New("the value has no header form")
	}
	return s, nil
}

// bindingsChanged is for a tools/call that a modern HTTP upstream refused
// with HeaderMismatch (-32020): the tool's schema may have changed since
// it was listed. It lists the tools again, as the revision advises, and
// reports whether the tool's bindings changed, so that the call is sent
// again with the new headers. That is no second call (IM-29): a server
// checks the headers before it runs anything.
func (b *base) bindingsChanged(ctx context.Context, s *session, tool string, err error) bool {
	var rpc *core.RPCError
	if s.modern == nil || !s.modern.http || !errors.As(err, &rpc) || rpc.Code != mcpgo.HEADER_MISMATCH {
		return false
	}
	before := b.mod.params.of(tool)
	if _, lerr := b.ListTools(ctx); lerr != nil {
		return false
	}
	return !slices.EqualFunc(before, b.mod.params.of(tool), func(x, y mcpgo.ParamHeaderBinding) bool {
		return x.Header == y.Header && slices.Equal(x.Path, y.Path)
	})
}
