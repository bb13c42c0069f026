package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// scripts are every shell script under deploy/.
func scripts(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".sh") {
			out = append(out, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 4 {
		t.Fatalf("found only %v", out)
	}
	return out
}

func TestScriptsSyntax(t *testing.T) {
	for _, s := range scripts(t) {
		if out, err := exec.Command("bash", "-n", s).CombinedOutput(); err != nil {
			t.Errorf("bash -n %s: %v\n%s", s, err, out)
		}
		if info, err := os.Stat(s); err == nil && !strings.HasSuffix(s, "lib.sh") && info.Mode()&0o111 == 0 {
			t.Errorf("%s is not executable", s)
		}
	}
	if _, err := exec.LookPath("shellcheck"); err != nil {
		t.Log("shellcheck not installed (apt-get install shellcheck): only bash -n checked")
		return
	}
	args := append([]string{"-x"}, scripts(t)...)
	if out, err := exec.Command("shellcheck", args...).CombinedOutput(); err != nil {
		t.Errorf("shellcheck: %v\n%s", err, out)
	}
}

// The fakes deploy.sh and query.sh meet instead of the network, gcloud and
// the sidecar: each records what it was asked and answers from files the
// test writes.
const fakeCurl = `#!/usr/bin/env bash
n=$(( $(cat "$FAKE/count" 2>/dev/null || echo 0) + 1 )); echo "$n" >"$FAKE/count"
method=GET out= data= hdr= url= flags=
while (($#)); do
  case $1 in
    -X) method=$2; shift ;;
    -o) out=$2; shift ;;
    -w) shift ;;
    -H) hdr=$2; shift ;;
    --data-binary) data=$2; shift ;;
    -*) flags+="$1 " ;;
    *) url=$1 ;;
  esac
  shift
done
echo "$method $url" >>"$FAKE/calls"
echo "$flags" >"$FAKE/flags.$n"
[[ $hdr == @* ]] && cp "${hdr#@}" "$FAKE/headers.$n"
[[ $data == @* ]] && cp "${data#@}" "$FAKE/body.$n"
status=$(cat "$FAKE/status.$n" 2>/dev/null || echo 200)
if [[ -n $out ]]; then cat "$FAKE/resp.$n" >"$out"; printf '%s' "$status"; else cat "$FAKE/resp.$n"; fi
`

const fakeGcloud = `#!/usr/bin/env bash
case "$*" in
  "auth print-access-token") echo tok-123 ;;
  "config get-value project") echo gcloud-proj ;;
  *) echo "fake gcloud: $*" >&2; exit 1 ;;
esac
`

const fakeSidecar = `#!/usr/bin/env bash
echo "$*" >>"$FAKE/sidecar-args"
[[ $1 == deploy-request ]] || exit 2
for a; do [[ $a == --update-mask ]] && { cat "$FAKE/mask"; exit; }; done
cat "$FAKE/request.json"
`

type fakes struct {
	dir  string // FAKE: records and canned answers
	path string // PATH with the fakes first
}

func newFakes(t *testing.T) *fakes {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"curl": fakeCurl, "gcloud": fakeGcloud, "sidecar": fakeSidecar} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return &fakes{dir: dir, path: bin + string(os.PathListSeparator) + os.Getenv("PATH")}
}

func (f *fakes) write(t *testing.T, name, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(f.dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (f *fakes) read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir, name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return string(b)
}

// run runs a script with a clean environment: the fakes, and env.
func (f *fakes) run(t *testing.T, script string, env []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{script}, args...)...)
	cmd.Env = append([]string{"PATH=" + f.path, "HOME=" + f.dir, "FAKE=" + f.dir, "POLL_INTERVAL=0"}, env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

func needJSONTool(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"jq", "python3"} {
		if _, err := exec.LookPath(tool); err == nil {
			return
		}
	}
	t.Skip("neither jq nor python3: the scripts cannot read JSON here")
}

const (
	opRunning = `{"name": "projects/p/locations/us-central1/reasoningEngines/123/operations/456", "metadata": {}}`
	opDone    = `{"name": "projects/p/locations/us-central1/reasoningEngines/123/operations/456", "done": true,
  "response": {"@type": "type.googleapis.com/google.cloud.aiplatform.v1.ReasoningEngine",
               "name": "projects/p/locations/us-central1/reasoningEngines/123", "displayName": "x"}}`
)

