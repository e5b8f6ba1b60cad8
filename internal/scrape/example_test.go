package scrape_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	"github.com/inferscope/inferscope/internal/scrape"
)

func ExampleResolve() {
	for _, target := range []string{"", "gpu-box:5000", "http://gpu-box:8000", "10.0.0.5:30000/custom", "scrape.prom", "runs/before", "-"} {
		t, err := scrape.Resolve(target)
		switch {
		case err != nil:
			fmt.Printf("%-22q error: %v\n", target, err)
		case t.URL != nil:
			fmt.Printf("%-22q GET %s\n", target, t.URL)
		case t.Stdin:
			fmt.Printf("%-22q stdin\n", target)
		default:
			fmt.Printf("%-22q file %s (%s)\n", target, t.Path, t.Why)
		}
	}
	// Output:
	// ""                     GET http://127.0.0.1:5000/metrics
	// "gpu-box:5000"         GET http://gpu-box:5000/metrics
	// "http://gpu-box:8000"  GET http://gpu-box:8000/metrics
	// "10.0.0.5:30000/custom" GET http://10.0.0.5:30000/custom
	// "scrape.prom"          file scrape.prom (it ends in .prom)
	// "runs/before"          file runs/before (it has a path but no port)
	// "-"                    stdin
}

func ExampleFetch() {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintln(w, "tabbyapi:requests_running 2")
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	// No path: /metrics is filled in.
	r, err := scrape.Fetch(context.Background(), srv.URL, scrape.Options{Timeout: 5 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s(%s, timed by the %s)\n", r.Body, r.ContentType, r.TimeSource)

	_, err = scrape.Fetch(context.Background(), srv.URL+"/nowhere", scrape.Options{})
	var e *scrape.Error
	if errors.As(err, &e) {
		fmt.Println(e.Kind, e.Status)
		fmt.Println(e.Hints[1])
	}
	// Output:
	// tabbyapi:requests_running 2
	// (text/plain; version=0.0.4, timed by the scrape)
	// not_found 404
	// tabbyAPI serves /metrics only when network.enable_metrics is true in config.yml
}

func ExampleSave() {
	r := &scrape.Result{
		Source:    "http://gpu-box:5000/metrics",
		Body:      []byte("tabbyapi:prompt_tokens_total 1234\n"),
		ScrapedAt: time.Date(2026, 3, 1, 12, 0, 0, 500, time.UTC),
	}
	if err := scrape.Save(os.Stdout, r); err != nil {
		fmt.Println(err)
	}
	// Output:
	// # inferscope: scraped_at=2026-03-01T12:00:00.0000005Z source=http://gpu-box:5000/metrics
	// tabbyapi:prompt_tokens_total 1234
}

func ExampleParseHeader() {
	name, value, err := scrape.ParseHeader("Authorization: Bearer sk-123")
	fmt.Printf("%s=%q %v\n", name, value, err)
	_, _, err = scrape.ParseHeader("Authorization Bearer sk-123")
	fmt.Println(err)
	// Output:
	// Authorization="Bearer sk-123" <nil>
	// invalid --header: want 'Name: value' (no colon found)
}
