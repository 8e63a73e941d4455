package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/toolgate/toolgate/auth"
	"github.com/toolgate/toolgate/config"
	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/mcp/serve"
	"github.com/toolgate/toolgate/mcp/session"
)

// buildHandler mounts every endpoint behind its authentication, the RFC 9728
// metadata where OAuth is configured, /healthz, /readyz and /metrics.
func (g *Gateway) buildHandler(ctx context.Context) error {
	cfg := g.cfg
	mux := http.NewServeMux()
	// One set of caps for all endpoints: gateway.maxSessions bounds the
	// gateway, not each endpoint (SV-2).
	limits := session.NewLimits(cfg.Gateway.MaxSessions, cfg.Gateway.MaxSessionsPerActor)
	sessionKey, err := sessionKey(cfg)
	if err != nil {
		return err
	}
	ended := g.broadcastSessionEnded()
	flowLabels, flowGrew := g.flowLabels() // IN-3
	policies, err := endpointPolicies(cfg)
	if err != nil {
		return err
	}
	callLimits, err := g.newCallLimits(cfg)
	if err != nil {
		return err
	}
	g.useLimits(callLimits)
	var ends []*serve.Endpoint
	peers, forwardKey := g.forwarding(sessionKey)
	for i, e := range cfg.Endpoints {
		epAuth, err := endpointAuth(ctx, cfg, e, g.log)
		if err != nil {
			return fmt.Errorf("endpoints[%d] %s: %w", i, e.Path, err)
		}
		epAuth.OnRefusal = g.authRefused(e.Path)
		inspection, err := endpointInspection(cfg, &cfg.Endpoints[i])
		if err != nil {
			return err
		}
		ep, err := serve.NewEndpoint(serve.EndpointOptions{
			Path: e.Path, Name: e.Name, Version: e.Version, Instructions: e.Instructions, Tools: e.Tools,
			Stateless: cfg.Gateway.Stateless, MaxRequestBytes: cfg.Gateway.MaxRequestBytes,
			Registry: g.reg, Gate: g.gate, Sessions: g.sessions, Actor: auth.ActorFrom, Logger: g.log,
			Catalog: reviewedCatalog{g.importer, g.review}, Audit: g.store, AuditKey: auditKey(cfg), ElicitConfirm: true, Hub: g.hub,
			SessionIdleTimeout: cfg.Gateway.SessionIdleTimeout, SessionParkAfter: cfg.Gateway.SessionParkAfter, Limits: limits,
			MaxStreamsPerSession: cfg.Gateway.MaxStreamsPerSession,
			WriteTimeout:         cfg.Gateway.WriteTimeout, HeartbeatInterval: cfg.Gateway.HeartbeatInterval,
			ListTTL:        cfg.Gateway.ListTTL,
			SessionStarted: g.creds.started, SessionEnded: g.creds.forget,
			SessionKey: sessionKey, SessionTerminated: ended, Replica: g.replica, Peers: peers, ForwardKey: forwardKey,
			Policy: policies[e.Path], CallLimits: callLimits, Discovery: endpointDiscovery(e),
			Inspection: inspection, FlowLabels: flowLabels, FlowGrew: flowGrew,
		})
		if err != nil {
			return err
		}
		g.endpoints = append(g.endpoints, ep)
		ends = append(ends, ep)
		// Behind a switch, so a reload can replace the auth (OP-8).
		g.mountEndpoint(mux, ep, epAuth)
	}
	// Another replica's ended sessions may arrive from now on (OP-5).
	g.sessionEnds.Store(&ends)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", g.readyz)
	g.mountMetrics(mux)
	if len(cfg.Endpoints) > 0 {
		g.mountUpstreamOAuth(mux, cfg.Endpoints[0].Path)
	}
	// Body-read and write deadlines per request, not the server's: those
	// would cut event streams (SV-9).
	g.handler = serve.WithDeadlines(mux, cfg.Gateway.ReadTimeout, cfg.Gateway.WriteTimeout)
	return nil
}

// readyz is ready once the first import finished and every required
// upstream is connected: before that a listed tool may not be callable yet.
func (g *Gateway) readyz(w http.ResponseWriter, r *http.Request) {
	type upstreamState struct {
		Name  string `json:"name"`
		State string `json:"state"`
	}
	waiting := []upstreamState{}
	for _, st := range g.importer.Statuses() {
		if st.Required && st.State != core.StateConnected {
			waiting = append(waiting, upstreamState{st.Name, string(st.State)})
		}
	}
	imported := g.ready.Load()
	body := map[string]any{"imported": imported, "waiting": waiting}
	ready := imported && len(waiting) == 0
	// A store deleted or replaced under the gateway refuses every action
	// (CF-3): such a replica must not take traffic.
	if _, err := g.store.StoreID(r.Context()); err != nil {
		ready = false
		body["store"] = err.Error()
	}
	body["ready"] = ready
	w.Header().Set("Content-Type", "application/json")
	if !ready {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(body)
}

// endpointDiscovery is an endpoint's tool search (DS-1); nil when off.
func endpointDiscovery(e config.Endpoint) *serve.Discovery {
	if !e.Discovery.Search() {
		return nil
	}
	return &serve.Discovery{AlwaysList: e.Discovery.AlwaysList}
}
