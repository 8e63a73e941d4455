package helmtest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestContainerfileMatchesChartOP11: deploy/Containerfile and the chart
// agree on what the pod relies on — the user, the port, the entry point and
// config path, the writable paths under a read-only root, and the image's
// environment overrides, which the chart must set itself since they win
// over the config file. (OP-11)
func TestContainerfileMatchesChartOP11(t *testing.T) {
	img := readContainerfile(t)
	for name, vals := range valueSets(t) {
		t.Run(name, func(t *testing.T) {
			r := mustRender(t, vals)
			c := r.container(t)
			ps := r.deployment.Spec.Template.Spec

			// The user: the image's, and the owner of its state directory.
			uid, gid, ok := strings.Cut(img.user, ":")
			if !ok {
				t.Fatalf("Containerfile USER %q, want uid:gid", img.user)
			}
			if got := fmt.Sprint(*c.SecurityContext.RunAsUser, ":", *c.SecurityContext.RunAsGroup); got != uid+":"+gid {
				t.Errorf("the chart runs as %s, the image's USER is %s", got, img.user)
			}
			if ps.SecurityContext.FSGroup == nil || fmt.Sprint(*ps.SecurityContext.FSGroup) != gid {
				t.Errorf("fsGroup %v, want the image's group %s so volumes are writable", ps.SecurityContext.FSGroup, gid)
			}
			for dest, owner := range img.copyOwners {
				if owner != "" && owner != img.user {
					t.Errorf("Containerfile copies %s owned by %s, not the USER %s", dest, owner, img.user)
				}
			}
			// The entry point and the config path.
			if !slices.Equal(c.Command, img.entrypoint) {
				t.Errorf("command %q, the image's ENTRYPOINT is %q", c.Command, img.entrypoint)
			}
			if len(c.Args) < len(img.cmd) || !slices.Equal(c.Args[:len(img.cmd)], img.cmd) {
				t.Errorf("args %q do not start with the image's CMD %q", c.Args, img.cmd)
			}
			// Writable paths: each VOLUME and the WORKDIR are writable
			// mounts, since the root is read-only.
			for _, dir := range append(slices.Clone(img.volumes), img.workdir) {
				if m := mountAt(c, dir); m == nil || m.ReadOnly {
					t.Errorf("the image writes %s, which the pod does not mount writable", dir)
				}
			}
			// The image's environment: the chart sets every toolgate
			// override it holds, so the image's value never silently wins
			// over the config; and the other values agree.
			for _, kv := range img.env {
				e := envVar(c, kv[0])
				switch {
				case strings.HasPrefix(kv[0], "TOOLGATE_GATEWAY_") && e == nil:
					t.Errorf("the image sets %s, which wins over the config file; the chart leaves it", kv[0])
				case !strings.HasPrefix(kv[0], "TOOLGATE_GATEWAY_") && (e == nil || e.Value != kv[1]):
					t.Errorf("the image sets %s=%s, the container %+v", kv[0], kv[1], e)
				}
			}
			if img.stopSignal != "SIGTERM" {
				t.Errorf("STOPSIGNAL %q: the kubelet's SIGTERM is what toolgate's shutdown answers", img.stopSignal)
			}
			if get(mergedValues(t, vals), "store.type") == "sqlite" {
				if got := envValue(c, "TOOLGATE_GATEWAY_STORE"); got != imageEnv(img, "TOOLGATE_GATEWAY_STORE") {
					t.Errorf("SQLite store at %q, the image's is %q", got, imageEnv(img, "TOOLGATE_GATEWAY_STORE"))
				}
			}
		})
	}
	// The port: the image listens on and exposes the chart's default.
	r := mustRender(t, baseValues())
	port := fmt.Sprint(r.container(t).Ports[0].ContainerPort)
	if !slices.Equal(img.expose, []string{port}) {
		t.Errorf("the image exposes %q, the chart's port is %s", img.expose, port)
	}
	if got := imageEnv(img, "TOOLGATE_GATEWAY_LISTEN"); got != "0.0.0.0:"+port {
		t.Errorf("the image listens on %q, the chart's port is %s", got, port)
	}
	if img.workdir != imageEnv(img, "HOME") {
		t.Errorf("WORKDIR %s, HOME %s", img.workdir, imageEnv(img, "HOME"))
	}
}

func imageEnv(img containerfile, name string) string {
	for _, kv := range img.env {
		if kv[0] == name {
			return kv[1]
		}
	}
	return ""
}
