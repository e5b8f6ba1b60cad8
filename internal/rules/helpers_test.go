package rules_test

import (
	"os"
	"path/filepath"

	"github.com/inferscope/inferscope/internal/rules"
)

// writeRules writes a set as dir/rules.yml.
func writeRules(dir string, set *rules.Set, f rules.Format) error {
	out, err := os.Create(filepath.Join(dir, "rules.yml"))
	if err != nil {
		return err
	}
	if err := set.Write(out, f); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
