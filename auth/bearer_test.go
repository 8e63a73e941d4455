package auth_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/toolgate/toolgate/auth"
	"github.com/toolgate/toolgate/auth/authtest"
	"github.com/toolgate/toolgate/core"
)

// UI-2: The verified OAuth token is in the request's context for a token
// exchange, set by the OAuth strategy alone and only once verified: an
// API key, or a refused token, leaves none. It is never in the actor or
// its JSON, and printing it hides it.
func TestSubjectTokenOnlyFromOAuth(t *testing.T) {
	idp := authtest.NewProvider(t)
	const key = "k-0123456789abcdef0123456789abcdef"
	strat := auth.AnyOf(mustOAuth(t, auth.OAuthConfig{Issuer: idp.Issuer()}),
		auth.APIKeys([]auth.APIKey{{Key: key, Actor: core.Actor{ID: "ci"}}}))
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	mux.Handle("/mcp", auth.Middleware(auth.EndpointAuth{Path: "/mcp", Strategy: strat})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, _ := auth.ActorFrom(r.Context())
		st, ok := auth.SubjectTokenFrom(r.Context())
		actorJSON, _ := json.Marshal(a)
		stJSON, _ := json.Marshal(st)
		var logged strings.Builder
		slog.New(slog.NewJSONHandler(&logged, nil)).Info("x", "subject", st)
		fmt.Fprintf(w, "%s|%v|%s|%s|%v|%+v|%#v", a.ID, ok, st.Token, st.Issuer, st, a, st)
		w.Write([]byte("|" + string(actorJSON) + "|" + string(stJSON) + "|" + logged.String()))
	})))
	get := func(token string) (int, []string) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/mcp", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.Split(string(b), "|")
	}

	tok := idp.Token(t, jwt.MapClaims{"sub": "alice", "aud": srv.URL + "/mcp"})
	code, got := get(tok)
	if code != http.StatusOK || got[0] != "alice" || got[1] != "true" || got[2] != tok || got[3] != idp.Issuer() {
		t.Fatalf("OAuth: %d %q", code, got[:4])
	}
	for _, printed := range got[4:] {
		if strings.Contains(printed, tok) {
			t.Fatalf("printing the subject token or the actor shows the token: %q", printed)
		}
	}
	code, got = get(key)
	if code != http.StatusOK || got[0] != "ci" || got[1] != "false" || got[2] != "" {
		t.Fatalf("API key: %d %q", code, got[:3])
	}
	expired := idp.Token(t, jwt.MapClaims{"sub": "alice", "aud": srv.URL + "/mcp", "exp": int64(1)})
	if code, _ := get(expired); code != http.StatusUnauthorized {
		t.Fatalf("an expired token answered %d", code)
	}
}
