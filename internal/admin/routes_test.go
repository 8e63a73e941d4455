package admin

import (
	"go/ast"
	"go/parser"
	"go/token"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/core"
)

// Every declared route is served by the pattern it declares, once (CO-9).
func TestEveryRouteServedAsDeclaredCO9(t *testing.T) {
	ts := serve(t, Options{})
	seen := map[string]bool{}
	for _, r := range Routes() {
		if seen[r.Pattern] {
			t.Errorf("%s declared twice", r.Pattern)
		}
		seen[r.Pattern] = true
		params := make([]string, strings.Count(r.Pattern, "{"))
		for i := range params {
			params[i] = "x"
		}
		req := httptest.NewRequest(r.Method(), r.Path(params...), nil)
		if _, pattern := ts.mux.Handler(req); pattern != r.Pattern {
			t.Errorf("%s %s is served by %q, want %q", req.Method, req.URL.Path, pattern, r.Pattern)
		}
		if (r.Action == "") != (r.Method() == "GET" || r.Pattern == RoutePolicyTest.Pattern) {
			t.Errorf("%s: a command and only a command names the action it is recorded under (action %q)", r.Pattern, r.Action)
		}
	}
	if len(seen) < 25 {
		t.Fatalf("%d routes declared; the API has at least 25", len(seen))
	}
}

// A route's path is its pattern with each parameter escaped in its place, as
// the client sends it (CO-9).
func TestRoutePathCO9(t *testing.T) {
	if got := RouteApplyRefresh.Path("plan 1/2"); got != "/v1/refresh/plans/plan%201%2F2/apply" {
		t.Errorf("Path = %q", got)
	}
	if got := RouteInfo.Path(); got != "/v1/info" || RouteInfo.Method() != "GET" {
		t.Errorf("RouteInfo = %s %q", RouteInfo.Method(), got)
	}
	for _, call := range []func(){
		func() { RouteApplyRefresh.Path() },
		func() { RouteInfo.Path("extra") },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("a wrong number of parameters did not panic")
				}
			}()
			call()
		}()
	}
}

// No admin path is written outside its declaration: the server, the client,
// the gateway's console and the CLI read the route (CO-9).
func TestNoAdminPathWrittenTwiceCO9(t *testing.T) {
	declared := map[string]bool{}
	for _, r := range Routes() {
		_, p, _ := strings.Cut(r.Pattern, " ")
		declared[p] = true
	}
	fset := token.NewFileSet()
	files := 0
	for _, dir := range []string{".", "../gateway", "../../cmd/toolgate", "../../tui"} {
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			files++
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if ok {
					if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "route" && filepath.Dir(path) == "." {
						return false // the declaration itself
					}
				}
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(lit.Value)
				if err == nil && strings.Contains(s, "/v1/") {
					t.Errorf("%s: admin path %q written outside its route's declaration", fset.Position(lit.Pos()), s)
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if files < 50 {
		t.Fatalf("read %d files; the walk missed the packages", files)
	}
	for _, a := range []string{core.ActionRevokeConnection, core.ActionEndSession} {
		found := false
		for _, r := range Routes() {
			found = found || r.Action == a
		}
		if !found {
			t.Errorf("no route records %q", a)
		}
	}
}
