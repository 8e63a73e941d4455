package auth

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// wellKnownPrefix is where RFC 9728 places protected-resource metadata.
const wellKnownPrefix = "/.well-known/oauth-protected-resource"

// MetadataPath is the path of the RFC 9728 document for the endpoint at
// endpointPath: the well-known prefix followed by the endpoint's path (AU-5).
// An endpoint at the root has the bare prefix.
func MetadataPath(endpointPath string) string {
	if endpointPath == "" || endpointPath == "/" {
		return wellKnownPrefix
	}
	if !strings.HasPrefix(endpointPath, "/") {
		endpointPath = "/" + endpointPath
	}
	return wellKnownPrefix + endpointPath
}

// ResourceURL is the endpoint's resource identifier (RFC 8707, RFC 9728):
// publicURL, or else the request's origin, followed by path. The request's
// scheme is https only when it arrived over TLS; forwarding headers are not
// trusted (AU-6).
func ResourceURL(r *http.Request, publicURL, path string) string {
	return origin(r, publicURL) + normalisePath(path)
}

// metadataURL is the absolute URL of the endpoint's RFC 9728 document.
func metadataURL(r *http.Request, publicURL, path string) string {
	return origin(r, publicURL) + MetadataPath(path)
}

func origin(r *http.Request, publicURL string) string {
	if publicURL != "" {
		u, err := url.Parse(publicURL)
		if err == nil && u.Scheme != "" && u.Host != "" {
			return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host)
		}
		return publicURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	host := r.Host
	if host == "" && r.URL != nil {
		host = r.URL.Host
	}
	return scheme + "://" + strings.ToLower(host)
}

func normalisePath(path string) string {
	if path == "" {
		return "/"
	}
	if !strings.HasPrefix(path, "/") {
		return "/" + path
	}
	return path
}

// ValidatePublicURL checks that s is an origin only (AU-6): scheme http or
// https and a host with an optional port, with no path (not even "/"),
// query, fragment or user information.
func ValidatePublicURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("publicUrl %q: %w", s, err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("publicUrl %q: scheme must be http or https", s)
	case u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return fmt.Errorf("publicUrl %q: must be scheme://host[:port]", s)
	case u.User != nil:
		return fmt.Errorf("publicUrl %q: must not contain user information", s)
	case u.Path != "" || u.RawPath != "":
		return fmt.Errorf("publicUrl %q: must be an origin only, without a path (not even a trailing /)", s)
	case u.RawQuery != "" || u.ForceQuery:
		return fmt.Errorf("publicUrl %q: must not contain a query", s)
	case u.Fragment != "" || strings.Contains(s, "#"):
		return fmt.Errorf("publicUrl %q: must not contain a fragment", s)
	}
	if p := u.Port(); p != "" {
		if strings.TrimLeft(p, "0123456789") != "" {
			return fmt.Errorf("publicUrl %q: bad port", s)
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return fmt.Errorf("publicUrl %q: empty port", s)
	}
	return nil
}

// protectedResourceDocument is the RFC 9728 §2 document.
type protectedResourceDocument struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers,omitempty"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceName           string   `json:"resource_name,omitempty"`
}

// MetadataHandler serves the endpoint's RFC 9728 document (AU-5), to be
// mounted at MetadataPath(ep.Path). It returns nil when the endpoint's
// strategy exposes no OAuth metadata: the caller mounts nothing then, and
// the path answers whatever the mux answers for unknown paths.
//
// The document needs no authentication, allows any origin (browser-based
// clients fetch it cross-origin) and answers GET, HEAD and OPTIONS only.
// The resource is computed per request, like the audience check.
func MetadataHandler(ep EndpointAuth) http.Handler {
	md, ok := MetadataOf(ep.Strategy)
	if !ok {
		return nil
	}
	if ep.ResourceName != "" {
		md.ResourceName = ep.ResourceName
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		switch r.Method {
		case http.MethodGet, http.MethodHead:
		case http.MethodOptions:
			h.Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
			h.Set("Access-Control-Allow-Headers", "*")
			h.Set("Access-Control-Max-Age", "86400")
			w.WriteHeader(http.StatusNoContent)
			return
		default:
			h.Set("Allow", "GET, HEAD, OPTIONS")
			http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
			return
		}
		body, err := json.Marshal(protectedResourceDocument{
			Resource:               ResourceURL(r, ep.PublicURL, ep.Path),
			AuthorizationServers:   md.AuthorizationServers,
			ScopesSupported:        md.ScopesSupported,
			BearerMethodsSupported: []string{"header"},
			ResourceName:           md.ResourceName,
		})
		if err != nil {
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", fmt.Sprint(len(body)))
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			_, _ = w.Write(body)
		}
	})
}
