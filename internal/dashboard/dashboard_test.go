package dashboard

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reprolab/repro/internal/exitcode"
	"github.com/reprolab/repro/internal/runs/runstest"
)

// hostile is text a sample, an input or a record could carry to break out
// of a page.
const hostile = `</td><script>alert("x")</script><img src=x onerror=alert(1)>`

// store makes a home with run A (HumanEval/1 fails on a hostile input) and
// run B (HumanEval/1 passes) on another image.
func store(t *testing.T) (home, a, b string) {
	t.Helper()
	home = t.TempDir()
	a = runstest.HumanEvalRun(t, home, []runstest.Sample{
		{Task: "HumanEval/0", Pass: true},
		{Task: "HumanEval/1", Solution: hostile, FailingInput: `["` + strings.ReplaceAll(hostile, `"`, `\"`) + `"]`, Reason: "AssertionError: " + hostile},
	}, runstest.HumanEvalOptions{})
	b = runstest.HumanEvalRun(t, home, []runstest.Sample{
		{Task: "HumanEval/0", Pass: true},
		{Task: "HumanEval/1", Pass: true},
	}, runstest.HumanEvalOptions{ImageID: "sha256:" + strings.Repeat("9", 64)})
	return home, a, b
}

// serve runs s on a loopback port through Listen and Serve, as `repro
// serve` does, and returns its base URL.
func serve(t *testing.T, s *Server, addr string, allowRemote bool) string {
	t.Helper()
	l, loopback, err := Listen(addr, allowRemote)
	if err != nil {
		t.Fatal(err)
	}
	s.Loopback = loopback
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return "http://127.0.0.1:" + port
}

func get(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// raw sends a request line as written (no client-side path cleaning) and
// returns the response's status code and body.
func raw(t *testing.T, base, target, host string) (int, string) {
	t.Helper()
	u, _ := url.Parse(base)
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if host == "" {
		host = u.Host
	}
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", target, host)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("GET %q: %v", target, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	return resp.StatusCode, string(b)
}

func TestRunListAndFilters(t *testing.T) {
	home, a, b := store(t)
	broken := runstest.HumanEvalRun(t, home, nil, runstest.HumanEvalOptions{Dataset: "MBPP+"})
	os.WriteFile(filepath.Join(home, "runs", broken, "record.json"), []byte("{"), 0o644)
	base := serve(t, &Server{Home: home}, "127.0.0.1:0", false)

	code, body := get(t, base+"/")
	if code != 200 || !strings.Contains(body, a) || !strings.Contains(body, b) || !strings.Contains(body, broken) || !strings.Contains(body, "3 of 3 runs") {
		t.Fatalf("run list: %d\n%s", code, body)
	}
	for _, tc := range []struct {
		query string
		want  []string
		not   []string
	}{
		{"status=ok", []string{a, b}, []string{broken}},
		{"status=unreadable", []string{broken}, []string{a, b}},
		{"kind=humaneval&dataset=HumanEvalPlus-v0.1.10", []string{a, b}, []string{broken}},
		{"kind=edm-fid", nil, []string{a, b, broken}},
	} {
		code, body := get(t, base+"/?"+tc.query)
		if code != 200 {
			t.Errorf("?%s: %d", tc.query, code)
		}
		for _, id := range tc.want {
			if !strings.Contains(body, id) {
				t.Errorf("?%s does not list %s", tc.query, id)
			}
		}
		for _, id := range tc.not {
			if strings.Contains(body, id) {
				t.Errorf("?%s lists %s", tc.query, id)
			}
		}
	}
}

func TestRunPageAndCompare(t *testing.T) {
	home, a, b := store(t)
	base := serve(t, &Server{Home: home}, "127.0.0.1:0", false)
	code, body := get(t, base+"/runs/"+a)
	if code != 200 || !strings.Contains(body, "✔ verified") || !strings.Contains(body, `<a href="/">`) || !strings.Contains(body, "HumanEval/1") {
		t.Fatalf("run page: %d\n%s", code, body)
	}
	if code, body := get(t, base+"/runs/"+a+"?format=md"); code != 200 || !strings.Contains(body, "**Verified**") {
		t.Fatalf("run page as Markdown: %d\n%s", code, body)
	}
	code, body = get(t, base+"/compare?a="+a+"&b="+b)
	if code != 200 || !strings.Contains(body, "Tasks that changed verdict: 1 of 2") || !strings.Contains(body, "<td>HumanEval/1</td>") ||
		!strings.Contains(body, strings.Repeat("9", 64)) {
		t.Fatalf("compare page: %d\n%s", code, body)
	}
	for _, u := range []string{"/compare?a=" + a, "/compare?a=" + a + "&b=" + a[:20], "/runs/" + a[:20], "/runs/" + a[:len(a)-1], "/compare?a=" + a[:len(a)-1] + "&b=" + b, "/runs/" + a + "?format=pdf", "/nothing"} {
		if code, _ := get(t, base+u); code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", u, code)
		}
	}
}

