// Package console serves the web console: static pages and small ES modules, embedded in the
// binary, that speak only the public /v1 API like any third-party client. Spectators follow
// lobbies live, anyone re-verifies a lobby's log in the browser, and admins run lobbies and money
// with their own bearer token. Nothing is rendered on the server and nothing is loaded from a
// third party: the blake2b and RFC 8785 libraries are committed copies under assets/vendor
// (scripts/vendor-console.sh).
package console

import (
	"embed"
	"io/fs"
	"net/http"
)

// all: because the vendored modules include files named with a leading underscore.
//
//go:embed all:assets
var embedded embed.FS

// Paths are the routes the console answers GET on, in chi's pattern syntax; the API mounts the
// Handler on each, so every other path keeps the API's own 404 and 405 problems.
var Paths = []string{"/", "/admin", "/standings", "/accounts/{accountId}", "/lobbies/{lobbyId}", "/assets/*"}

// contentSecurityPolicy allows only the console's own scripts, styles and API: no inline script,
// no eval, nothing from another origin, no framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the console's pages and assets.
func Handler() http.Handler {
	assets, err := fs.Sub(embedded, "assets")
	if err != nil {
		panic(err) // the embedded tree always has the folder
	}
	mux := http.NewServeMux()
	// One document for every page; its script picks the page's module from the path.
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, assets, "index.html")
	})
	mux.Handle("GET /{$}", page)
	mux.Handle("GET /admin", page)
	mux.Handle("GET /standings", page)
	mux.Handle("GET /accounts/{accountId}", page)
	mux.Handle("GET /lobbies/{lobbyId}", page)
	mux.Handle("GET /assets/", http.StripPrefix("/assets", http.FileServerFS(assets)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		// The assets change with the binary; revalidating is cheap on loopback and avoids stale
		// modules after an upgrade.
		h.Set("Cache-Control", "no-cache")
		mux.ServeHTTP(w, r)
	})
}
