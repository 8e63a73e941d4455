package upstreamoauth

import (
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"

	"github.com/toolgate/toolgate/auth"
	"github.com/toolgate/toolgate/core"
)

// Handler serves the routes under Path (UI-1, UI-2): connect (opened in
// the person's browser), callback (the redirect URI), client.json (the
// Client ID Metadata Document) and disconnect (POST, for the actor the
// request authenticated as: mount it behind an endpoint's authentication).
// Every refusal is a page that names what was wrong and stores nothing.
func (m *Manager) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+Path+"/connect", func(w http.ResponseWriter, r *http.Request) {
		if err := m.start(w, r); err != nil {
			m.refuse(w, "connect", err)
		}
	})
	mux.HandleFunc("GET "+Path+"/callback", func(w http.ResponseWriter, r *http.Request) {
		c, err := m.finish(w, r)
		if err != nil {
			m.refuse(w, "callback", err)
			return
		}
		page(w, http.StatusOK, "Connected", fmt.Sprintf("Your account on %s is connected for %s. You can close this window and call the tool again.", c.Upstream, core.ActorLabel(c.ActorID)))
	})
	mux.HandleFunc("GET "+Path+"/client.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=3600")
		_ = json.NewEncoder(w).Encode(m.clientMetadata(true))
	})
	mux.HandleFunc("POST "+Path+"/disconnect", func(w http.ResponseWriter, r *http.Request) {
		actor, ok := auth.ActorFrom(r.Context())
		if !ok {
			page(w, http.StatusUnauthorized, "Not signed in", "Disconnecting needs the caller's own credentials.")
			return
		}
		upstream := r.URL.Query().Get("upstream")
		if u, ok := m.ups[upstream]; !ok || u.Credentials != PerActor {
			page(w, http.StatusNotFound, "Unknown upstream", fmt.Sprintf("No per-actor oauth upstream is named %q.", upstream))
			return
		}
		c, err := m.Disconnect(r.Context(), upstream, actor.ID)
		switch {
		case errors.Is(err, core.ErrNoConnection):
			page(w, http.StatusNotFound, "Not connected", fmt.Sprintf("%s has no connection to %s.", actor.ID, upstream))
		case err != nil:
			m.refuse(w, "disconnect", err)
		default:
			page(w, http.StatusOK, "Disconnected", fmt.Sprintf("Connection %s of %s to %s is gone.", c.ID, actor.ID, upstream))
		}
	})
	return mux
}

// refuse answers a failed route: 400 for what the request got wrong, 502
// for what the authorization server did, 500 for the store.
func (m *Manager) refuse(w http.ResponseWriter, route string, err error) {
	code := http.StatusBadGateway
	var te *TokenError
	switch {
	case errors.Is(err, ErrConnectLink), errors.Is(err, ErrConnectExpired), errors.Is(err, ErrConnectUsed),
		errors.Is(err, ErrStateUsed), errors.Is(err, ErrStateExpired), errors.Is(err, ErrOtherBrowser),
		errors.Is(err, ErrIssuerMismatch), errors.Is(err, ErrIssuerMissing), errors.Is(err, errBadState):
		code = http.StatusBadRequest
	case errors.As(err, &te) && te.Code == "invalid_grant":
		// A replayed or stolen code: the request's fault.
		code = http.StatusBadRequest
	case errors.Is(err, core.ErrStoreClosed), errors.Is(err, core.ErrStoreUnavailable), errors.Is(err, core.ErrStoreLost):
		code = http.StatusInternalServerError
	}
	m.opts.Logger.Info("upstream connection refused", "route", route, "status", code, "err", err)
	page(w, code, "Not connected", err.Error())
}

func page(w http.ResponseWriter, code int, title, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(code)
	fmt.Fprintf(w, "<!doctype html><title>toolgate: %s</title><h1>%s</h1><p>%s</p>\n", html.EscapeString(title), html.EscapeString(title), html.EscapeString(msg))
}
