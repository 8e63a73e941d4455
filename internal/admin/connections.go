package admin

import (
	"context"
	"errors"
	"net/http"

	"github.com/toolgate/toolgate/core"
)

// Routes of upstream connections (UI-2, UI-3).
var (
	RouteConnections      = route("GET /v1/connections", "", "")                                                    // → []core.Connection (never a token)
	RouteRevokeConnection = route("DELETE /v1/connections/{id}", core.ActionRevokeConnection, "connections revoke") // → core.Connection, as it was
	RouteConnectShared    = route("POST /v1/upstreams/{name}/connect", core.ActionConnectShared, "connect")         // → ConnectURL: where an operator connects a shared upstream's account
	RouteRekeyConnections = route("POST /v1/connections/rekey", core.ActionRekeyConnections, "connections rekey")   // → RekeyResult: re-seal with gateway.credentialsKey
)

// CodeUnknownConnection: no connection of that id (404).
const CodeUnknownConnection = "unknown_connection"

// ConnectURL is where a connection is made.
type ConnectURL struct {
	Upstream string `json:"upstream"`
	URL      string `json:"url"`
}

// RekeyResult is what a rekey did.
type RekeyResult struct {
	Resealed   int      `json:"resealed"`
	Current    int      `json:"current"`
	Unsealable []string `json:"unsealable,omitempty"`
}

// Connections is a Backend whose gateway has OAuth upstreams; found by type
// assertion. Revoke and Rekey are recorded as the operator's.
type Connections interface {
	Connections(ctx context.Context) ([]core.Connection, error)
	RevokeConnection(ctx context.Context, id, operator string) (core.Connection, error)
	SharedConnectURL(ctx context.Context, upstream, operator string) (string, error)
	RekeyConnections(ctx context.Context, operator string) (RekeyResult, error)
}

// ErrNoOAuth: the gateway has no OAuth upstream.
var ErrNoOAuth = errors.New("this gateway has no oauth upstream")

func (s *Server) connectionRoutes() {
	handle := func(r Route, h handler) { s.mux.Handle(r.Pattern, opHandler{s: s, h: h}) }
	with := func(h func(w http.ResponseWriter, r *http.Request, op string, c Connections)) handler {
		return func(w http.ResponseWriter, r *http.Request, op string) {
			c, ok := s.backend.(Connections)
			if !ok {
				s.fail(w, r, op, &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: ErrNoOAuth.Error()})
				return
			}
			h(w, r, op, c)
		}
	}
	handle(RouteConnections, with(func(w http.ResponseWriter, r *http.Request, op string, c Connections) {
		list, err := c.Connections(r.Context())
		if err != nil {
			s.fail(w, r, op, connErr(err))
			return
		}
		s.reply(w, http.StatusOK, nonNil(list))
	}))
	handle(RouteRevokeConnection, with(func(w http.ResponseWriter, r *http.Request, op string, c Connections) {
		conn, err := c.RevokeConnection(r.Context(), r.PathValue("id"), op)
		if err != nil {
			s.fail(w, r, op, connErr(err))
			return
		}
		s.reply(w, http.StatusOK, conn)
	}))
	handle(RouteConnectShared, with(func(w http.ResponseWriter, r *http.Request, op string, c Connections) {
		name := r.PathValue("name")
		u, err := c.SharedConnectURL(r.Context(), name, op)
		if err != nil {
			s.fail(w, r, op, connErr(err))
			return
		}
		s.reply(w, http.StatusOK, ConnectURL{Upstream: name, URL: u})
	}))
	handle(RouteRekeyConnections, with(func(w http.ResponseWriter, r *http.Request, op string, c Connections) {
		res, err := c.RekeyConnections(r.Context(), op)
		if err != nil {
			s.fail(w, r, op, connErr(err))
			return
		}
		s.reply(w, http.StatusOK, res)
	}))
}

func connErr(err error) error {
	switch {
	case errors.Is(err, ErrNoOAuth):
		// A backend that can keep connections, on a gateway with no
		// oauth upstream: the same answer as a backend that cannot.
		return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: ErrNoOAuth.Error()}
	case errors.Is(err, core.ErrNoConnection):
		return &Error{Status: http.StatusNotFound, Code: CodeUnknownConnection, Message: err.Error()}
	case errors.Is(err, core.ErrUnknownUpstream):
		return &Error{Status: http.StatusNotFound, Code: CodeUnknownUpstream, Message: err.Error()}
	}
	return err
}

// Connections is GET /v1/connections (UI-3).
func (c *Client) Connections(ctx context.Context) ([]core.Connection, error) {
	var v []core.Connection
	return v, c.call(ctx, RouteConnections, nil, nil, &v)
}

// RevokeConnection is DELETE /v1/connections/{id} (UI-3).
func (c *Client) RevokeConnection(ctx context.Context, id string) (core.Connection, error) {
	var v core.Connection
	return v, c.call(ctx, RouteRevokeConnection, nil, nil, &v, id)
}

// SharedConnectURL is POST /v1/upstreams/{name}/connect (UI-2).
func (c *Client) SharedConnectURL(ctx context.Context, upstream string) (string, error) {
	var v ConnectURL
	return v.URL, c.call(ctx, RouteConnectShared, nil, nil, &v, upstream)
}

// RekeyConnections is POST /v1/connections/rekey (UI-3).
func (c *Client) RekeyConnections(ctx context.Context) (RekeyResult, error) {
	var v RekeyResult
	return v, c.call(ctx, RouteRekeyConnections, nil, nil, &v)
}
