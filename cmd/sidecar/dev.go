package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/sidecar-dev/sidecar/config"
	"github.com/sidecar-dev/sidecar/proxy/core"
	"github.com/sidecar-dev/sidecar/proxy/devapi"
	"github.com/sidecar-dev/sidecar/proxy/doors"
)

// sidecar dev: the normal sidecar plus the dev listener, where
// proxy/devapi serves the platform's REST API and the playground in
// front of the sidecar's own contract routes.

const devUsage = `dev flags (besides serve's):
  --dev-listen ADDR       the dev listener, loopback only (default 127.0.0.1:8081)
  --dev-cut DURATION      cut :streamQuery streams after this long, as the platform
                          does (default 15m; 0: never)
  --dev-single-content-type
                          send the contract routes one Content-Type, not the
                          platform's duplicated application/json,application/json
`

// devFlags are sidecar dev's own flags.
type devFlags struct {
	listen            string
	cut               time.Duration
	singleContentType bool
}

func (d *devFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&d.listen, "dev-listen", "127.0.0.1:8081", "")
	fs.DurationVar(&d.cut, "dev-cut", devapi.DefaultCut, "")
	fs.BoolVar(&d.singleContentType, "dev-single-content-type", false, "")
}

// check refuses a dev listener that is not loopback: it has no
// authentication, and it calls the agent as the platform would.
func (d *devFlags) check() error {
	host, _, err := net.SplitHostPort(d.listen)
	if err != nil {
		return fmt.Errorf("--dev-listen %q: %v (want 127.0.0.1:PORT)", d.listen, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("--dev-listen %s is not a loopback address: the dev listener has no authentication, "+
			"so it listens on 127.0.0.1, [::1] or localhost only", d.listen)
	}
	if d.cut < 0 {
		return fmt.Errorf("--dev-cut %v is negative (0: never cut)", d.cut)
	}
	return nil
}

// loopback is addr (the contract listener's address from $PORT or the
// config, or another protocol's listen) on 127.0.0.1, unless it already
// names a loopback host: under sidecar dev the contract listener and the
// other doors are as unauthenticated as the dev listener, so only --listen
// may open them to other machines.
func loopback(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr // listening fails on it with its own message
	}
	if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
		return addr
	}
	return net.JoinHostPort("127.0.0.1", port)
}

