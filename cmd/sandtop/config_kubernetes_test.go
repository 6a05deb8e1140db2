package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sandtop/sandtop/cmd/sandsim/fleet"
	"github.com/sandtop/sandtop/cmd/sandsim/fleet/fleettest"
	"github.com/sandtop/sandtop/model"
	"github.com/sandtop/sandtop/proc/proctest"
)

// envServeConfine carries a confinement (JSON) for TestServeChild to put
// itself in before it becomes serve.
const envServeConfine = "SANDTOP_SERVE_CONFINE"

// confinement is what a pod of the DaemonSet gets from its runtime, as
// this test reproduces it: a mount namespace where every mount is
// read-only and the host paths are bound under Root at their mountPath,
// the paths in Hide are covered by an empty file system (a pod's own
// /sys/fs/cgroup is not the host's tree), and only the capabilities named
// (bounding set included), with no new privileges.
type confinement struct {
	Root   string
	Mounts []struct{ Host, Path string }
	Hide   []string
	Caps   []string
}

// confine applies c (JSON) to this process, which runs in a mount
// namespace of its own, and execs the test binary again without it. The
// capability calls act on one thread: it stays locked until the exec.
func confine(spec string) error {
	var c confinement
	if err := json.Unmarshal([]byte(spec), &c); err != nil {
		return err
	}
	runtime.LockOSThread()
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if err := unix.Mount("tmpfs", c.Root, "tmpfs", 0, "mode=0755"); err != nil {
		return fmt.Errorf("tmpfs on %s: %w", c.Root, err)
	}
	for _, m := range c.Mounts {
		dst := filepath.Join(c.Root, m.Path)
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return err
		}
		if err := unix.Mount(m.Host, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s on %s: %w", m.Host, dst, err)
		}
	}
	for _, h := range c.Hide {
		if err := unix.Mount("tmpfs", h, "tmpfs", 0, "mode=0755"); err != nil {
			return fmt.Errorf("hide %s: %w", h, err)
		}
	}
	// readOnlyRootFilesystem and readOnly volumes: every mount, each
	// submount of the binds included, read-only.
	if err := unix.MountSetattr(-1, "/", unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return fmt.Errorf("make every mount read-only: %w", err)
	}
	var keep uint64
	for _, name := range c.Caps {
		n, ok := capNumbers[name]
		if !ok {
			return fmt.Errorf("capability %s unknown to this test", name)
		}
		keep |= 1 << n
	}
	last, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return err
	}
	top, err := strconv.Atoi(strings.TrimSpace(string(last)))
	if err != nil {
		return err
	}
	for n := 0; n <= top; n++ {
		if keep&(1<<n) == 0 {
			if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(n), 0, 0, 0); err != nil {
				return fmt.Errorf("drop capability %d from the bounding set: %w", n, err)
			}
		}
	}
	data := [2]unix.CapUserData{
		{Effective: uint32(keep), Permitted: uint32(keep), Inheritable: uint32(keep)},
		{Effective: uint32(keep >> 32), Permitted: uint32(keep >> 32), Inheritable: uint32(keep >> 32)},
	}
	if err := unix.Capset(&unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, envServeConfine+"=") && !strings.HasPrefix(e, envServePID+"=") {
			env = append(env, e)
		}
	}
	return syscall.Exec("/proc/self/exe", os.Args, env)
}

// capNumbers are the capabilities a manifest may name (capabilities(7)).
var capNumbers = map[string]int{
	"CHOWN": unix.CAP_CHOWN, "DAC_OVERRIDE": unix.CAP_DAC_OVERRIDE, "DAC_READ_SEARCH": unix.CAP_DAC_READ_SEARCH,
	"FOWNER": unix.CAP_FOWNER, "KILL": unix.CAP_KILL, "SYS_PTRACE": unix.CAP_SYS_PTRACE, "SYS_ADMIN": unix.CAP_SYS_ADMIN,
}

