package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/confirm"
)

// errDeclined: the user said no when asked to confirm (CF-6).
var errDeclined = errors.New("the user declined the call")

// sessionElicitation is the elicitation capability the calling legacy
// session's client declared; nil for none, or without a session.
func sessionElicitation(ctx context.Context) *mcpgo.ElicitationCapability {
	if s, ok := server.ClientSessionFromContext(ctx).(*legacySession); ok {
		return s.GetClientCapabilities().Elicitation
	}
	return nil
}

// confirmByElicitation is CF-6: where the client can ask its user, the
// gate's preview becomes a question and an accepted answer confirms in the
// same call. preview is the gate's answer to the first call. Without an
// answer (the client failed to ask), the preview is returned as it is and
// the two-call protocol applies. intent is the call's, as for Gate.Call.
func (e *Endpoint) confirmByElicitation(ctx context.Context, actor core.Actor, c *core.ToolCall, preview core.Result, intent confirm.Intent) (core.Result, error) {
	name := c.Tool.Name
	var body struct {
		StructuredContent confirm.Preview `json:"structuredContent"`
	}
	if json.Unmarshal(preview.JSON, &body) != nil || body.StructuredContent.ConfirmToken == "" {
		return preview, nil
	}
	p := body.StructuredContent
	params := confirmQuestion(name, p)
	var answer struct {
		Action  mcpgo.ElicitationResponseAction `json:"action"`
		Content struct {
			Confirm bool `json:"confirm"`
		} `json:"content"`
	}
	if err := e.elicit(ctx, params, &answer); err != nil {
		e.opts.Logger.Debug("elicitation failed; answering with the preview", "tool", name, "err", err)
		return preview, nil
	}
	if answer.Action != mcpgo.ElicitationResponseActionAccept || !answer.Content.Confirm {
		return core.Result{}, &confirm.RefusedError{Err: errDeclined, Text: "Not run: " + errDeclined.Error()}
	}
	// The same parsed call, now confirmed with the token its preview
	// issued: validation and the canonical arguments are not redone.
	c.Confirm, c.Token = true, p.ConfirmToken
	return e.opts.Gate.Call(ctx, e.opts.Registry, actor, c, intent)
}

// elicit asks the calling client and decodes its answer into out, as an
// upstream's request is asked (downstream.request): the call has a legacy
// session, so the question goes on the call's own stream.
func (e *Endpoint) elicit(ctx context.Context, params mcpgo.ElicitationParams, out any) error {
	d := downstreamFrom(ctx)
	if d == nil {
		return errNoOneToAsk
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return err
	}
	answer, err := d.request(ctx, string(mcpgo.MethodElicitationCreate), raw)
	if err != nil {
		return err
	}
	if raw, err = json.Marshal(answer); err != nil {
		return err
	}
	return json.Unmarshal(raw, out)
}

// confirmQuestion is the elicitation that asks the user to confirm the call
// a preview describes (CF-6), on every era alike.
func confirmQuestion(name string, p confirm.Preview) mcpgo.ElicitationParams {
	return mcpgo.ElicitationParams{
		Message: fmt.Sprintf("%s\n\nRun %s with %s?", p.Preview, name, p.Call.Arguments),
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"confirm": map[string]any{"type": "boolean", "title": "Run this call", "description": "Runs the call once; nothing runs otherwise."},
			},
			"required": []string{"confirm"},
		},
	}
}
