package sidebyside

import "testing"

// QB-2: A --peer names a gateway, its URL, and optionally its tool, key, pid and
// the protocol era its client speaks.
func TestParsePeer(t *testing.T) {
	p, err := ParsePeer("mcp-proxy=http://127.0.0.1:9090/echo/mcp,tool=echo2,key=k=1,pid=42")
	if err != nil || p.Name != "mcp-proxy" || p.URL != "http://127.0.0.1:9090/echo/mcp" || p.Tool != "echo2" || p.Key != "k=1" || p.PID != 42 {
		t.Errorf("ParsePeer = %+v, %v", p, err)
	}
	if p, err := ParsePeer("a=http://x/mcp"); err != nil || p.Tool != "echo" || p.PID != 0 || p.Modern {
		t.Errorf("defaults: %+v, %v", p, err)
	}
	if p, err := ParsePeer("a=http://x/mcp,era=2026-07-28"); err != nil || !p.Modern {
		t.Errorf("era=2026-07-28: %+v, %v", p, err)
	}
	for _, bad := range []string{"http://x", "=http://x", "a=http://x,pid=x", "a=http://x,color=red", "a=http://x,era=2025-11-25"} {
		if _, err := ParsePeer(bad); err == nil {
			t.Errorf("ParsePeer(%q) accepted", bad)
		}
	}
}