// kubeObject is the part of a Kubernetes object this test reads.
type kubeObject struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name, Namespace string
	} `json:"metadata"`
	Spec json.RawMessage `json:"spec"`
	Raw  map[string]any  `json:"-"`
}

// podSpec is the part of the DaemonSet's pod template this test checks.
type podSpec struct {
	Template struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
		Spec struct {
			HostPID                      bool `json:"hostPID"`
			AutomountServiceAccountToken *bool
			Containers                   []struct {
				Command, Args  []string
				ReadinessProbe struct {
					HTTPGet struct {
						Path string
						Port any
					} `json:"httpGet"`
				} `json:"readinessProbe"`
				Resources struct {
					Requests, Limits map[string]string
				}
				SecurityContext struct {
					Privileged, AllowPrivilegeEscalation, ReadOnlyRootFilesystem *bool
					RunAsUser                                                    *int
					Capabilities                                                 struct{ Add, Drop []string }
				} `json:"securityContext"`
				VolumeMounts []struct {
					Name, MountPath string
					ReadOnly        bool
				} `json:"volumeMounts"`
			}
			Volumes []struct {
				Name     string
				HostPath *struct{ Path, Type string } `json:"hostPath"`
			}
		}
	}
}

// kubectlDecode runs the manifest through kubectl create --dry-run=client
// --validate=false -o json, which decodes every object and maps its kind
// to a resource, against a stand-in API server on loopback that answers
// discovery only (kubectl asks it which kinds exist; nothing is created).
func kubectlDecode(t *testing.T, manifest string) []kubeObject {
	t.Helper()
	kubectl := lookTool(t, "kubectl")
	discovery := map[string]string{
		"/api":                           `{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"127.0.0.1"}]}`,
		"/apis":                          `{"kind":"APIGroupList","apiVersion":"v1","groups":[` + group("apps", "v1") + `,` + group("monitoring.coreos.com", "v1") + `]}`,
		"/api/v1":                        resources("v1", "ServiceAccount:serviceaccounts", "Service:services"),
		"/apis/apps/v1":                  resources("apps/v1", "DaemonSet:daemonsets"),
		"/apis/monitoring.coreos.com/v1": resources("monitoring.coreos.com/v1", "ServiceMonitor:servicemonitors"),
	}
	var writes []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "GET" {
			writes = append(writes, r.Method+" "+r.URL.Path)
		}
		b, ok := discovery[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, b)
	}))
	defer srv.Close()
	cmd := exec.Command(kubectl, "--server", srv.URL, "--cache-dir", t.TempDir(),
		"create", "--dry-run=client", "--validate=false", "-o", "json", "-f", "-")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "KUBECONFIG=/dev/null")
	cmd.Stdin = strings.NewReader(manifest)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl create --dry-run=client: %v\n%s", err, stderr.String())
	}
	if len(writes) > 0 {
		t.Fatalf("kubectl --dry-run=client sent %v to the API server", writes)
	}
	var objs []kubeObject
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var raw map[string]any
		if err := dec.Decode(&raw); err != nil {
			t.Fatalf("kubectl output: %v\n%s", err, out)
		}
		b, _ := json.Marshal(raw)
		var o kubeObject
		if err := json.Unmarshal(b, &o); err != nil {
			t.Fatal(err)
		}
		o.Raw = raw
		objs = append(objs, o)
	}
	return objs
}

func group(name, version string) string {
	gv := fmt.Sprintf(`{"groupVersion":"%s/%s","version":"%s"}`, name, version, version)
	return fmt.Sprintf(`{"name":"%s","versions":[%s],"preferredVersion":%s}`, name, gv, gv)
}

func resources(gv string, kinds ...string) string {
	var rs []string
	for _, k := range kinds {
		kind, plural, _ := strings.Cut(k, ":")
		rs = append(rs, fmt.Sprintf(`{"name":"%s","singularName":"%s","namespaced":true,"kind":"%s","verbs":["create","get","list"]}`,
			plural, strings.ToLower(kind), kind))
	}
	return fmt.Sprintf(`{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"%s","resources":[%s]}`, gv, strings.Join(rs, ","))
}

