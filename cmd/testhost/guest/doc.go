// Package guest is the suite `make test-host` runs inside its Debian 12
// guest (systemd on pure cgroup v2): each test drives one runtime as
// Debian packages it and judges sandtop against it: the sandbox's ID,
// runtime, members, badges and dedicated cgroup, a kill that leaves the
// bystanders alive, and the runtime's own view afterwards. The tests build
// only with the tag testhost (go test -c -tags testhost) and expect to run
// as root in that guest, with sandtop on PATH.
package guest
