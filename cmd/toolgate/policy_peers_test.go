//go:build linux

package main

// Policies and limits (PO-1, PO-2, PO-3) of a real `toolgate serve`, driven
// by the official TypeScript SDK client over real HTTP on loopback, in
// front of the notes demo upstream as a child process.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/toolgate/toolgate/auth/authtest"
	"github.com/toolgate/toolgate/internal/waittest"
)

const policyPeerKey = "policy-SECRET-carl-key-5e1c9a7d3b"

// policyPeerConfig: carl is a contractor of finance (claims from his API
// key's config); JWTs of OIDC_ISSUER are accepted too. Rules deny
// contractors' searches outside docs (an argument-based deny) and
// side_effects to them outright (so it is hidden from their list), and
// budget searches to anyone whose claims do not name finance;
// notes_list_notes is rated 1/min per actor and tool, with a burst of 1.
const policyPeerConfig = `gateway:
  confirm:
    secret: ${TOOLGATE_CONFIRM_SECRET}
  admin:
    listen: ${ADMIN_LISTEN}
    keys:
      - key: ${ADMIN_KEY}
        operator: alice
endpoints:
  - path: /mcp
    auth:
      anyOf:
        - apiKeys:
            - key: ${CARL_KEY}
              actor: {id: carl, roles: [contractor], tenant: acme, claims: {department: finance}}
        - oauth:
            issuer: ${OIDC_ISSUER}
            audience: default
            rolesFromScopes: {tools: [MEMBER]}
upstreams:
  - name: notes
    command: ${TOOLGATE_SELF}
    args: [demo-upstream, notes]
    timeout: 20s
    required: true
policies:
  default: allow
  rules:
    - id: contractors-search-docs-only
      when: '"contractor" in actor.roles && tool.name == "notes_search" && !args.query.startsWith("docs")'
      effect: deny
      reason: contractors search docs only
    - id: no-counters
      when: '"contractor" in actor.roles && tool.name == "notes_side_effects"'
      effect: deny
      reason: side effects are for staff
    - id: ask-about-approvals
      when: tool.name == "notes_search" && args.query == "docs approval"
      effect: approve
      reason: searches about approvals need an operator
    - id: budget-is-finance
      when: tool.name == "notes_search" && args.query.contains("budget") && !(has(actor.claims.department) && actor.claims.department == "finance")
      effect: deny
      reason: budget searches are for finance
limits:
  - id: list-rate
    per: actor+tool
    match: tool.name == "notes_list_notes"
    rate: 1/min
    burst: 1
  - id: quota-searches
    per: actor
    match: tool.name == "notes_search" && args.query == "docs quota"
    quota: 1/s
`

// sdkPolicyAnswer is one call's line of sdk-driver.mjs with the result's
// _meta kept.
type sdkPolicyAnswer struct {
	Result *struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool           `json:"isError"`
		Meta    map[string]any `json:"_meta"`
	} `json:"result"`
	Error     string `json:"error"`
	SessionID string `json:"sessionId"`
}

func (d *sdkDriver) policyCall(tool string, args any) sdkPolicyAnswer {
	d.t.Helper()
	d.send(tool, args)
	line := d.next(sdkCallWait)
	var a sdkPolicyAnswer
	if err := json.Unmarshal([]byte(line), &a); err != nil {
		d.t.Fatalf("sdk-driver: %q: %v", line, err)
	}
	if a.Error != "" || a.Result == nil {
		d.t.Fatalf("%s: the SDK client got %q\nstderr: %s", tool, a.Error, d.stderr)
	}
	return a
}

func (a sdkPolicyAnswer) text() string {
	var parts []string
	for _, c := range a.Result.Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "\n")
}