// knownFields are the fields of the Kubernetes API (reference, v1.30) the
// manifest may use, by the path of the object that holds them: kubectl
// with --validate=false keeps a misspelt field silently, and the
// server would then drop it (a readOnly spelt readonly would mount the
// host's /proc writable).
var knownFields = map[string][]string{
	"":                       {"apiVersion", "kind", "metadata", "spec", "automountServiceAccountToken"},
	"metadata":               {"name", "namespace", "labels", "annotations", "creationTimestamp"},
	"spec":                   {"selector", "updateStrategy", "template", "clusterIP", "ports", "jobLabel", "endpoints"},
	"spec.selector":          {"matchLabels", "app.kubernetes.io/name", "app.kubernetes.io/component"},
	"spec.updateStrategy":    {"type"},
	"spec.template":          {"metadata", "spec"},
	"spec.template.metadata": {"labels", "annotations", "creationTimestamp"},
	"spec.template.spec": {"serviceAccountName", "automountServiceAccountToken", "hostPID", "tolerations",
		"containers", "volumes"},
	"spec.template.spec.tolerations": {"operator"},
	"spec.template.spec.containers": {"name", "image", "command", "args", "ports", "readinessProbe", "resources",
		"securityContext", "volumeMounts"},
	"spec.template.spec.containers.ports":                  {"name", "containerPort", "protocol"},
	"spec.template.spec.containers.readinessProbe":         {"httpGet", "initialDelaySeconds", "periodSeconds", "failureThreshold"},
	"spec.template.spec.containers.readinessProbe.httpGet": {"path", "port"},
	"spec.template.spec.containers.resources":              {"requests", "limits"},
	"spec.template.spec.containers.securityContext": {"runAsUser", "runAsGroup", "privileged", "allowPrivilegeEscalation",
		"readOnlyRootFilesystem", "capabilities"},
	"spec.template.spec.containers.securityContext.capabilities": {"add", "drop"},
	"spec.template.spec.containers.volumeMounts":                 {"name", "mountPath", "readOnly"},
	"spec.template.spec.volumes":                                 {"name", "hostPath"},
	"spec.template.spec.volumes.hostPath":                        {"path", "type"},
	"spec.ports":                                                 {"name", "port", "targetPort"},
	"spec.endpoints":                                             {"port", "path", "interval", "relabelings"},
	"spec.endpoints.relabelings":                                 {"sourceLabels", "targetLabel"},
}

// checkFields fails on any field of v that knownFields does not list
// (maps of free keys, labels and the like, are not walked).
func checkFields(t *testing.T, kind, path string, v any) {
	t.Helper()
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			checkFields(t, kind, path, e)
		}
	case map[string]any:
		allowed, ok := knownFields[path]
		if !ok {
			return // a map of free keys: labels, annotations, requests
		}
		for k, e := range x {
			if !slices.Contains(allowed, k) {
				t.Errorf("%s: field %s.%s is not a field of the Kubernetes API", kind, path, k)
				continue
			}
			checkFields(t, kind, strings.TrimPrefix(path+"."+k, "."), e)
		}
	}
}

