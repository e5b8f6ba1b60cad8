package scrape

import (
	"errors"
	"fmt"
	"strings"
)

// ParseHeader reads a --header argument, "Name: value", as curl takes it.
// The name must be an HTTP token; the value may not hold line breaks or other
// control characters (they would split the request). Errors never repeat
// the value: it is usually a secret.
func ParseHeader(s string) (name, value string, err error) {
	name, value, found := strings.Cut(s, ":")
	if !found {
		return "", "", errors.New("invalid --header: want 'Name: value' (no colon found)")
	}
	name = strings.TrimSpace(name)
	value = strings.Trim(value, " \t")
	if name == "" {
		return "", "", errors.New("invalid --header: the name before ':' is empty")
	}
	for i := 0; i < len(name); i++ {
		if !isTokenChar(name[i]) {
			return "", "", fmt.Errorf("invalid --header: %q is not a header name", clean(name, 60))
		}
	}
	for i := 0; i < len(value); i++ {
		if c := value[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return "", "", fmt.Errorf("invalid --header: the value of %s holds a control character", name)
		}
	}
	return name, value, nil
}

// isTokenChar reports an RFC 9110 tchar.
func isTokenChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