// serveDev runs serve on ln with the dev listener beside it, and stops
// the dev listener once serve has drained: the emulator's calls go
// through the contract listener, so its drain ends them too.
func serveDev(ctx context.Context, d devFlags, cfg *config.Config, ln net.Listener, logger *zap.Logger,
	aio agentIO, lim serverLimits, out io.Writer) error {
	devLn, err := net.Listen("tcp", d.listen)
	if err != nil {
		ln.Close()
		return fmt.Errorf("dev listener on %s: %w", d.listen, err)
	}
	url := "http://" + devLn.Addr().String()
	getenv := func(name string) string { return envValue(aio.env, name) }
	opts := devapi.Options{Cut: d.cut, SingleContentType: d.singleContentType, Doors: devDoors(cfg, ln.Addr(), url, getenv)}
	if d.cut == 0 {
		opts.Cut = -1 // never
	}
	srv := &http.Server{
		Handler:           devapi.New(cfg, contractURL(ln.Addr()), opts),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          zap.NewStdLog(logger.Named("dev")),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(devLn) }()
	logger.Info("dev listening", zap.String("addr", devLn.Addr().String()), zap.String("contract", contractURL(ln.Addr())))
	fmt.Fprintf(out, "sidecar: platform contract on %s (as in production)\n", ln.Addr())
	fmt.Fprintf(out, "dev: the platform's REST API and the playground on %s\n", url)

	// The passthrough is a proxy in front of the contract listener, on
	// loopback: the URL it says it was asked on (X-Forwarded-*) is the
	// one a door advertises. Under sidecar dev every listener is on
	// loopback (loopback), so its callers are this machine's.
	cfg.TrustedProxies = append(slices.Clone(cfg.TrustedProxies), netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128"))
	err = serve(ctx, cfg, ln, logger, aio, lim)

	// What is still open has had its contract call ended by the drain.
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if srv.Shutdown(shutdownCtx) != nil {
		srv.Close()
	}
	if e := <-served; !errors.Is(e, http.ErrServerClosed) && err == nil {
		err = fmt.Errorf("dev listener: %w", e)
	}
	return err
}

// devDoors are cfg's enabled doors for the playground to list, in the
// order they open, each with its URL (its listener's, the contract
// listener's at contract for the platform's and a mounted door's, then
// its mount and the path its section gives, MCP's) and the example of
// its registration for that URL. A mounted door also gets its URL
// through the passthrough of the dev listener at dev, with the example
// for that URL, and, where getenv gives Agent Platform's variables, its
// public URL there.
func devDoors(cfg *config.Config, contract net.Addr, dev string, getenv func(string) string) []devapi.Door {
	// Its error is serve's one warning (warnPlatformVars).
	platform, _ := core.PlatformBase(getenv)
	// The dev listener's passthrough to the contract listener's root.
	through := dev + strings.TrimSuffix(devapi.PassthroughPath("/"), "/")
	var list []devapi.Door
	add := func(name, listener string, section *config.Door) {
		door := devapi.Door{Protocol: name, URL: listener}
		for _, d := range doors.All {
			if d.Name != name {
				continue
			}
			door.URL = d.URL(listener, section)
			if d.Example != nil {
				ex := d.Example(door.URL, section)
				door.Example = &ex
			}
			if section == nil || section.Mount == "" {
				break
			}
			door.Mount, door.Passthrough = section.Mount, d.URL(through, section)
			if d.Example != nil {
				ex := d.Example(door.Passthrough, section)
				door.PassthroughExample = &ex
			}
			if platform != "" {
				door.Platform = d.URL(platform, section)
			}
		}
		door.Live = devLive(cfg, name, listener, section)
		list = append(list, door)
	}
	if cfg.Protocols.AgentPlatform {
		add(config.ProtocolAgentPlatform, contractURL(contract), nil)
	}
	for _, section := range cfg.Protocols.Doors {
		if section.Mount != "" {
			add(section.Name, contractURL(contract), section)
		} else {
			add(section.Name, listenURL(section.Listen), section)
		}
	}
	return list
}

// devLive are the conversations of the door name with section (nil for
// agent_platform) on listener (its own, or the contract listener's when it
// is mounted), each with its URL there and, mounted, its path on the dev
// listener's WebSocket passthrough.
func devLive(cfg *config.Config, name, listener string, section *config.Door) []devapi.Live {
	var list []devapi.Live
	for _, d := range doors.All {
		if d.Name != name || d.Live == nil || section == nil {
			continue
		}
		for _, c := range d.Live(cfg, section) {
			// The door's URL holds its mount; a route at its root is it.
			live := devapi.Live{Conversation: c, URL: strings.TrimSuffix(listener, "/") + mounted(section.Mount, c.Path)}
			if section.Mount != "" {
				live.Passthrough = devapi.WSPassthroughPath(mounted(section.Mount, c.Path))
			}
			list = append(list, live)
		}
	}
	return list
}

// mounted is the path p of a door mounted at mount ("" or "/": not
// under one) on its listener: "/live" for "/" under /live.
func mounted(mount, p string) string {
	if mount == "" || mount == "/" {
		return p
	}
	if p == "/" {
		return mount
	}
	return mount + p
}

// listenURL is the URL of a listen address (":8090", "127.0.0.1:8090"),
// on 127.0.0.1 when it names no host or every interface.
func listenURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// contractURL is where the emulator reaches the contract listener: its
// own address, 127.0.0.1 when it listens on every interface.
func contractURL(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return "http://" + a.String()
	}
	ip := tcp.IP
	if ip == nil || ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1)
	}
	return "http://" + net.JoinHostPort(ip.String(), fmt.Sprint(tcp.Port))
}
