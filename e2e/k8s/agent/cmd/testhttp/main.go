// Command testhttp is the e2e smoke test's container (image "keep/testhttp").
//
//	testhttp [--addr IP] [--port N]   serve: / (hello + hostname + IP), /healthz, /resolve?name=N
//	testhttp get URL [--wait S]       GET URL (retrying up to S seconds), print the body; exit 1 on failure
//	testhttp resolve NAME [--wait S]  resolve NAME (retrying), print the addresses; exit 1 on failure
//
// The listen address defaults to $POD_IP, then $KEEP_E2E_POD_IP, then 127.0.0.1.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 && (os.Args[1] == "get" || os.Args[1] == "resolve") {
		os.Exit(client(os.Args[1], os.Args[2:]))
	}
	fs := flag.NewFlagSet("testhttp", flag.ExitOnError)
	addr := fs.String("addr", firstNonEmpty(os.Getenv("POD_IP"), os.Getenv("KEEP_E2E_POD_IP"), "127.0.0.1"), "listen IP")
	port := fs.String("port", firstNonEmpty(os.Getenv("PORT"), "8080"), "listen port")
	_ = fs.Parse(os.Args[1:])
	host, _ := os.Hostname()
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/resolve", func(w http.ResponseWriter, r *http.Request) {
		ips, err := net.LookupHost(r.URL.Query().Get("name"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		fmt.Fprintln(w, strings.Join(ips, " "))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s %s\n", host, *addr)
	})
	ln, err := net.Listen("tcp", net.JoinHostPort(*addr, *port))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("testhttp: %s serving on %s\n", host, ln.Addr())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		s := <-sig
		fmt.Printf("testhttp: %v, shutting down\n", s)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func client(verb string, args []string) int {
	fs := flag.NewFlagSet(verb, flag.ExitOnError)
	wait := fs.Duration("wait", 30*time.Second, "keep retrying this long")
	var target string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		target, args = args[0], args[1:]
	}
	_ = fs.Parse(args)
	if target == "" && fs.NArg() > 0 {
		target = fs.Arg(0)
	}
	deadline := time.Now().Add(*wait)
	var lastErr error
	for {
		switch verb {
		case "resolve":
			ips, err := net.LookupHost(target)
			if err == nil {
				fmt.Println(strings.Join(ips, " "))
				return 0
			}
			lastErr = err
		case "get":
			c := &http.Client{Timeout: 3 * time.Second}
			resp, err := c.Get(target)
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 {
					fmt.Print(string(b))
					return 0
				}
				err = fmt.Errorf("HTTP %d: %s", resp.StatusCode, b)
			}
			lastErr = err
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "%s %s: %v\n", verb, target, lastErr)
			return 1
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func firstNonEmpty(v ...string) string {
	for _, s := range v {
		if s != "" {
			return s
		}
	}
	return ""
}