// TestKubernetesManifest decodes `sandtop config kubernetes` offline with
// kubectl, checks its fields against the API's, and checks what the issue
// asks of it: every node's processes through read-only mounts, two
// capabilities, measured resources, a readiness probe on /healthz, and a
// serve command line this sandtop accepts.
func TestKubernetesManifest(t *testing.T) {
	code, out, errOut := sandtop(t, "config", "kubernetes", "--image", "registry.example/sandtop:v1", "--namespace", "monitoring", "--service-monitor")
	if code != 0 {
		t.Fatalf("config kubernetes: exit %d: %s", code, errOut)
	}
	objs := kubectlDecode(t, out)
	var kinds []string
	var ds podSpec
	for _, o := range objs {
		kinds = append(kinds, o.Kind)
		if o.Metadata.Namespace != "monitoring" {
			t.Errorf("%s %s: namespace %q", o.Kind, o.Metadata.Name, o.Metadata.Namespace)
		}
		checkFields(t, o.Kind, "", o.Raw)
		if o.Kind == "DaemonSet" {
			if err := json.Unmarshal(o.Spec, &ds); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !slices.Equal(kinds, []string{"ServiceAccount", "DaemonSet", "Service", "ServiceMonitor"}) {
		t.Fatalf("kinds %v", kinds)
	}
	pod := ds.Template.Spec
	if !pod.HostPID || pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken || len(pod.Containers) != 1 {
		t.Fatalf("pod: hostPID %v, automount %v, %d containers", pod.HostPID, pod.AutomountServiceAccountToken, len(pod.Containers))
	}
	if a := ds.Template.Metadata.Annotations; a["prometheus.io/scrape"] != "true" || a["prometheus.io/port"] != "9717" {
		t.Errorf("scrape annotations %v", a)
	}
	c := pod.Containers[0]
	sc := c.SecurityContext
	if sc.Privileged == nil || *sc.Privileged || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || !slices.Equal(sc.Capabilities.Drop, []string{"ALL"}) {
		t.Errorf("securityContext %+v", sc)
	}
	if !slices.Equal(sc.Capabilities.Add, []string{"SYS_PTRACE", "DAC_READ_SEARCH"}) {
		t.Errorf("capabilities added %v, want SYS_PTRACE and DAC_READ_SEARCH only", sc.Capabilities.Add)
	}
	if c.ReadinessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("readiness probe %+v", c.ReadinessProbe)
	}
	if c.Resources.Requests["cpu"] != "10m" || c.Resources.Requests["memory"] != "48Mi" {
		t.Errorf("requests %v, want the measured cost (0.8%% of a core, 36 MiB) rounded up", c.Resources.Requests)
	}
	hostPaths := map[string]string{}
	for _, v := range pod.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = v.HostPath.Path
		}
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		if !m.ReadOnly {
			t.Errorf("volume %s mounted at %s is not read-only", m.Name, m.MountPath)
		}
		mounts[hostPaths[m.Name]] = m.MountPath
	}
	if mounts["/proc"] == "" || mounts["/sys/fs/cgroup"] == "" || len(mounts) != 2 {
		t.Errorf("mounts %v, want /proc and /sys/fs/cgroup only", mounts)
	}
	// The command line is one this sandtop's serve accepts.
	if !slices.Equal(c.Command, []string{"/usr/local/bin/sandtop"}) || len(c.Args) == 0 || c.Args[0] != "serve" {
		t.Fatalf("command %v args %v", c.Command, c.Args)
	}
	cmd, rest, err := newRootCmd().Find(c.Args)
	if err == nil {
		err = cmd.ParseFlags(rest)
	}
	if err != nil || cmd.Name() != "serve" {
		t.Errorf("args %v: %v", c.Args, err)
	}
	if flagValue(c.Args, "--proc-root") != mounts["/proc"] {
		t.Errorf("--proc-root %q, but /proc is mounted at %q", flagValue(c.Args, "--proc-root"), mounts["/proc"])
	}

	// Bad values are refused, the flag named.
	for _, args := range [][]string{{"--image", "a b"}, {"--image", "x\nkind: Secret"}, {"--namespace", "Kube_System"}} {
		code, _, errOut := sandtop(t, append([]string{"config", "kubernetes"}, args...)...)
		if code != exitUsage || !strings.Contains(errOut, args[0]) {
			t.Errorf("config kubernetes %q: exit %d, %s", args, code, errOut)
		}
	}
}

