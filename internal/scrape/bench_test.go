package scrape

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// benchBody is a synthetic exposition of about n bytes.
func benchBody(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "# TYPE tabbyapi:series_%d_total counter\ntabbyapi:series_%d_total %d\n", i, i, i*7919)
	}
	return b.Bytes()
}

func benchServer(b *testing.B, body []byte, gz bool) *httptest.Server {
	wire := body
	if gz {
		wire = gzipBytes(b, body)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		if gz {
			w.Header().Set("Content-Encoding", "gzip")
		}
		w.Write(wire)
	}))
	b.Cleanup(srv.Close)
	return srv
}

// BenchmarkFetchHTTP is one scrape of a ~20 KB tabbyAPI-sized body over
// loopback with a kept-alive connection, as a watch loop does.
func BenchmarkFetchHTTP(b *testing.B) {
	for _, tc := range []struct {
		name string
		size int
		gz   bool
	}{
		{"20KB", 20 << 10, false},
		{"20KB-gzip", 20 << 10, true},
		{"1MB", 1 << 20, false},
		{"1MB-gzip", 1 << 20, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			body := benchBody(tc.size)
			srv := benchServer(b, body, tc.gz)
			ctx := context.Background()
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Fetch(ctx, srv.URL, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkFetchFile(b *testing.B) {
	body := benchBody(20 << 10)
	path := filepath.Join(b.TempDir(), "s.prom")
	if err := os.WriteFile(path, append([]byte("# inferscope: scraped_at=2026-01-02T03:04:05Z source=x\n"), body...), 0o600); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Fetch(context.Background(), path, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkResolve(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		for _, s := range []string{"", "gpu-box:5000", "http://gpu-box:5000", "scrape.prom"} {
			resolve(s, fakeStat())
		}
	}
}