func TestDeployScript(t *testing.T) {
	needJSONTool(t)
	cfg := parse(t, pythonMap)
	body, err := CreateRequest(cfg, RequestOptions{DisplayName: "my-agent", Image: "us-central1-docker.pkg.dev/p/r/a:1", MinInstances: ptr(1)})
	if err != nil {
		t.Fatal(err)
	}
	mask, _ := UpdateMask(body)
	passArgs := []string{"--config", "sidecar.yaml", "--image", "us-central1-docker.pkg.dev/p/r/a:1", "--display-name", "my-agent", "--min-instances", "1"}
	const api = "https://us-central1-aiplatform.googleapis.com/v1/"

	setup := func(t *testing.T) *fakes {
		f := newFakes(t)
		f.write(t, "request.json", string(body))
		f.write(t, "mask", mask+"\n")
		return f
	}

	t.Run("create", func(t *testing.T) {
		f := setup(t)
		f.write(t, "resp.1", opRunning)
		f.write(t, "resp.2", `{"name": "projects/p/locations/us-central1/reasoningEngines/123/operations/456"}`)
		f.write(t, "resp.3", opDone)
		out, errOut, err := f.run(t, "agent-platform/deploy.sh", []string{"REGION=us-central1"}, passArgs...)
		if err != nil {
			t.Fatalf("deploy.sh: %v\n%s", err, errOut)
		}
		if out != "projects/p/locations/us-central1/reasoningEngines/123\n" {
			t.Errorf("stdout = %q, want the engine's resource name alone", out)
		}
		want := "POST " + api + "projects/gcloud-proj/locations/us-central1/reasoningEngines\n" +
			"GET " + api + "projects/p/locations/us-central1/reasoningEngines/123/operations/456\n" +
			"GET " + api + "projects/p/locations/us-central1/reasoningEngines/123/operations/456\n"
		if got := f.read(t, "calls"); got != want {
			t.Errorf("calls:\n%s\nwant (the project from gcloud, then polling until done):\n%s", got, want)
		}
		if got := f.read(t, "body.1"); got != string(body) {
			t.Errorf("sent body:\n%s\nwant what deploy-request wrote:\n%s", got, body)
		}
		if h := f.read(t, "headers.1"); !strings.Contains(h, "Authorization: Bearer tok-123\n") || !strings.Contains(h, "Content-Type: application/json") {
			t.Errorf("headers = %q", h)
		}
		if got, want := f.read(t, "sidecar-args"), "deploy-request --api-version v1 "+strings.Join(passArgs, " ")+"\n"; got != want {
			t.Errorf("sidecar called with %q, want %q (API_VERSION, then the arguments passed through)", got, want)
		}
		if !strings.Contains(errOut, "ENGINE_ID=123 REGION=us-central1") {
			t.Errorf("stderr does not say how to query: %s", errOut)
		}
	})

	t.Run("update", func(t *testing.T) {
		f := setup(t)
		f.write(t, "resp.1", opDone)
		out, errOut, err := f.run(t, "agent-platform/deploy.sh", []string{"REGION=us-central1", "PROJECT=p", "ENGINE_ID=123"}, passArgs...)
		if err != nil {
			t.Fatalf("deploy.sh: %v\n%s", err, errOut)
		}
		if want := "PATCH " + api + "projects/p/locations/us-central1/reasoningEngines/123?updateMask=" + mask + "\n"; f.read(t, "calls") != want {
			t.Errorf("calls:\n%s\nwant\n%s", f.read(t, "calls"), want)
		}
		if f.read(t, "body.1") != string(body) {
			t.Error("PATCH body differs from the create body")
		}
		if out != "projects/p/locations/us-central1/reasoningEngines/123\n" {
			t.Errorf("stdout = %q", out)
		}
	})

	t.Run("operation error", func(t *testing.T) {
		f := setup(t)
		f.write(t, "resp.1", `{"name": "projects/p/locations/us-central1/reasoningEngines/9/operations/1", "done": true,
			"error": {"code": 3, "message": "Failed to start the container"}}`)
		_, errOut, err := f.run(t, "agent-platform/deploy.sh", []string{"REGION=us-central1", "PROJECT=p"}, passArgs...)
		if err == nil || !strings.Contains(errOut, "Failed to start the container") {
			t.Errorf("err = %v, stderr = %s; want a failure showing the operation's error", err, errOut)
		}
	})

	t.Run("http error", func(t *testing.T) {
		f := setup(t)
		f.write(t, "resp.1", `{"error": {"code": 400, "message": "Invalid display name"}}`)
		f.write(t, "status.1", "400")
		_, errOut, err := f.run(t, "agent-platform/deploy.sh", []string{"REGION=us-central1", "PROJECT=p"}, passArgs...)
		if err == nil || !strings.Contains(errOut, "Invalid display name") || !strings.Contains(errOut, "HTTP 400") {
			t.Errorf("err = %v, stderr = %s; want a failure with the API's message", err, errOut)
		}
	})

	t.Run("dry run", func(t *testing.T) {
		f := setup(t)
		// No gcloud, no curl needed: remove them.
		os.Remove(filepath.Join(f.dir, "bin", "gcloud"))
		os.Remove(filepath.Join(f.dir, "bin", "curl"))
		out, errOut, err := f.run(t, "agent-platform/deploy.sh", []string{"REGION=europe-west4", "PROJECT=p", "DRY_RUN=1"}, passArgs...)
		if err != nil {
			t.Fatalf("deploy.sh: %v\n%s", err, errOut)
		}
		want := "POST https://europe-west4-aiplatform.googleapis.com/v1/projects/p/locations/europe-west4/reasoningEngines\n" +
			"Authorization: Bearer $(gcloud auth print-access-token)\nContent-Type: application/json\n\n" + string(body)
		if out != want {
			t.Errorf("DRY_RUN printed:\n%s\nwant:\n%s", out, want)
		}
	})

	t.Run("missing region", func(t *testing.T) {
		f := setup(t)
		_, errOut, err := f.run(t, "agent-platform/deploy.sh", nil, passArgs...)
		if err == nil || !strings.Contains(errOut, "set REGION") {
			t.Errorf("err = %v, stderr = %s", err, errOut)
		}
	})
}

