package mcp_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/mcp"
)

// accepter is a user who accepts every elicitation and remembers what it
// was asked.
type accepter struct {
	mu    sync.Mutex
	asked []string
}

func (a *accepter) Elicit(_ context.Context, req mcpgo.ElicitationRequest) (*mcpgo.ElicitationResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, req.Params.Message)
	return &mcpgo.ElicitationResult{ElicitationResponse: mcpgo.ElicitationResponse{
		Action: mcpgo.ElicitationResponseActionAccept, Content: map[string]any{},
	}}, nil
}

func (a *accepter) messages() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.asked...)
}

// A modern upstream's input_required result of a call (an elicitation, a
// sampling request) reaches the client session that made the call, as a
// legacy upstream's request does, and its answer continues the call.
// Covers IM-2.
func TestModernUpstreamInputRelayedToTheCallerStdio(t *testing.T) {
	url := relayGatewayOf(t, mcp.ModernStdioServerArgForTest)
	user := &accepter{}
	alice := &sampler{name: "alice"}
	c, _ := relayClientStream(t, url, "alice", false, client.WithElicitationHandler(user), client.WithSamplingHandler(alice))
	bob := &sampler{name: "bob"}
	relayClient(t, url, "bob", client.WithSamplingHandler(bob))

	if got := callTool(t, c, "ask", nil, nil); got != "action=accept state=st-1" {
		t.Errorf("ask = %q", got)
	}
	if m := user.messages(); len(m) != 1 || m[0] != "go ahead?" {
		t.Errorf("the user was asked %q", m)
	}
	if got := callTool(t, c, "sample", nil, nil); got != "sampled: from alice" {
		t.Errorf("sample = %q", got)
	}
	if p := bob.prompts(); len(p) != 0 {
		t.Errorf("bob was asked %q for alice's call", p)
	}
	if p := alice.prompts(); len(p) != 1 || !strings.Contains(p[0], "2+2") {
		t.Errorf("alice was asked %q", p)
	}
}
