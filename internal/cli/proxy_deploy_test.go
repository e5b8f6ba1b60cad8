package cli

import (
	"bufio"
	"bytes"
	"debug/elf"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/inferscope/inferscope/internal/units"
)

// deployDir is the repository's deploy/ directory.
var deployDir = filepath.Join("..", "..", "deploy")

// proxyArgs reads a command line of the deployment files as the proxy
// would: it must be `proxy` and flags the proxy takes.
func proxyArgs(t *testing.T, where string, args []string) *proxyOptions {
	t.Helper()
	if len(args) == 0 || args[0] != "proxy" {
		t.Fatalf("%s: %q does not run the proxy", where, args)
	}
	o, _, err := parseProxy(args[1:])
	if err != nil {
		t.Fatalf("%s: %q: %v", where, args, err)
	}
	return o
}

// port is the port of a listen address such as :9464 or 127.0.0.1:9464.
func port(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	n, err2 := strconv.Atoi(p)
	if err != nil || err2 != nil {
		t.Fatalf("%q has no port", addr)
	}
	return n
}

// TestDeploySystemd: the unit's command line is one the proxy takes, and
// systemd waits for the drain before it kills: a stop timeout longer than
// --drain-timeout, after SIGTERM. systemd-analyze verify, where it is
// installed, finds nothing to say about the unit.
func TestDeploySystemd(t *testing.T) {
	path := filepath.Join(deployDir, "systemd", "inferscope-proxy.service")
	unit := readUnit(t, path)
	exec0 := strings.Fields(unit["Service.ExecStart"])
	if len(exec0) < 2 || filepath.Base(exec0[0]) != "inferscope" {
		t.Fatalf("ExecStart %q does not run inferscope", unit["Service.ExecStart"])
	}
	o := proxyArgs(t, path, exec0[1:])
	stop, err := units.ParseDuration(unit["Service.TimeoutStopSec"])
	if err != nil || stop <= o.drain {
		t.Errorf("TimeoutStopSec %q does not leave the drain (%v) its time before SIGKILL", unit["Service.TimeoutStopSec"], o.drain)
	}
	if sig := unit["Service.KillSignal"]; sig != "" && sig != "SIGTERM" {
		t.Errorf("KillSignal %s: the proxy drains on SIGTERM", sig)
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze is not installed: the unit was only parsed")
		return
	}
	// verify needs the binary the unit names: this test's own stands in.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(t.TempDir(), "inferscope-proxy.service")
	if err := os.WriteFile(tmp, bytes.Replace(b, []byte("ExecStart="+exec0[0]), []byte("ExecStart="+self), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", tmp).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// readUnit reads a systemd unit's settings as "Section.Key" (the last of
// a repeated key).
func readUnit(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	unit, section := map[string]string{}, ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[' && line[len(line)-1] == ']':
			section = line[1 : len(line)-1]
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s: cannot read %q", path, line)
			}
			unit[section+"."+strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return unit
}

// TestDeployContainer: the image's command is one the proxy takes, it
// stops on SIGTERM as a user that is not root, and its build line makes a
// static binary (built here, unless -short: no libc to load, the version
// set).
func TestDeployContainer(t *testing.T) {
	path := filepath.Join(deployDir, "container", "Dockerfile")
	ins := readDockerfile(t, path)
	if from := ins["FROM"]; len(from) != 2 || from[1] != "scratch" {
		t.Errorf("FROM %q: the image must be the binary alone (FROM scratch)", from)
	}
	if user := ins["USER"]; len(user) != 1 || strings.HasPrefix(user[0], "0") || strings.HasPrefix(user[0], "root") {
		t.Errorf("USER %q: not root", user)
	}
	if sig := ins["STOPSIGNAL"]; len(sig) != 1 || sig[0] != "SIGTERM" {
		t.Errorf("STOPSIGNAL %q: the proxy drains on SIGTERM", sig)
	}
	var entry, cmd []string
	if len(ins["ENTRYPOINT"]) != 1 || json.Unmarshal([]byte(ins["ENTRYPOINT"][0]), &entry) != nil || len(entry) != 1 || entry[0] != "/inferscope" {
		t.Errorf("ENTRYPOINT %q: want [\"/inferscope\"]", ins["ENTRYPOINT"])
	}
	if len(ins["CMD"]) != 1 || json.Unmarshal([]byte(ins["CMD"][0]), &cmd) != nil {
		t.Fatalf("CMD %q: want a JSON list", ins["CMD"])
	}
	proxyArgs(t, path, cmd)
	var build string
	for _, run := range ins["RUN"] {
		if strings.Contains(run, "go build") {
			build = run
		}
	}
	if !strings.HasPrefix(build, "CGO_ENABLED=0 ") || !strings.Contains(build, "-o /out/inferscope ./cmd/inferscope") {
		t.Fatalf("the build line %q does not build a static /out/inferscope", build)
	}
	if testing.Short() {
		t.Skip("-short: the build line is not run")
	}
	out := t.TempDir()
	sh := exec.Command("sh", "-c", strings.ReplaceAll(strings.Replace(build, "/out/", out+"/", 1), "${VERSION}", "deploy-test"))
	sh.Dir = filepath.Join("..", "..")
	if b, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", build, err, b)
	}
	bin := filepath.Join(out, "inferscope")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the binary is dynamically linked (%v): an image FROM scratch has no loader", p.Type)
		}
	}
	if v, err := exec.Command(bin, "version").Output(); err != nil || !strings.HasPrefix(string(v), "inferscope deploy-test\n") {
		t.Errorf("the built binary says %q (%v), want its version set by the build line", v, err)
	}
}