// TestHTMLInjection: a sample's text, a failing input, a reason and a
// record's dataset name reach every page as text, never as markup.
func TestHTMLInjection(t *testing.T) {
	home, a, b := store(t)
	c := runstest.HumanEvalRun(t, home, []runstest.Sample{{Task: hostile, FailingInput: `[1]`, Reason: hostile}}, runstest.HumanEvalOptions{Dataset: hostile, Hostname: hostile})
	base := serve(t, &Server{Home: home}, "127.0.0.1:0", false)
	for _, u := range []string{"/", "/?dataset=" + url.QueryEscape(hostile), "/runs/" + a, "/runs/" + c, "/compare?a=" + a + "&b=" + b, "/compare?a=" + a + "&b=" + c} {
		code, body := get(t, base+u)
		if code != 200 {
			t.Errorf("GET %s: %d", u, code)
		}
		if strings.Contains(body, "<script") || strings.Contains(body, "<img") {
			t.Errorf("GET %s: hostile text reached the page as markup", u)
		}
		if !strings.Contains(body, "&lt;script&gt;") {
			t.Errorf("GET %s: hostile text is not shown as text", u)
		}
	}
}

// TestPathTraversal: no URL reaches a file outside what a page shows.
func TestPathTraversal(t *testing.T) {
	home, a, _ := store(t)
	secret := "SECRET-" + strings.Repeat("7", 20)
	os.WriteFile(filepath.Join(home, "secret.txt"), []byte(secret), 0o644)
	key, err := os.ReadFile(filepath.Join(home, "keys", "run-signing.key"))
	if err != nil {
		t.Fatal(err)
	}
	keyBody := strings.Split(string(key), "\n")[1]
	base := serve(t, &Server{Home: home}, "127.0.0.1:0", false)
	for _, target := range []string{
		"/runs/../secret.txt", "/runs/..%2fsecret.txt", "/runs/..%2F..%2Fsecret.txt", "/runs/%2e%2e/keys/run-signing.key",
		"/runs/" + a + "/../../keys/run-signing.key", "/runs/" + a + "%2f..%2f..%2fsecret.txt", "/runs/" + a + "/eval_results.json",
		"/../secret.txt", "/secret.txt", "/keys/run-signing.key", "/compare?a=../secret.txt&b=../keys/run-signing.key",
		"/compare?a=" + a + "&b=..%2f..%2fsecret.txt", "/runs/" + a + "%00", "//secret.txt", "/runs/..\\secret.txt",
	} {
		code, body := raw(t, base, target, "")
		if strings.Contains(body, secret) || strings.Contains(body, keyBody) || strings.Contains(body, `"base_fail_tests"`) {
			t.Errorf("GET %s (%d) served a file", target, code)
		}
		if code == http.StatusOK {
			t.Errorf("GET %s: 200", target)
		}
	}
}

// TestSymlinkOut: a run folder that is a symbolic link to a run outside
// the store is not listed or served; a result file that links out is not
// followed, and the run shows as not verified.
func TestSymlinkOut(t *testing.T) {
	home, a, _ := store(t)
	outside := t.TempDir()
	elsewhere := runstest.HumanEvalRun(t, outside, []runstest.Sample{{Task: "HumanEval/OUTSIDE", Pass: true}}, runstest.HumanEvalOptions{})
	linked := "humaneval-20260101T000000Z-0badc0de"
	if err := os.Symlink(filepath.Join(outside, "runs", elsewhere), filepath.Join(home, "runs", linked)); err != nil {
		t.Fatal(err)
	}
	secret := `{"eval": {"HumanEval/SECRET": []}}`
	os.WriteFile(filepath.Join(outside, "results.json"), []byte(secret), 0o644)
	res := filepath.Join(home, "runs", a, "eval_results.json")
	os.Remove(res)
	if err := os.Symlink(filepath.Join(outside, "results.json"), res); err != nil {
		t.Fatal(err)
	}
	base := serve(t, &Server{Home: home}, "127.0.0.1:0", false)
	if _, body := get(t, base+"/"); strings.Contains(body, linked) {
		t.Errorf("run list shows the linked run folder")
	}
	if code, body := get(t, base+"/runs/"+linked); code != http.StatusNotFound || strings.Contains(body, "OUTSIDE") {
		t.Errorf("linked run folder served: %d", code)
	}
	code, body := get(t, base+"/runs/"+a)
	if code != 200 || strings.Contains(body, "SECRET") || !strings.Contains(body, "NOT verified") {
		t.Errorf("run with a linked result file: %d\n%s", code, body)
	}
}

