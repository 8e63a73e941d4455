package oidctest

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/oauth2"
)

// The provider's pre-registered clients (testdata/peers/oidc-as.mjs):
// PreClient signs people in by authorization code (its redirect URIs come
// from PRE_REDIRECTS; RedirectEnv makes it the loopback callback a Browser
// stops at); ExchangeClient may only use the token exchange grant.
const (
	PreClient            = "toolgate-pre"
	PreClientSecret      = "pre-registered-client-secret-0123456789"
	ExchangeClient       = "toolgate-exchange"
	ExchangeClientSecret = "exchange-client-secret-0123456789abcdef"
	preRedirect          = "http://127.0.0.1:1" + CallbackPath
	RedirectEnv          = "PRE_REDIRECTS=" + preRedirect
)

// AccessToken signs user in at the provider (started with RedirectEnv)
// through PreClient and returns an access token whose audience is
// resource: what an MCP client of an endpoint trusting the provider holds.
func AccessToken(t testing.TB, issuer, user, resource string) string {
	t.Helper()
	conf := &oauth2.Config{ClientID: PreClient, ClientSecret: PreClientSecret, RedirectURL: preRedirect, Scopes: []string{"crm.read", "crm.write"},
		Endpoint: oauth2.Endpoint{AuthURL: issuer + "/auth", TokenURL: issuer + "/token", AuthStyle: oauth2.AuthStyleInHeader}}
	verifier := oauth2.GenerateVerifier()
	start := conf.AuthCodeURL("state-"+user, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", resource))
	cb, err := url.Parse(SignIn(t, Browser(t), start, user))
	if err != nil {
		t.Fatal(err)
	}
	code := cb.Query().Get("code")
	if code == "" {
		t.Fatalf("the provider's redirect carries no code: %s", cb.RawQuery)
	}
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {preRedirect},
		"code_verifier": {verifier}, "resource": {resource}}
	req, _ := http.NewRequest(http.MethodPost, issuer+"/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(PreClient, PreClientSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
		Error       string `json:"error_description"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("token endpoint answered %d: %v %s", resp.StatusCode, err, tok.Error)
	}
	return tok.AccessToken
}