// PO-1, PO-2, PO-3: An argument-based deny answers the rule's reason and never its
// expression; a tool a rule denies whatever the arguments is absent from
// the list and refused with the reason if called anyway; an allowed call
// runs; a read a rule sends to an operator runs once one approves it
// through the admin API; a rate refusal names the limit and carries
// retry-after in _meta; a quota refuses past its count and lets calls run
// again in its next window;
// rules on actor.claims read a signed token's claims and an API key's
// configured ones; a reload changes a rule under an open session.
func TestPolicyServeSDK(t *testing.T) {
	cfg := writeServeConfig(t, policyPeerConfig)
	idp := authtest.NewProvider(t)
	admin := fmt.Sprintf("127.0.0.1:%d", serveFreePort(t))
	g := startServe(t, cfg, map[string]string{
		"ADMIN_LISTEN":            admin,
		"ADMIN_KEY":               topoAdminKey,
		"TOOLGATE_CONFIRM_SECRET": serveConfirmSecret,
		"CARL_KEY":                policyPeerKey,
		"TOOLGATE_SELF":           toolgateBinary(t),
		"OIDC_ISSUER":             idp.Issuer(),
	})
	d := startSDKDriver(t, g.base+"/mcp", policyPeerKey)

	tools := d.ready.Tools
	if !slices.Contains(tools, "notes_search") || !slices.Contains(tools, "notes_list_notes") {
		t.Fatalf("the allowed tools are not listed: %v", tools)
	}
	if slices.Contains(tools, "notes_side_effects") {
		t.Fatalf("notes_side_effects is listed to carl though a rule denies it to him whatever the arguments: %v", tools)
	}

	denied := d.policyCall("notes_search", map[string]any{"query": "Welcome"})
	if !denied.Result.IsError || !strings.Contains(denied.text(), "contractors search docs only") {
		t.Fatalf("a search outside docs: isError %v, %q; want the rule's reason", denied.Result.IsError, denied.text())
	}
	if strings.Contains(denied.text(), "startsWith") || strings.Contains(denied.text(), "actor.roles") {
		t.Fatalf("the refusal quotes the rule's expression: %q", denied.text())
	}

	allowed := d.policyCall("notes_search", map[string]any{"query": "docs"})
	if allowed.Result.IsError {
		t.Fatalf("a search in docs was refused: %q", allowed.text())
	}

	// A read a rule sends to an operator waits until one approves it
	// through the admin API, then runs.
	d.send("notes_search", map[string]any{"query": "docs approval"})
	id := waitTopoPending(t, "http://"+admin)
	if code, out, errOut := runTool(t, map[string]string{"TOOLGATE_ADMIN_KEY": topoAdminKey}, "", "approve", id, "--attach", "http://"+admin); code != 0 {
		t.Fatalf("toolgate approve: exit %d\n%s%s", code, out, errOut)
	}
	if a := d.answer(); a.Error != "" || a.Result == nil || a.Result.IsError || a.SessionID != d.ready.SessionID {
		t.Fatalf("the approved search: error %q, result %+v, session %q", a.Error, a.Result, a.SessionID)
	}

	hidden := d.policyCall("notes_side_effects", map[string]any{})
	if !hidden.Result.IsError || !strings.Contains(hidden.text(), "side effects are for staff") {
		t.Fatalf("a call to the hidden tool: isError %v, %q; want the rule's reason", hidden.Result.IsError, hidden.text())
	}

	first := d.policyCall("notes_list_notes", map[string]any{})
	if first.Result.IsError || !strings.Contains(first.text(), "Welcome to toolgate.") {
		t.Fatalf("the first list within the rate: isError %v, %q", first.Result.IsError, first.text())
	}
	limited := d.policyCall("notes_list_notes", map[string]any{})
	if !limited.Result.IsError || !strings.Contains(limited.text(), "rate limit reached for list-rate; retry after") {
		t.Fatalf("the second list within a minute: isError %v, %q; want the rate refusal", limited.Result.IsError, limited.text())
	}
	wait, ok := limited.Result.Meta["dev.toolgate/retryAfterSeconds"].(float64)
	if !ok || wait < 1 || wait > 60 {
		t.Fatalf("the refusal's _meta: %v; want dev.toolgate/retryAfterSeconds in 1…60", limited.Result.Meta)
	}

	// A quota counted in the store: a call past it is refused with the
	// limit's id, and once its window (a second) has ended a call runs
	// again. A refusal is sought over a few calls, since two calls can
	// straddle a window's end.
	var quotaRefusal string
	for range 5 {
		if a := d.policyCall("notes_search", map[string]any{"query": "docs quota"}); a.Result.IsError {
			quotaRefusal = a.text()
			break
		}
	}
	if !strings.Contains(quotaRefusal, "limit reached for quota-searches; retry after") {
		t.Fatalf("five searches under a 1/s quota: refusal %q; want one naming quota-searches", quotaRefusal)
	}
	if !waittest.Poll(30*time.Second, func() bool {
		return !d.policyCall("notes_search", map[string]any{"query": "docs quota"}).Result.IsError
	}) {
		t.Fatal("the quota's next window never let a search run")
	}

	// Claims: carl's come from his key's config, the others' from their
	// signed tokens; only finance may search the budget.
	if a := d.policyCall("notes_search", map[string]any{"query": "docs budget"}); a.Result.IsError {
		t.Fatalf("carl (claims department: finance) was refused a budget search: %q", a.text())
	}
	url := g.base + "/mcp"
	tokens := map[string]string{}
	for _, dept := range []string{"finance", "sales"} {
		tokens[dept] = idp.Token(t, jwt.MapClaims{"sub": "jo-" + dept, "aud": url, "scope": "tools", "department": dept})
		jo := startSDKDriver(t, url, tokens[dept])
		a := jo.policyCall("notes_search", map[string]any{"query": "budget"})
		switch {
		case dept == "finance" && a.Result.IsError:
			t.Fatalf("a token with department finance was refused a budget search: %q", a.text())
		case dept == "sales" && (!a.Result.IsError || !strings.Contains(a.text(), "budget searches are for finance")):
			t.Fatalf("a token with department sales: isError %v, %q; want the rule's reason", a.Result.IsError, a.text())
		}
		if a := jo.policyCall("notes_search", map[string]any{"query": "notes"}); a.Result.IsError {
			t.Fatalf("%s: an unrestricted search was refused: %q", dept, a.text())
		}
	}

	// A reload that drops the docs-only rule while carl's session is open:
	// the same search on the same session now runs (OP-8).
	rewrite(t, cfg, strings.Replace(policyPeerConfig, "startsWith(\"docs\")", "startsWith(\"\")", 1))
	g.hup(t, 1)
	if !strings.Contains(g.stderr.String(), `"msg":"config reloaded`) {
		t.Fatalf("the reload was refused:\n%s", g.stderr)
	}
	after := d.policyCall("notes_search", map[string]any{"query": "Welcome"})
	if after.Result.IsError || after.SessionID == "" || after.SessionID != d.ready.SessionID {
		t.Fatalf("after the reload, the search outside docs: %q on session %q (started on %q)", after.text(), after.SessionID, d.ready.SessionID)
	}

	log := g.stderr.String()
	for what, secret := range map[string]string{"carl's key": policyPeerKey, "the finance token": tokens["finance"], "the sales token": tokens["sales"]} {
		if strings.Contains(log, secret) {
			t.Fatalf("%s is in serve's log", what)
		}
	}
}
