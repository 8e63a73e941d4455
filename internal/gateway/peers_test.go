package gateway

import (
	"net"
	"testing"
)

// OP-11: where the other replicas reach this one: the configured address
// as is; the bound one when it names a host; for a host binding every
// interface, POD_IP with the bound port.
func TestAdvertiseAddrOP11(t *testing.T) {
	t.Setenv("POD_IP", "10.1.2.3")
	for _, tc := range []struct{ configured, bound, want string }{
		{"gw-0.toolgate.mcp.svc:7331", "0.0.0.0:7331", "gw-0.toolgate.mcp.svc:7331"},
		{"", "127.0.0.1:40001", "127.0.0.1:40001"},
		{"", "0.0.0.0:7331", "10.1.2.3:7331"},
		{"", "[::]:7331", "10.1.2.3:7331"},
	} {
		if got := advertiseAddr(tc.configured, tc.bound); got != tc.want {
			t.Errorf("advertiseAddr(%q, %q) = %q, want %q", tc.configured, tc.bound, got, tc.want)
		}
	}
	t.Setenv("POD_IP", "")
	got := advertiseAddr("", "0.0.0.0:7331")
	host, port, err := net.SplitHostPort(got)
	if err != nil || port != "7331" || host == "" || host == "0.0.0.0" {
		t.Errorf("without POD_IP: %q; want a host of this machine with port 7331", got)
	}
	if ip := net.ParseIP(host); ip != nil && (ip.IsLoopback() || ip.IsUnspecified()) {
		t.Errorf("without POD_IP: %q is not reachable from another machine", got)
	}
}
