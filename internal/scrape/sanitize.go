package scrape

import "github.com/inferscope/inferscope/internal/termsafe"

// clean makes untrusted text safe to print on one terminal line, cut to max
// runes (0 = no limit): see termsafe.Line.
func clean(s string, max int) string { return termsafe.Line(s, max) }
