package gateway_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/config"
)

// messagesGatewayYAML is gatewayYAML with the given lines under
// gateway.confirm.messages.
func messagesGatewayYAML(store string, messages []string, upstreams ...string) string {
	y := gatewayYAML(store, upstreams...)
	if len(messages) == 0 {
		return y
	}
	block := "    secret: ${SECRET}\n    messages:\n      " + strings.Join(messages, "\n      ") + "\n"
	return strings.Replace(y, "    secret: ${SECRET}\n", block, 1)
}

// argMarker is the value of the note the tests create: no message may
// carry it.
const argMarker = "ARGVALUE-d41e-private-note"

// previewNote previews notes_create_note and returns the preview's message
// and token; the message must not carry the argument's value.
func previewNote(t *testing.T, ctx context.Context, s *session) (message, token, expires string) {
	t.Helper()
	res := call(t, ctx, s, "notes_create_note", map[string]any{"text": argMarker})
	sc, _ := res.StructuredContent.(map[string]any)
	message, _ = sc["preview"].(string)
	token, _ = sc["confirmToken"].(string)
	expires, _ = sc["expiresAt"].(string)
	if res.IsError || message == "" || token == "" {
		t.Fatalf("preview: %+v", res)
	}
	if strings.Contains(message, argMarker) || strings.Contains(message, token) {
		t.Errorf("the preview message carries the argument or the token: %q", message)
	}
	return message, token, expires
}

// confirmNote sends the confirming call with token and returns its result.
func confirmNote(t *testing.T, ctx context.Context, s *session, token string) *mcpgo.CallToolResult {
	t.Helper()
	return call(t, ctx, s, "notes_create_note", map[string]any{"text": argMarker, "confirm": true, "confirmToken": token})
}

// CF-7, CF-2, CF-4: the texts gateway.confirm.messages configures reach a
// real MCP client over HTTP: the preview with {tool}, {upstream},
// {expires} and {minutes} filled, and the second use of a token; neither
// carries the argument's value or the token.
func TestConfiguredConfirmMessagesReachTheClient(t *testing.T) {
	ctx := testCtx(t)
	notes := serveDemo(t, "notes")
	store := filepath.Join(t.TempDir(), "toolgate.db")
	_, url := startReloadable(t, messagesGatewayYAML(store, []string{
		`preview: "Nothing has run yet. To {tool} on {upstream}, call again with confirm: true and the token before {expires} ({minutes} minutes)."`,
		`used: "{tool} on {upstream}: this confirmation was already used; preview again."`,
	}, upstreamYAML("notes", notes, true)), &logBuffer{})
	s := connect(t, ctx, url, testKey)
	waitServed(t, ctx, s, []string{"notes_create_note"}, nil)

	message, token, expires := previewNote(t, ctx, s)
	if want := "Nothing has run yet. To notes_create_note on notes, call again with confirm: true and the token before " + expires + " (15 minutes)."; message != want {
		t.Errorf("preview message:\n got %q\nwant %q", message, want)
	}
	if res := call(t, ctx, s, "notes_side_effects", nil); resultText(res) != "0" {
		t.Fatalf("side effects after the preview: %q", resultText(res))
	}
	if res := confirmNote(t, ctx, s, token); res.IsError || !strings.Contains(resultText(res), "note created") {
		t.Fatalf("confirm: %+v", res)
	}
	res := confirmNote(t, ctx, s, token)
	if want := "notes_create_note on notes: this confirmation was already used; preview again."; !res.IsError || resultText(res) != want {
		t.Errorf("second use: isError=%v %q, want %q", res.IsError, resultText(res), want)
	}
	if res := call(t, ctx, s, "notes_side_effects", nil); resultText(res) != "1" {
		t.Errorf("side effects: %q, want 1", resultText(res))
	}
}

// CF-7, OP-8: a reload replaces the texts for the next answer, in the
// session that was open before it, and reports the keys it changed; a key
// taken out brings the built-in text back; a reload with a message it
// refuses names the key and leaves the texts in use.
func TestReloadConfirmMessages(t *testing.T) {
	ctx := testCtx(t)
	notes := serveDemo(t, "notes")
	store := filepath.Join(t.TempDir(), "toolgate.db")
	up := upstreamYAML("notes", notes, true)
	log := &logBuffer{}
	g, url := startReloadable(t, messagesGatewayYAML(store, []string{`used: "first: already used"`}, up), log)
	s := connect(t, ctx, url, testKey)
	waitServed(t, ctx, s, []string{"notes_create_note"}, nil)
	session := s.GetSessionId()

	spend := func() (preview, second string) {
		t.Helper()
		preview, token, _ := previewNote(t, ctx, s)
		if res := confirmNote(t, ctx, s, token); res.IsError {
			t.Fatalf("confirm: %+v", res)
		}
		res := confirmNote(t, ctx, s, token)
		if !res.IsError {
			t.Fatalf("second use ran: %+v", res)
		}
		return preview, resultText(res)
	}
	const builtInPreview = "Preview only: nothing has run. To run notes_create_note on upstream notes,"
	if p, used := spend(); used != "first: already used" || !strings.HasPrefix(p, builtInPreview) {
		t.Fatalf("before the reload: preview %q, used %q", p, used)
	}

	rep, err := g.Reload(ctx, loadConfig(t, messagesGatewayYAML(store, []string{
		`used: "second: {tool} was already confirmed"`,
		`preview: "Reloaded preview of {tool} on {upstream}"`,
	}, up)))
	if err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if want := []string{"gateway.confirm.messages.preview", "gateway.confirm.messages.used"}; !slices.Equal(rep.ConfirmMessages, want) || len(rep.Restart) != 0 || !rep.Changed() {
		t.Errorf("report: %+v, want confirm messages %q and nothing for a restart", rep, want)
	}
	if p, used := spend(); used != "second: notes_create_note was already confirmed" || p != "Reloaded preview of notes_create_note on notes" {
		t.Errorf("after the reload: preview %q, used %q", p, used)
	}
	if !strings.Contains(log.String(), `"confirmMessages":["gateway.confirm.messages.preview","gateway.confirm.messages.used"]`) {
		t.Errorf("the reload's log does not name the messages:\n%s", log)
	}
	if strings.Contains(log.String(), "was already confirmed") {
		t.Errorf("the log carries a message's text:\n%s", log)
	}

	// A message the config refuses: the reload fails naming the key, and
	// the texts in use stay.
	bad := loadConfig(t, messagesGatewayYAML(store, []string{`used: "third"`}, up))
	bad.Gateway.Confirm.Messages.Used = new(string)
	*bad.Gateway.Confirm.Messages.Used = "third {foo}"
	_, err = g.Reload(ctx, bad)
	var ve *config.ValidationErrors
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), "gateway.confirm.messages.used: unknown placeholder {foo}") {
		t.Fatalf("Reload with an unknown placeholder: %v", err)
	}
	if _, used := spend(); used != "second: notes_create_note was already confirmed" {
		t.Errorf("after a refused reload: used %q", used)
	}

	// Taken out of the config: the built-in texts again.
	if _, err := g.Reload(ctx, loadConfig(t, messagesGatewayYAML(store, nil, up))); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if p, used := spend(); used != "Not run: this confirmation was already used; preview again to get a new one" || !strings.HasPrefix(p, builtInPreview) {
		t.Errorf("after removing the messages: preview %q, used %q", p, used)
	}
	if s.GetSessionId() != session {
		t.Errorf("the session changed across the reloads: %q → %q", session, s.GetSessionId())
	}
}