// TestScriptsRejectBadSettings: REGION, PROJECT, API_VERSION and ENGINE_ID
// become parts of the URL the bearer token is sent to, and POLL_TIMEOUT
// and POLL_INTERVAL are used in bash arithmetic: a value that is not what
// its name says is refused before any request is made or command run.
func TestScriptsRejectBadSettings(t *testing.T) {
	needJSONTool(t)
	body, err := CreateRequest(parse(t, pythonMap), RequestOptions{DisplayName: "a", Image: "r/i"})
	if err != nil {
		t.Fatal(err)
	}
	good := map[string]string{"REGION": "us-central1", "PROJECT": "my-project", "ENGINE_ID": "", "API_VERSION": "v1beta1",
		"POLL_TIMEOUT": "60", "POLL_INTERVAL": "0"}
	for _, tc := range []struct {
		script, name, value string
	}{
		{"deploy.sh", "REGION", "evil.example/x#"},
		{"deploy.sh", "REGION", "us-central1.evil.example"},
		{"deploy.sh", "REGION", "us-central1 "},
		{"query.sh", "REGION", "evil.example/x#"},
		{"deploy.sh", "PROJECT", "p/../../x#"},
		{"deploy.sh", "PROJECT", "p?alt=x"},
		{"deploy.sh", "API_VERSION", "v1/../../x"},
		{"deploy.sh", "ENGINE_ID", "projects/p/locations/us-central1/reasoningEngines/1?x=#"},
		{"deploy.sh", "ENGINE_ID", "1/../2"},
		{"query.sh", "ENGINE_ID", "projects/p@evil.example/locations/us-central1/reasoningEngines/1"},
		{"deploy.sh", "POLL_TIMEOUT", "a[$(touch $FAKE/pwned)]"},
		{"deploy.sh", "POLL_TIMEOUT", "SECONDS"},
		{"deploy.sh", "POLL_TIMEOUT", "-1"},
		{"deploy.sh", "POLL_INTERVAL", "1;touch $FAKE/pwned"},
	} {
		t.Run(tc.script+" "+tc.name+"="+tc.value, func(t *testing.T) {
			f := newFakes(t)
			f.write(t, "request.json", string(body))
			f.write(t, "mask", "display_name\n")
			f.write(t, "resp.1", opDone)
			var env []string
			for k, v := range good {
				if k == tc.name {
					v = tc.value
				}
				if k == "ENGINE_ID" && v == "" && tc.script == "query.sh" {
					v = "1"
				}
				if v != "" {
					env = append(env, k+"="+v)
				}
			}
			var args []string
			if tc.script == "deploy.sh" {
				args = []string{"--image", "r/i", "--display-name", "a"}
			}
			_, errOut, err := f.run(t, "agent-platform/"+tc.script, env, args...)
			if err == nil {
				t.Fatalf("%s accepted %s=%q", tc.script, tc.name, tc.value)
			}
			if !strings.Contains(errOut, tc.name) {
				t.Errorf("stderr %q does not name %s", errOut, tc.name)
			}
			if calls, err := os.ReadFile(filepath.Join(f.dir, "calls")); err == nil {
				t.Errorf("requests were sent:\n%s", calls)
			}
			if _, err := os.Stat(filepath.Join(f.dir, "pwned")); err == nil {
				t.Errorf("%s=%q ran a command", tc.name, tc.value)
			}
		})
	}
	// The good values pass (the fakes answer the create at once).
	f := newFakes(t)
	f.write(t, "request.json", string(body))
	f.write(t, "resp.1", opDone)
	var env []string
	for k, v := range good {
		if v != "" {
			env = append(env, k+"="+v)
		}
	}
	if _, errOut, err := f.run(t, "agent-platform/deploy.sh", env, "--image", "r/i", "--display-name", "a"); err != nil {
		t.Errorf("deploy.sh with good settings: %v\n%s", err, errOut)
	}
	if got := f.read(t, "calls"); !strings.HasPrefix(got, "POST https://us-central1-aiplatform.googleapis.com/v1beta1/projects/my-project/") {
		t.Errorf("calls = %q", got)
	}
}

