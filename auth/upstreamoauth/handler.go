package upstreamoauth

import (
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"html/template"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/toolgate/toolgate/auth"
	"github.com/toolgate/toolgate/core"
)

// Handler serves the routes under Path (UI-1, UI-2): connect (GET, opened
// in the person's browser: a page that names the upstream and the actor
// and spends nothing; POST, its form: the flow starts), callback (the redirect URI), client.json (the
// Client ID Metadata Document) and disconnect (POST, for the actor the
// request authenticated as: mount it behind an endpoint's authentication).
// Every refusal is a page that names what was wrong and stores nothing.
func (m *Manager) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+Path+"/connect", func(w http.ResponseWriter, r *http.Request) {
		if err := m.consent(w, r); err != nil {
			m.refuse(w, "connect", err)
		}
	})
	mux.HandleFunc("POST "+Path+"/connect", func(w http.ResponseWriter, r *http.Request) {
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
	case errors.Is(err, ErrConnectLink), errors.Is(err, ErrConnectExpired), errors.Is(err, ErrConnectUsed), errors.Is(err, ErrCrossSite),
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

// pageHeaders make a page of these routes unframeable (no clickjacking of
// the connect page's button), uncached, script-free and referrer-free.
// form-action stays unset: browsers apply it to the redirect that follows
// the connect form, which goes to the authorization server.
func pageHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", "default-src 'none'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
}

// consentPage names what the link connects, so the person who opened it
// can tell a link meant for someone else (UI-2). Parsed when first shown,
// not in the package's initialiser (QB-5).
var consentPage = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("connect").Parse(`<!doctype html>
<html lang="en"><meta charset="utf-8"><meta name="referrer" content="no-referrer">
<title>toolgate: connect {{.Upstream}}</title>
<h1>Connect {{.Upstream}}</h1>
{{if .Shared}}<p>Connect the account on {{.Upstream}} that toolgate shares for everyone who calls its tools.</p>
<p>Continue only if you are the operator of this gateway and you asked for this; if someone sent you this link, close this page.</p>
<p>Everyone who uses {{.Upstream}} through toolgate will act as the account you sign in with.</p>
{{else}}<p>Connect your account on {{.Upstream}} to toolgate for {{.Actor}}.</p>
<p>Continue only if you are {{.Actor}} and you asked for this; if someone sent you this link, close this page.</p>
<p>Whoever is {{.Actor}} in toolgate will act on {{.Upstream}} as the account you sign in with.</p>
{{end}}<p>{{.Upstream}} is {{.URL}}. This link works once, until {{.Until}}.</p>
<form method="post" action="connect">
<input type="hidden" name="t" value="{{.Token}}">
<input type="hidden" name="n" value="{{.Nonce}}">
<button type="submit">Continue to sign in at {{.Upstream}}</button>
</form>
</html>
`))
})

// consent answers the connect GET: the link is checked, not spent, and the
// page's form carries it on. A previewer that fetches the link only gets
// the page.
func (m *Manager) consent(w http.ResponseWriter, r *http.Request) error {
	t := r.URL.Query().Get("t")
	claim, err := m.peek(r.Context(), t)
	if err != nil {
		return err
	}
	// One nonce per browser, kept while it has one, so two connect pages
	// open at once both work.
	nonce := newID()
	if ck, err := r.Cookie(consentCookie); err == nil && len(ck.Value) == len(nonce) {
		nonce = ck.Value
	}
	http.SetCookie(w, &http.Cookie{Name: consentCookie, Value: nonce, Path: Path + "/", MaxAge: int(m.opts.ConnectTTL / time.Second),
		HttpOnly: true, Secure: strings.HasPrefix(m.opts.PublicURL, "https:"), SameSite: http.SameSiteStrictMode})
	pageHeaders(w)
	w.WriteHeader(http.StatusOK)
	// A failed write is the browser gone: nothing to answer.
	_ = consentPage().Execute(w, map[string]any{
		"Upstream": claim.Upstream, "Actor": claim.Actor, "Shared": claim.Actor == core.SharedActor,
		"URL": m.ups[claim.Upstream].URL, "Until": time.Unix(claim.Expires, 0).UTC().Format("15:04 UTC"),
		"Token": t, "Nonce": nonce,
	})
	return nil
}

func page(w http.ResponseWriter, code int, title, msg string) {
	pageHeaders(w)
	w.WriteHeader(code)
	fmt.Fprintf(w, "<!doctype html><title>toolgate: %s</title><h1>%s</h1><p>%s</p>\n", html.EscapeString(title), html.EscapeString(title), html.EscapeString(msg))
}
