package httpsafe_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"

	"github.com/inferscope/inferscope/internal/httpsafe"
)

// A reader of a server's JSON endpoint (llama.cpp's /slots, say): the
// user's headers go to that server only, the answer is read within the
// cap, and a server that answers more says which cap it met.
func ExampleNewClient() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer key" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, `[{"id":0,"is_processing":false}]`)
	}))
	defer srv.Close()
	origin, _ := url.Parse(srv.URL)
	read := func(limit int64) ([]byte, error) {
		c := httpsafe.NewClient(httpsafe.Options{Origin: origin, Headers: http.Header{"Authorization": {"Bearer key"}},
			MaxBytes: limit, Gzip: true})
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL+"/slots", nil)
		if err != nil {
			return nil, err
		}
		resp, err := c.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		return httpsafe.ReadAll(resp.Body, limit, resp.ContentLength)
	}
	for _, limit := range []int64{16, 1 << 10} {
		body, err := read(limit)
		var tooLarge *httpsafe.TooLargeError
		switch {
		case errors.As(err, &tooLarge):
			fmt.Printf("over the cap of %d bytes\n", tooLarge.Max)
		case err != nil:
			fmt.Println(err)
		default:
			fmt.Printf("%s\n", body)
		}
	}
	// Output:
	// over the cap of 16 bytes
	// [{"id":0,"is_processing":false}]
}