func flagValue(args []string, name string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// TestKubernetesReadOnlyScan proves the DaemonSet's read-only claim: serve
// started as its pod would run (the manifest's mounts bound read-only in a
// mount namespace where every mount is read-only, only its capabilities,
// no new privileges, its command line) sees the same sandboxes as serve
// run normally.
func TestKubernetesReadOnlyScan(t *testing.T) {
	proctest.RequireRoot(t)
	_, out, _ := sandtop(t, "config", "kubernetes")
	var pod podSpec
	for _, o := range kubectlDecode(t, out) {
		if o.Kind == "DaemonSet" {
			if err := json.Unmarshal(o.Spec, &pod); err != nil {
				t.Fatal(err)
			}
		}
	}
	c := pod.Template.Spec.Containers[0]
	root := t.TempDir()
	conf := confinement{Root: root, Caps: c.SecurityContext.Capabilities.Add, Hide: []string{"/sys/fs/cgroup"}}
	hostPaths := map[string]string{}
	for _, v := range pod.Template.Spec.Volumes {
		hostPaths[v.Name] = v.HostPath.Path
	}
	for _, m := range c.VolumeMounts {
		conf.Mounts = append(conf.Mounts, struct{ Host, Path string }{hostPaths[m.Name], m.MountPath})
	}
	// The manifest's arguments, its paths moved under root; then a
	// loopback port and a short interval for the test.
	var args []string
	for i, a := range c.Args[1:] {
		if i > 0 && (c.Args[i] == "--proc-root" || c.Args[i] == "--sys-root") {
			a = filepath.Join(root, a)
		}
		args = append(args, a)
	}
	args = append(args, "--listen", "127.0.0.1:0", "--interval", "1s")
	spec, _ := json.Marshal(conf)

	f := fleettest.Start(t, fleet.Spec{Sandboxes: []fleet.SandboxSpec{
		{Name: "vm", Runtime: fleet.VM0},
		{Name: "orphan", Runtime: fleet.Containerd, Orphan: true},
		{Name: "paused", Runtime: fleet.Cube, Pause: fleet.PauseFreeze},
		{Name: "zombie", Runtime: fleet.Docker, Zombies: 2},
	}})
	man := f.Manifest()
	confined := startServeWith(t, []string{envServeConfine + "=" + string(spec)},
		&syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}, nil, args...)
	waitHealthy(t, confined)
	normal := startServe(t, nil, "--interval", "1s")
	waitHealthy(t, normal)

	// The confined serve holds exactly the manifest's capabilities.
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", confined.pid))
	if err != nil {
		t.Fatal(err)
	}
	var want uint64
	for _, n := range conf.Caps {
		want |= 1 << capNumbers[n]
	}
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":\t")
		switch k {
		case "CapEff", "CapPrm", "CapBnd":
			got, _ := strconv.ParseUint(v, 16, 64)
			if got != want {
				t.Errorf("confined serve: %s %x, want %x (%v)", k, got, want, conf.Caps)
			}
		case "NoNewPrivs":
			if v != "1" {
				t.Errorf("confined serve: NoNewPrivs %s", v)
			}
		}
	}
	// Its mounts are read-only: its mountinfo lists no writable one.
	mi, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", confined.pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(mi)), "\n") {
		if f := strings.Fields(l); len(f) > 5 && !strings.HasPrefix(f[5], "ro") {
			t.Errorf("confined serve has a writable mount: %s", l)
			break
		}
	}
	served := func(s *served) func() model.Document {
		return func() model.Document {
			_, _, body := httpGet(t, "GET", s.url+"/api/v1/sandboxes")
			var d model.Document
			if err := json.Unmarshal([]byte(body), &d); err != nil {
				t.Fatalf("%s: %v\n%s", s.url, err, body)
			}
			return d
		}
	}
	compareDocuments(t, man, false, served(confined), served(normal))
	d := served(confined)()
	for _, name := range []string{"orphan", "paused", "zombie"} {
		if sb := find(d, man.Sandbox(name).ID); sb == nil || len(sb.Badges) == 0 {
			t.Errorf("confined serve: sandbox %s has no badge (%+v)", name, sb)
		}
	}
}
