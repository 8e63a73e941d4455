package mcp_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

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

// A modern upstream logs a call at the calling session's level (debug when
// it set none), and its progress and log messages reach that session only,
// under the session's own progress token. Covers IM-2.
func TestModernUpstreamProgressAndLogsReachTheCallerStdio(t *testing.T) {
	url := relayGatewayOf(t, mcp.ModernStdioServerArgForTest)
	a, aNotes := relayClient(t, url, "alice")
	b, bNotes := relayClient(t, url, "bob")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.SetLevel(ctx, mcpgo.SetLevelRequest{Params: mcpgo.SetLevelParams{Level: mcpgo.LoggingLevelError}}); err != nil {
		t.Fatal(err)
	}
	if got := callTool(t, a, "chatty", nil, "alice-token"); got != "chatted" {
		t.Fatalf("alice's result = %q", got)
	}
	progress := aNotes.of("notifications/progress")
	if len(progress) != 3 {
		t.Fatalf("alice got %d progress notifications, want 3: %v", len(progress), progress)
	}
	for i, p := range progress {
		if p["progressToken"] != "alice-token" || fmt.Sprint(p["progress"]) != fmt.Sprint(i+1) {
			t.Errorf("progress %d = %v", i, p)
		}
	}
	if got := logData(aNotes.of("notifications/message")); got != "message debug,message info,message error" {
		t.Errorf("alice's log messages = %q", got)
	}
	if got := callTool(t, b, "chatty", nil, nil); got != "chatted" {
		t.Fatalf("bob's result = %q", got)
	}
	if got := logData(bNotes.of("notifications/message")); got != "message error" {
		t.Errorf("bob's log messages at level error = %q", got)
	}
	if n := len(aNotes.of("notifications/message")); n != 3 {
		t.Errorf("alice got %d messages after bob's call, want still 3", n)
	}
}

func logData(msgs []map[string]any) string {
	var out []string
	for _, m := range msgs {
		out = append(out, fmt.Sprint(m["data"]))
	}
	return strings.Join(out, ",")
}
