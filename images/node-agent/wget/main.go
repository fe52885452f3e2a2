// The node agent's wget, built into the node agent image (images/node-agent/Dockerfile; without Docker,
// e2e/cluster/images.ts agentImage()) in place of busybox's wget applet. Debian 12's busybox 1.35 sends no TLS
// signature_algorithms extension, so a server built with Go 1.25 or later (our kube-apiservers) refuses its
// handshake (alert 40), and the agent could never see the new server ready. This program speaks Go's own TLS client instead.
//
// It implements what the agent script (src/drivers/static-pod-script.ts) uses, with busybox wget's meaning:
//
//	wget [-q] [-O FILE|-] [-T SECONDS] [--no-check-certificate] URL
//
// -q is accepted (there is no progress output to silence); -O - writes the body to stdout, -O FILE to FILE
// (created or truncated only once a 2xx arrived), no -O the last path element of the URL (index.html for none);
// -T gives up after that many seconds for the whole request (default 900, busybox's); --no-check-certificate
// skips verifying the server's certificate (otherwise the system roots, or SSL_CERT_FILE / SSL_CERT_DIR).
// Short options may be joined (-qO-, -T5), long ones take =VALUE or the next word.
//
// http and https, TLS 1.2 or later, HTTP/1.1, redirects followed, no proxy (the agent talks to its own node's
// address: an inherited https_proxy would only get in the way). Exit 0 only when the final answer is a 2xx and
// its body was written; otherwise one line on stderr (even with -q, as busybox) and exit 1; a usage error
// exits 2. A failed TLS handshake is said with "TLS" in the line: the agent script tells a TLS failure from
// a server that is down by that word.
//
// Static (CGO_ENABLED=0), no dependencies outside the standard library.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"time"
)

type options struct {
	output   string // "" = from the URL, "-" = stdout
	timeout  time.Duration
	insecure bool
	url      string
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func parse(args []string) (options, error) {
	o := options{timeout: 900 * time.Second}
	setTimeout := func(v string) error {
		n, err := strconv.ParseFloat(v, 64)
		if err != nil || n <= 0 {
			return usageError{fmt.Sprintf("bad timeout %q: a number of seconds above 0", v)}
		}
		o.timeout = time.Duration(n * float64(time.Second))
		return nil
	}
	var urls []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		// next takes the following word as the value of opt.
		next := func(opt string) (string, error) {
			if i+1 >= len(args) {
				return "", usageError{fmt.Sprintf("option %s needs a value", opt)}
			}
			i++
			return args[i], nil
		}
		switch {
		case a == "--":
			urls = append(urls, args[i+1:]...)
			i = len(args)
		case a == "--no-check-certificate":
			o.insecure = true
		case a == "--quiet":
		case a == "--output-document" || a == "--timeout":
			v, err := next(a)
			if err != nil {
				return o, err
			}
			if a == "--timeout" {
				if err := setTimeout(v); err != nil {
					return o, err
				}
			} else {
				o.output = v
			}
		case strings.HasPrefix(a, "--output-document="):
			o.output = strings.TrimPrefix(a, "--output-document=")
		case strings.HasPrefix(a, "--timeout="):
			if err := setTimeout(strings.TrimPrefix(a, "--timeout=")); err != nil {
				return o, err
			}
		case strings.HasPrefix(a, "--"):
			return o, usageError{fmt.Sprintf("unknown option %s", a)}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for j := 1; j < len(a); j++ {
				switch c := a[j]; c {
				case 'q':
				case 'O', 'T':
					v := a[j+1:]
					if v == "" {
						var err error
						if v, err = next("-" + string(c)); err != nil {
							return o, err
						}
					}
					if c == 'O' {
						o.output = v
					} else if err := setTimeout(v); err != nil {
						return o, err
					}
					j = len(a)
				default:
					return o, usageError{fmt.Sprintf("unknown option -%c", c)}
				}
			}
		default:
			urls = append(urls, a)
		}
	}
	if len(urls) != 1 {
		return o, usageError{fmt.Sprintf("one URL expected, got %d", len(urls))}
	}
	o.url = urls[0]
	return o, nil
}

// tlsError marks a failed handshake, so the message says TLS whatever the library's words are.
type tlsError struct {
	addr string
	err  error
}

func (e tlsError) Error() string {
	return fmt.Sprintf("TLS handshake with %s failed: %v", e.addr, e.err)
}
func (e tlsError) Unwrap() error { return e.err }

func client(o options) *http.Client {
	dialer := &net.Dialer{}
	tr := &http.Transport{
		Proxy:             nil,
		DialContext:       dialer.DialContext,
		DisableKeepAlives: true,
		// The handshake is ours, so its failure can be named as one.
		DialTLSContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			raw, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			conn := tls.Client(raw, &tls.Config{
				ServerName:         host,
				MinVersion:         tls.VersionTLS12,
				InsecureSkipVerify: o.insecure, // --no-check-certificate asked for exactly this
				NextProtos:         []string{"http/1.1"},
			})
			if err := conn.HandshakeContext(ctx); err != nil {
				raw.Close()
				return nil, tlsError{addr, err}
			}
			return conn, nil
		},
	}
	return &http.Client{Transport: tr}
}

// describe makes one line of an error: the URL package's `Get "…": ` prefix dropped (the URL is said once),
// a TLS alert after the handshake (TLS 1.3 sends a refused client certificate's that late) named as TLS.
func describe(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := err.Error()
	// crypto/tls starts its errors with "tls: " (a remote alert is an unexported type, seen only so).
	var alert tls.AlertError
	var rec tls.RecordHeaderError
	if !strings.Contains(msg, "TLS") && (strings.Contains(msg, "tls: ") || errors.As(err, &alert) || errors.As(err, &rec)) {
		msg = "TLS: " + msg
	}
	return strings.Join(strings.Fields(msg), " ")
}

func outputName(u *url.URL) string {
	name := path.Base(u.Path)
	if name == "/" || name == "." || name == "" {
		return "index.html"
	}
	return name
}

func fetch(o options) error {
	u, err := url.Parse(o.url)
	if err != nil {
		return usageError{fmt.Sprintf("bad URL %q: %v", o.url, err)}
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return usageError{fmt.Sprintf("unsupported URL %q: http:// or https:// only", o.url)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return usageError{fmt.Sprintf("bad URL %q: %v", o.url, err)}
	}
	req.Header.Set("User-Agent", "Wget")
	resp, err := client(o).Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%s: no answer within %v", u.Redacted(), o.timeout)
		}
		return fmt.Errorf("%s: %s", u.Redacted(), describe(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("server returned error: %s %s", resp.Proto, resp.Status)
	}
	var out io.Writer = os.Stdout
	if o.output != "-" {
		name := o.output
		if name == "" {
			name = outputName(resp.Request.URL)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return fmt.Errorf("can't open %s: %v", name, err)
		}
		defer f.Close()
		out = f
	}
	if _, err := io.Copy(out, resp.Body); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%s: the body did not arrive within %v", u.Redacted(), o.timeout)
		}
		return fmt.Errorf("%s: reading the body: %s", u.Redacted(), describe(err))
	}
	if f, ok := out.(*os.File); ok && f != os.Stdout {
		if err := f.Close(); err != nil {
			return fmt.Errorf("writing %s: %v", f.Name(), err)
		}
	}
	return nil
}

func main() {
	o, err := parse(os.Args[1:])
	if err == nil {
		err = fetch(o)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "wget: %s\n", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}
