package helmtest

// The value sets the chart is rendered with, and the test Secret their
// references resolve from (OP-11).

// testSecrets plays the Secrets an operator creates before installing:
// "secret/key" → value. None of these values may appear in a rendered
// object.
var testSecrets = map[string]string{
	"toolgate-db/dsn":                 "", // set by the contract test to its cluster's DSN
	"toolgate-secrets/confirm-secret": "helm-test-confirm-secret-0123456789abcdef",
	"toolgate-secrets/credentials":    "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
	"toolgate-keys/ci":                "helm-test-ci-key-5f1c9a7e3b2d",
	"toolgate-keys/bot":               "helm-test-bot-key-8a2e6c4d0f1b",
	"toolgate-admin/alice":            "helm-test-admin-alice-7c3e9b1a",
	"toolgate-admin/bob":              "helm-test-admin-bob-2d8f4a6c0e",
	"notes-upstream/token":            "helm-test-upstream-token-4e7a",
	// The Secret docs/operations.md creates.
	"toolgate/dsn":            "", // not connected to: check --offline
	"toolgate/confirm-secret": "helm-test-doc-confirm-secret-fedcba9876543210",
	"toolgate/ci-key":         "helm-test-doc-ci-key-1b3d5f7a9c",
}

// baseValues is the least an install needs: the store and confirm secret
// references and one API key; everything else is the chart's default.
func baseValues() map[string]any {
	return map[string]any{
		"store":         map[string]any{"postgres": map[string]any{"existingSecret": "toolgate-db"}},
		"confirmSecret": map[string]any{"existingSecret": "toolgate-secrets"},
		"config": map[string]any{
			"endpoints": []any{map[string]any{
				"path": "/mcp",
				"auth": map[string]any{"apiKeys": []any{
					map[string]any{"existingSecret": "toolgate-keys", "secretKey": "ci", "actor": map[string]any{"id": "ci", "roles": []any{"MEMBER"}}},
				}},
			}},
		},
	}
}

// allOnValues turns on every optional part.
func allOnValues() map[string]any {
	v := baseValues()
	v["replicaCount"] = 3
	v["credentialsKey"] = map[string]any{"existingSecret": "toolgate-secrets", "key": "credentials"}
	v["admin"] = map[string]any{"enabled": true, "keys": []any{
		map[string]any{"operator": "alice", "existingSecret": "toolgate-admin", "key": "alice"},
		map[string]any{"operator": "bob", "existingSecret": "toolgate-admin", "key": "bob"},
	}}
	v["secretEnv"] = []any{map[string]any{"name": "NOTES_TOKEN", "existingSecret": "notes-upstream", "key": "token"}}
	v["env"] = []any{map[string]any{"name": "TZ", "value": "UTC"}}
	v["service"] = map[string]any{"sessionAffinity": "ClientIP", "annotations": map[string]any{"example.com/lb": "internal"}}
	v["podAnnotations"] = map[string]any{"example.com/team": "platform"}
	v["autoscaling"] = map[string]any{"enabled": true, "minReplicas": 2, "maxReplicas": 5}
	v["serviceMonitor"] = map[string]any{"enabled": true, "labels": map[string]any{"release": "prometheus"}}
	v["networkPolicy"] = map[string]any{
		"enabled":     true,
		"ingressFrom": []any{map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "agents"}}}},
		"egress":      []any{map[string]any{"ports": []any{map[string]any{"port": 5432, "protocol": "TCP"}}}},
	}
	v["imagePullSecrets"] = []any{map[string]any{"name": "regcred"}}
	v["priorityClassName"] = "high"
	cfg := v["config"].(map[string]any)
	cfg["gateway"] = map[string]any{"review": map[string]any{"mode": "warn"}, "maxRequestBytes": 8388608, "sessionIdleTimeout": "45m", "publicUrl": "https://mcp.example.com", "confirm": map[string]any{"ttl": "10m"}}
	eps := cfg["endpoints"].([]any)
	eps = append(eps, map[string]any{
		"path": "/bots",
		"auth": map[string]any{"apiKeys": []any{
			map[string]any{"existingSecret": "toolgate-keys", "secretKey": "bot", "actor": map[string]any{"id": "bot", "roles": []any{"MEMBER"}}},
		}},
	})
	cfg["endpoints"] = eps
	cfg["upstreams"] = []any{map[string]any{
		"name": "notes", "url": "https://notes.example.com/mcp", "transport": "http",
		"authorization": "${NOTES_TOKEN}", "reads": []any{"list_*"},
	}}
	return v
}

// sqliteValues is one pod on SQLite, on a claim.
func sqliteValues() map[string]any {
	v := baseValues()
	v["replicaCount"] = 1
	v["store"] = map[string]any{"type": "sqlite", "sqlite": map[string]any{"existingClaim": "toolgate-state"}}
	return v
}

// with returns a copy of base with the value at the dotted path replaced.
func with(base map[string]any, path string, value any) map[string]any {
	out := deepCopy(base).(map[string]any)
	m := out
	keys := splitPath(path)
	for _, k := range keys[:len(keys)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[keys[len(keys)-1]] = value
	return out
}

func splitPath(p string) []string {
	var out []string
	start := 0
	for i := 0; i < len(p); i++ {
		if p[i] == '.' {
			out = append(out, p[start:i])
			start = i + 1
		}
	}
	return append(out, p[start:])
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = deepCopy(e)
		}
		return s
	default:
		return v
	}
}
