package cli

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// shells are the shells inferscope completion writes for.
var shells = []string{"bash", "zsh", "fish", "powershell"}

// newCompletionCmd is inferscope completion SHELL: the script that teaches
// a shell inferscope's commands, flags and their values (dialects,
// severities, formats, scenarios), which calls back into inferscope for
// them.
func newCompletionCmd() *cobra.Command {
	cmd := newCommand(commandSpec{
		use:   "completion bash|zsh|fish|powershell",
		short: "a shell completion script for inferscope's commands, flags and their values",
		long: `Writes the script that completes inferscope's commands, flags and the values
flags take (dialects, severities, formats, scenarios, sort keys) in a shell.

  bash   source <(inferscope completion bash)  (needs bash 4.1; put it in
         ~/.bashrc, or write it to /etc/bash_completion.d/inferscope)
  zsh    inferscope completion zsh > "${fpath[1]}/_inferscope"  (with compinit)
  fish   inferscope completion fish > ~/.config/fish/completions/inferscope.fish
  powershell
         inferscope completion powershell | Out-String | Invoke-Expression`,
		exits: []exitStatus{{ExitOK, "the script written"}},
		args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 || !slices.Contains(shells, args[0]) {
				return usagef("inferscope completion takes one of: "+strings.Join(shells, ", "), "give the shell: inferscope completion bash|zsh|fish|powershell")
			}
			return nil
		},
		run: func(cmd *cobra.Command, args []string) error {
			root, out := cmd.Root(), cmd.OutOrStdout()
			var err error
			switch args[0] {
			case "bash":
				err = root.GenBashCompletionV2(out, true)
			case "zsh":
				err = root.GenZshCompletion(out)
			case "fish":
				err = root.GenFishCompletion(out, true)
			case "powershell":
				err = root.GenPowerShellCompletionWithDesc(out)
			}
			if err != nil {
				return writeError(err)
			}
			return nil
		},
	})
	cmd.ValidArgs = shells
	return cmd
}