func TestQueryScript(t *testing.T) {
	needJSONTool(t)
	const engine = "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/us-central1/reasoningEngines/42"
	f := newFakes(t)
	f.write(t, "resp.1", `{"output": {"text": "Echo: hello"}}`)
	f.write(t, "resp.2", "{\"text\": \"hello \"}\n{\"text\": \"world \"}\n")
	out, errOut, err := f.run(t, "agent-platform/query.sh", []string{"REGION=us-central1", "PROJECT=p", "ENGINE_ID=42"})
	if err != nil {
		t.Fatalf("query.sh: %v\n%s", err, errOut)
	}
	if want := "POST " + engine + ":query\nPOST " + engine + ":streamQuery\n"; f.read(t, "calls") != want {
		t.Errorf("calls:\n%s\nwant:\n%s", f.read(t, "calls"), want)
	}
	if got := f.read(t, "body.1"); got != `{"class_method": "query", "input": {"message": "hello"}}`+"\n" {
		t.Errorf(":query body = %q", got)
	}
	if got := f.read(t, "body.2"); !strings.HasPrefix(got, `{"class_method": "stream_query", "input": {`) {
		t.Errorf(":streamQuery body = %q", got)
	}
	if flags := f.read(t, "flags.2"); !strings.Contains(flags, "-N") {
		t.Errorf(":streamQuery curl flags %q: want -N (print lines as they arrive)", flags)
	}
	if !strings.Contains(out, `{"output": {"text": "Echo: hello"}}`) || !strings.Contains(out, "{\"text\": \"world \"}\n") {
		t.Errorf("stdout = %q", out)
	}

	// One method, streaming, with ?alt=sse, and a full resource name.
	f = newFakes(t)
	f.write(t, "resp.1", "data: {}\n\n")
	_, errOut, err = f.run(t, "agent-platform/query.sh",
		[]string{"REGION=us-central1", "PROJECT=other", "ENGINE_ID=projects/p/locations/us-central1/reasoningEngines/42", "ALT_SSE=1"},
		"--stream", "async_stream_query", `{"user_id": "u", "message": "hi"}`)
	if err != nil {
		t.Fatalf("query.sh: %v\n%s", err, errOut)
	}
	if want := "POST " + engine + ":streamQuery?alt=sse\n"; f.read(t, "calls") != want {
		t.Errorf("calls = %q, want %q", f.read(t, "calls"), want)
	}
	if got := f.read(t, "body.1"); got != `{"class_method": "async_stream_query", "input": {"user_id": "u", "message": "hi"}}`+"\n" {
		t.Errorf("body = %q", got)
	}

	// Bad method names never reach the network.
	f = newFakes(t)
	if _, _, err := f.run(t, "agent-platform/query.sh", []string{"REGION=r", "PROJECT=p", "ENGINE_ID=1"}, `x"; rm -rf /`); err == nil {
		t.Error("a method name with quotes was accepted")
	}
	if _, err := os.Stat(filepath.Join(f.dir, "calls")); err == nil {
		t.Error("query.sh called the API with a bad method name")
	}
}

// TestJSONGetFallback runs lib.sh's JSON reader without jq (python3).
func TestJSONGetFallback(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3")
	}
	script := `command() { if [[ $1 == -v && $2 == jq ]]; then return 1; fi; builtin command "$@"; }
. agent-platform/lib.sh
doc='{"name": "op/1", "done": true, "error": {"code": 3}, "response": {"name": "engines/9"}}'
json_get .name <<<"$doc"; json_get .done <<<"$doc"; json_get .response.name <<<"$doc"
json_get .error <<<"$doc"; json_get .missing <<<"$doc"; json_get .done <<<'{"done": false}'; echo end`
	out, err := exec.Command("bash", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if want := "op/1\ntrue\nengines/9\n{\"code\": 3}\nend\n"; string(out) != want {
		t.Errorf("python3 json_get printed %q, want %q", out, want)
	}
}