// readDockerfile reads a Dockerfile's instructions by keyword, each
// instruction's arguments in order (continuation lines joined).
func readDockerfile(t *testing.T, path string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ins := map[string][]string{}
	var cur string
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		if cur == "" && (line == "" || line[0] == '#') {
			continue
		}
		cont := strings.HasSuffix(line, `\`)
		cur += strings.TrimSuffix(line, `\`)
		if cont {
			cur += " "
			continue
		}
		kw, args, _ := strings.Cut(cur, " ")
		kw = strings.ToUpper(kw)
		if kw == "FROM" {
			ins[kw] = nil // the image is the last stage
		}
		ins[kw] = append(ins[kw], strings.TrimSpace(args))
		cur = ""
	}
	if from := ins["FROM"]; len(from) == 1 {
		ins["FROM"] = strings.Fields(from[0])
		ins["FROM"] = append([]string{"FROM"}, ins["FROM"]...)
	}
	return ins
}

// k8sDeployment and k8sService are what the test reads of the Kubernetes
// example; unknown fields fail the reading, so a misspelt one is caught.
type k8sDeployment struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name        string            `yaml:"name"`
		Labels      map[string]string `yaml:"labels"`
		Annotations map[string]string `yaml:"annotations"`
	} `yaml:"metadata"`
	Spec struct {
		Replicas int `yaml:"replicas"`
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Template struct {
			Metadata struct {
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"metadata"`
			Spec struct {
				TerminationGracePeriodSeconds *int           `yaml:"terminationGracePeriodSeconds"`
				Containers                    []k8sContainer `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type k8sService struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec struct {
		Selector map[string]string `yaml:"selector"`
		Ports    []struct {
			Name       string `yaml:"name"`
			Port       int    `yaml:"port"`
			TargetPort string `yaml:"targetPort"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

type k8sContainer struct {
	Name  string   `yaml:"name"`
	Image string   `yaml:"image"`
	Args  []string `yaml:"args"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	ReadinessProbe *k8sProbe `yaml:"readinessProbe"`
	LivenessProbe  *k8sProbe `yaml:"livenessProbe"`
	Lifecycle      struct {
		PreStop struct {
			Sleep *struct {
				Seconds int `yaml:"seconds"`
			} `yaml:"sleep"`
		} `yaml:"preStop"`
	} `yaml:"lifecycle"`
	Resources       map[string]map[string]string `yaml:"resources"`
	SecurityContext map[string]any               `yaml:"securityContext"`
}

type k8sProbe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
	PeriodSeconds    int `yaml:"periodSeconds"`
	FailureThreshold int `yaml:"failureThreshold"`
}

func (c *k8sContainer) port(name string) int {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return 0
}

func (c *k8sContainer) preStop() time.Duration {
	if s := c.Lifecycle.PreStop.Sleep; s != nil {
		return time.Duration(s.Seconds) * time.Second
	}
	return 0
}

// TestDeployKubernetes: in the sidecar example, the proxy's flags parse
// and point at the server in its pod, its probes are /readyz and /healthz
// on its metrics port, the Service goes to the proxy, and stopping the pod
// leaves the drain its time: the server serves until the proxy has
// drained, and the grace period covers both.
func TestDeployKubernetes(t *testing.T) {
	path := filepath.Join(deployDir, "kubernetes", "ollama-with-proxy.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var deploy k8sDeployment
	var svc k8sService
	for i, doc := range strings.Split(string(b), "\n---\n") {
		var kind struct {
			Kind string `yaml:"kind"`
		}
		if err := yaml.Unmarshal([]byte(doc), &kind); err != nil {
			t.Fatalf("%s, document %d: %v", path, i+1, err)
		}
		into := map[string]any{"Deployment": &deploy, "Service": &svc}[kind.Kind]
		if into == nil {
			t.Fatalf("%s, document %d: unexpected kind %q", path, i+1, kind.Kind)
		}
		dec := yaml.NewDecoder(strings.NewReader(doc))
		dec.KnownFields(true)
		if err := dec.Decode(into); err != nil {
			t.Fatalf("%s, document %d: %v", path, i+1, err)
		}
	}
	if deploy.Kind == "" || svc.Kind == "" || svc.Spec.Selector["app"] != deploy.Spec.Template.Metadata.Labels["app"] {
		t.Fatal("want a Deployment and a Service that selects its pods")
	}
	pod := deploy.Spec.Template.Spec
	var proxyC, server *k8sContainer
	for i := range pod.Containers {
		if c := &pod.Containers[i]; len(c.Args) > 0 && c.Args[0] == "proxy" {
			proxyC = c
		} else {
			server = c
		}
	}
	if proxyC == nil || server == nil {
		t.Fatal("want the proxy and the server it stands in front of")
	}
	o := proxyArgs(t, path, proxyC.Args)
	if up := "127.0.0.1:" + strconv.Itoa(server.port(server.Ports[0].Name)); o.upstream != up {
		t.Errorf("--upstream %s: the server in the pod listens on %s", o.upstream, up)
	}
	metricsPort, listenPort := port(t, o.metrics), port(t, o.listen)
	for _, pr := range []struct {
		probe *k8sProbe
		path  string
	}{{proxyC.ReadinessProbe, "/readyz"}, {proxyC.LivenessProbe, "/healthz"}} {
		if pr.probe == nil || pr.probe.HTTPGet.Path != pr.path || proxyC.port(pr.probe.HTTPGet.Port) != metricsPort {
			t.Errorf("want a probe of %s on the metrics port %d, got %+v", pr.path, metricsPort, pr.probe)
		}
	}
	if len(svc.Spec.Ports) != 1 || proxyC.port(svc.Spec.Ports[0].TargetPort) != listenPort {
		t.Errorf("the Service does not go to the proxy's port %d: %+v", listenPort, svc.Spec.Ports)
	}
	grace := 30 * time.Second // Kubernetes' default
	if g := pod.TerminationGracePeriodSeconds; g != nil {
		grace = time.Duration(*g) * time.Second
	}
	drained := proxyC.preStop() + o.drain
	switch {
	case proxyC.preStop() == 0:
		t.Error("the proxy has no preStop sleep: it would refuse connections before the Service stops sending them")
	case server.preStop() < drained:
		t.Errorf("the server stops after %v, before the proxy has drained (%v)", server.preStop(), drained)
	case grace < server.preStop()+5*time.Second:
		t.Errorf("the grace period %v does not cover the server's preStop (%v) and 5 s to exit", grace, server.preStop())
	}
	if deploy.Spec.Template.Metadata.Annotations["prometheus.io/port"] != strconv.Itoa(metricsPort) {
		t.Errorf("the scrape annotation's port is not the metrics port %d", metricsPort)
	}
}
