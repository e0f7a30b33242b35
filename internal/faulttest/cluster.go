package faulttest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// BuildRPSD builds the rpsd binary of this tree into dir and returns its path.
func BuildRPSD(dir string) (string, error) {
	bin := filepath.Join(dir, "rpsd")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/commitreveal/rps/cmd/rpsd").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build rpsd: %w\n%s", err, out)
	}
	return bin, nil
}

// ClusterOptions configure StartCluster.
type ClusterOptions struct {
	// Bin is the rpsd binary.
	Bin string
	// DatabaseURL is the database every replica uses.
	DatabaseURL string
	// Replicas is how many rpsd processes to run.
	Replicas int
	// Proxy puts a Toxiproxy proxy of its own between each replica and the database (the
	// database URL must then name one host).
	Proxy bool
	// Env adds settings to every replica's environment.
	Env map[string]string
	// Dir receives each replica's output (replica-N.log) and working folder.
	Dir string
}

// Cluster is rpsd replicas built from this tree on one database, each reaching it, with Proxy,
// through a proxy of its own on loopback that the nemesis disturbs.
type Cluster struct {
	o        ClusterOptions
	toxics   *toxiproxy.ApiServer
	Replicas []*Replica
}

// Replica is one rpsd process, restarted on the same address after a kill.
type Replica struct {
	Name string
	// URL is the base URL of its API, the same across restarts.
	URL   string
	addr  string
	env   []string
	dir   string
	bin   string
	proxy *toxiproxy.Proxy // nil without Proxy

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{}
	paused bool
}

// StartCluster starts the proxies and the replicas and waits until every replica is ready.
func StartCluster(o ClusterOptions) (*Cluster, error) {
	c := &Cluster{o: o, toxics: toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())}
	for i := range o.Replicas {
		r := &Replica{Name: fmt.Sprintf("replica-%d", i), bin: o.Bin, dir: filepath.Join(o.Dir, fmt.Sprintf("replica-%d", i))}
		if err := os.MkdirAll(r.dir, 0o755); err != nil {
			return c, err
		}
		addr, err := freeAddr()
		if err != nil {
			return c, err
		}
		r.addr, r.URL = addr, "http://"+addr
		dbURL := o.DatabaseURL
		if o.Proxy {
			u, err := url.Parse(o.DatabaseURL)
			if err != nil || strings.Contains(u.Host, ",") {
				return c, fmt.Errorf("a proxied database URL names one host: %q", u.Redacted())
			}
			r.proxy = toxiproxy.NewProxy(c.toxics, r.Name, "127.0.0.1:0", u.Host)
			if err := r.proxy.Start(); err != nil {
				return c, fmt.Errorf("start the proxy of %s: %w", r.Name, err)
			}
			u.Host = r.proxy.Listen
			dbURL = u.String()
		}
		env := map[string]string{"DATABASE_URL": dbURL, "RPSD_ADDR": addr}
		for k, v := range o.Env {
			env[k] = v
		}
		r.env = childEnv(env)
		c.Replicas = append(c.Replicas, r)
	}
	// One at a time: the first migrates the database and creates the admin.
	for _, r := range c.Replicas {
		if err := r.Start(); err != nil {
			return c, err
		}
	}
	return c, nil
}

// URLs are the replicas' base URLs.
func (c *Cluster) URLs() []string {
	out := make([]string, len(c.Replicas))
	for i, r := range c.Replicas {
		out[i] = r.URL
	}
	return out
}

// Close stops every replica (a stopped one is continued first) and every proxy.
func (c *Cluster) Close() {
	for _, r := range c.Replicas {
		r.Kill()
		if r.proxy != nil {
			r.proxy.Stop()
		}
	}
}

// childEnv is this process's environment without rpsd's settings, plus env.
func childEnv(env map[string]string) []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name == "DATABASE_URL" || strings.HasPrefix(name, "RPSD_") {
			continue
		}
		out = append(out, kv)
	}
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	return addr, l.Close() // only its free port was wanted
}

// Start starts the process and waits until it is ready.
func (r *Replica) Start() error {
	r.mu.Lock()
	log, err := os.OpenFile(filepath.Join(r.dir, "..", r.Name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		r.mu.Unlock()
		return err
	}
	fmt.Fprintf(log, "--- start %s\n", time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(r.bin)
	cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = r.env, r.dir, log, log
	// The kernel kills a replica whose test process died, whatever the way it went.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		r.mu.Unlock()
		log.Close()
		return fmt.Errorf("start %s: %w", r.Name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		log.Close()
		close(done)
	}()
	r.cmd, r.done, r.paused = cmd, done, false
	r.mu.Unlock()
	return r.waitReady(done)
}

func (r *Replica) waitReady(done chan struct{}) error {
	client := &http.Client{Timeout: 2 * time.Second}
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		select {
		case <-done:
			return fmt.Errorf("%s exited before it was ready (see %s.log)", r.Name, r.Name)
		default:
		}
		resp, err := client.Get(r.URL + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	return fmt.Errorf("%s not ready after 90 s", r.Name)
}

// Kill sends SIGKILL (continuing a stopped process first) and waits for the process to be gone.
func (r *Replica) Kill() {
	r.mu.Lock()
	cmd, done := r.cmd, r.done
	r.cmd = nil
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

// Pause stops the process (SIGSTOP) until Resume.
func (r *Replica) Pause() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return errors.New(r.Name + " is not running")
	}
	r.paused = true
	return r.cmd.Process.Signal(syscall.SIGSTOP)
}

// Resume continues a paused process (SIGCONT).
func (r *Replica) Resume() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil || !r.paused {
		return nil
	}
	r.paused = false
	return r.cmd.Process.Signal(syscall.SIGCONT)
}

// AddToxic adds a Toxiproxy toxic to the replica's connections to the database (existing and
// new ones).
func (r *Replica) AddToxic(name, kind, stream string, attributes map[string]any) error {
	if r.proxy == nil {
		return errors.New(r.Name + " has no proxy")
	}
	body, err := json.Marshal(map[string]any{"name": name, "type": kind, "stream": stream, "attributes": attributes})
	if err != nil {
		return err
	}
	_, err = r.proxy.Toxics.AddToxicJson(bytes.NewReader(body))
	return err
}

// RemoveToxic removes a toxic that AddToxic added.
func (r *Replica) RemoveToxic(name string) error {
	return r.proxy.Toxics.RemoveToxic(context.Background(), name)
}

// Cut closes every connection of the replica to the database and refuses new ones until Mend.
func (r *Replica) Cut() { r.proxy.Stop() }

// Mend lets the replica reach the database again.
func (r *Replica) Mend() error {
	for attempt := 0; ; attempt++ {
		err := r.proxy.Start()
		if err == nil || errors.Is(err, toxiproxy.ErrProxyAlreadyStarted) || attempt == 50 {
			return err
		}
		time.Sleep(20 * time.Millisecond) // the port of the closed listener may not be free yet
	}
}