func TestReadOnly(t *testing.T) {
	home, a, _ := store(t)
	base := serve(t, &Server{Home: home}, "127.0.0.1:0", false)
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		req, _ := http.NewRequest(m, base+"/runs/"+a, strings.NewReader("x"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s: %d, want 405", m, resp.StatusCode)
		}
	}
	resp, err := http.Get(base + "/runs/" + a)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script-src") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
}

// TestLoopbackHostOnly: on loopback, a request for another host name (a
// page that rebound its name to 127.0.0.1) is refused.
func TestLoopbackHostOnly(t *testing.T) {
	home, _, _ := store(t)
	base := serve(t, &Server{Home: home}, "127.0.0.1:0", false)
	port := base[strings.LastIndexByte(base, ':')+1:]
	for host, want := range map[string]int{
		"127.0.0.1:" + port: 200, "localhost:" + port: 200, "[::1]:" + port: 200,
		"attacker.example:" + port: http.StatusMisdirectedRequest, "127.0.0.1.attacker.example": http.StatusMisdirectedRequest,
	} {
		if code, _ := raw(t, base, "/", host); code != want {
			t.Errorf("Host %s: %d, want %d", host, code, want)
		}
	}
}

func TestCheckAddr(t *testing.T) {
	for addr, wantLoopback := range map[string]bool{"127.0.0.1:7878": true, "127.0.0.2:0": true, "[::1]:0": true, "localhost:0": true} {
		if lb, err := CheckAddr(addr, false); err != nil || lb != wantLoopback {
			t.Errorf("CheckAddr(%q) = %v, %v", addr, lb, err)
		}
	}
	for _, addr := range []string{"0.0.0.0:7878", ":7878", "[::]:7878", "192.0.2.1:80", "example.org:80", "[::ffff:10.0.0.1]:80", "[fe80::1%lo]:80"} {
		if _, err := CheckAddr(addr, false); exitcode.Of(err) != exitcode.Usage {
			t.Errorf("CheckAddr(%q) without --allow-remote: %v, want a usage error", addr, err)
		}
		if lb, err := CheckAddr(addr, true); err != nil || lb {
			t.Errorf("CheckAddr(%q, allowRemote) = %v, %v", addr, lb, err)
		}
	}
	for _, addr := range []string{"7878", "127.0.0.1"} {
		if _, err := CheckAddr(addr, true); exitcode.Of(err) != exitcode.Usage {
			t.Errorf("CheckAddr(%q): %v", addr, err)
		}
	}
}

// TestTokenRequiredWhenRemote: with --allow-remote every request needs the
// token, by query (then a cookie) or cookie.
func TestTokenRequiredWhenRemote(t *testing.T) {
	home, a, _ := store(t)
	token, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	base := serve(t, &Server{Home: home, Token: token}, "0.0.0.0:0", true)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, u := range []string{"/", "/runs/" + a, "/?token=", "/?token=" + token[:63], "/?token=" + token + "0", "/?token=" + strings.ToUpper(token)} {
		resp, err := noRedirect.Get(base + u)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || strings.Contains(string(b), a) {
			t.Errorf("GET %s without the token: %d", u, resp.StatusCode)
		}
	}
	req, _ := http.NewRequest("GET", base+"/runs/"+a, nil)
	req.AddCookie(&http.Cookie{Name: TokenCookie, Value: "wrong"})
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("wrong cookie: %v %v", resp.StatusCode, err)
	}
	resp, err := noRedirect.Get(base + "/runs/" + a + "?token=" + token)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/runs/"+a || len(resp.Cookies()) != 1 {
		t.Fatalf("token by query: %d %q %v", resp.StatusCode, resp.Header.Get("Location"), resp.Cookies())
	}
	ck := resp.Cookies()[0]
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode {
		t.Errorf("cookie %+v", ck)
	}
	req, _ = http.NewRequest("GET", base+"/runs/"+a, nil)
	req.AddCookie(ck)
	resp, err = http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("with the cookie: %v %v", resp.StatusCode, err)
	}
	resp.Body.Close()
}
