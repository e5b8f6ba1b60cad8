package cli

import (
	"fmt"

	"github.com/inferscope/inferscope/internal/iostreams"
)

// Check reports whether inferscope would accept args (without the program
// name) as a command line, without running it: the command exists, every
// flag is one it takes with a value of the right type, and it takes that
// many arguments. What only running can tell (a file missing, a server
// down, two flags that do not go together) is not checked. The docs' tests
// hold every command line the README and docs/ show to it.
func Check(args []string) error {
	io, _, _ := iostreams.Test("", false, 0)
	root := newRoot(io, args)
	cmd, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	if err := commandTypo(cmd, args); err != nil {
		return err
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return fmt.Errorf("%s: %w", cmd.CommandPath(), err)
	}
	if cmd.Runnable() {
		if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
			return fmt.Errorf("%s: %w", cmd.CommandPath(), err)
		}
	}
	return nil
}
