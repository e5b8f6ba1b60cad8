package termsafe_test

import (
	"fmt"

	"github.com/inferscope/inferscope/internal/termsafe"
)

func ExampleText() {
	fmt.Println(termsafe.Text("Qwen3\x1b]0;pwned\x07-27B\x1b[2J\r"))
	// Output:
	// Qwen3-27B
}

func ExampleLine() {
	fmt.Println(termsafe.Line("Traceback:\n  \x1b[31mKeyError\x1b[0m 'tabbyapi'", 20))
	// Output:
	// Traceback: KeyError…
}

func ExampleShellQuote() {
	fmt.Println("curl -s " + termsafe.ShellQuote("http://gpu-box:5000/metrics") + " | head")
	fmt.Println("curl -s " + termsafe.ShellQuote("http://gpu-box:5000/metrics?a=1&b=2") + " | head")
	fmt.Println("head " + termsafe.ShellQuote("it's a scrape.prom"))
	// Output:
	// curl -s http://gpu-box:5000/metrics | head
	// curl -s 'http://gpu-box:5000/metrics?a=1&b=2' | head
	// head 'it'\''s a scrape.prom'
}
