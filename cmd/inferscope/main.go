// Command inferscope reads an LLM inference server's Prometheus /metrics and
// says what the numbers mean. See the README for usage.
package main

import (
	"os"

	"github.com/inferscope/inferscope/internal/cli"
	"github.com/inferscope/inferscope/internal/iostreams"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], iostreams.System()))
}
