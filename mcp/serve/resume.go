package serve

import (
	"context"
	"errors"
	"net/http"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/mcp/session"
)

// Resumable and parked sessions (SV-2, OP-5): a sealed session id carries
// what a replica needs to continue the session, here after a restart or
// on a replica that did not open it, and an idle session is parked and
// made again from its id. Package session holds both (seal.go, table.go);
// here is what they answer over HTTP.

// DefaultSessionParkAfter is how long a session is idle before it is
// parked, when EndpointOptions.SessionParkAfter is 0. A session calling
// more often than that is never parked; one calling less often pays one
// wake per call, small beside the call.
const DefaultSessionParkAfter = time.Second

// adopt continues, on this replica, a session opened elsewhere (or before a
// restart) for the request's actor (session.Table.Adopt), and reports
// whether the request was answered: the shutdown or a cap refused it.
func (e *Endpoint) adopt(w http.ResponseWriter, r *http.Request, body []byte, id string, actor core.Actor) (answered bool) {
	adopted, err := e.ids.Adopt(r.Context(), id, actor.ID, actor.Tenant, e.opts.Limits)
	var limit *session.LimitError
	switch {
	case errors.Is(err, session.ErrClosed):
		refuseClosed(w, r, body)
		return true
	case errors.As(err, &limit):
		refuseSession(w, r, body, err)
		return true
	case err != nil && !errors.Is(err, session.ErrNotAdopted):
		e.opts.Logger.Warn("continuing a session failed", "endpoint", e.opts.Path, "actor", actor.ID, "err", err)
	case adopted:
		e.opts.Logger.Info("session continued", "endpoint", e.opts.Path, "actor", actor.ID)
	}
	return false
}

// wake makes parked session id again from its seal, and returns the list
// changes it missed (notification methods), for the caller to tell it of:
// on a POST's answer ahead of it, or queued for its GET stream. false: the
// session has ended, or could not be made again and ends.
func (e *Endpoint) wake(id string) (owed []string, ok bool) {
	missed, ok, err := e.ids.Wake(context.Background(), id)
	if err != nil {
		e.opts.Logger.Warn("waking a parked session failed; it ends", "endpoint", e.opts.Path, "err", err)
	}
	if missed.Tools != 0 {
		owed = append(owed, mcpgo.MethodNotificationToolsListChanged)
	}
	if missed.Resources != 0 {
		owed = append(owed, mcpgo.MethodNotificationResourcesListChanged)
	}
	if missed.Prompts != 0 {
		owed = append(owed, mcpgo.MethodNotificationPromptsListChanged)
	}
	return owed, ok
}

// tellOwed queues the notifications a woken session missed, for its GET
// stream.
func (e *Endpoint) tellOwed(id string, owed []string) {
	for _, method := range owed {
		_ = e.mcp.SendNotificationToSpecificClient(id, method, nil)
	}
}
