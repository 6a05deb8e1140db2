package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// image is a built guest: its disk and the kernel and initrd booted from it.
type image struct {
	dir, disk, kernel, initrd string
}

// ensureImage returns the cached image for this image.sh, building it when
// there is none. A build goes to a scratch directory renamed into place
// when complete, so an interrupted build is never taken for an image; the
// images of other image.sh versions are removed (a few GB each).
func ensureImage(c config) (image, bool, error) {
	data, err := os.ReadFile(c.script)
	if err != nil {
		return image{}, false, fmt.Errorf("read image script: %w", err)
	}
	sum := sha256.Sum256(data)
	key := hex.EncodeToString(sum[:8])
	dir := filepath.Join(c.cache, key)
	img := image{dir: dir, disk: filepath.Join(dir, "disk.img"), kernel: filepath.Join(dir, "vmlinuz"), initrd: filepath.Join(dir, "initrd.img")}
	if _, err := os.Stat(img.disk); err == nil {
		fmt.Printf("testhost: image %s (cached)\n", dir)
		return img, false, nil
	}
	if err := os.MkdirAll(c.cache, 0o755); err != nil {
		return image{}, false, fmt.Errorf("image cache: %w", err)
	}
	old, _ := filepath.Glob(filepath.Join(c.cache, "[0-9a-f]*"))
	for _, o := range old {
		if name := filepath.Base(o); name != key && len(strings.TrimSuffix(name, ".build")) == len(key) {
			if err := os.RemoveAll(o); err != nil {
				return image{}, false, fmt.Errorf("remove stale image: %w", err)
			}
		}
	}
	mirror := c.mirror
	if mirror == "" {
		mirror = aptMirror()
	}
	build := dir + ".build"
	if err := os.RemoveAll(build); err != nil {
		return image{}, false, fmt.Errorf("remove unfinished build: %w", err)
	}
	if err := os.MkdirAll(build, 0o755); err != nil {
		return image{}, false, fmt.Errorf("image build dir: %w", err)
	}
	fmt.Printf("testhost: building image %s from %s\n", dir, mirror)
	cmd := exec.Command("/bin/sh", c.script, build, mirror)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		os.RemoveAll(build)
		return image{}, false, fmt.Errorf("image build (%s): %w", c.script, err)
	}
	if err := os.Rename(build, dir); err != nil {
		return image{}, false, fmt.Errorf("image into place: %w", err)
	}
	return img, true, nil
}

// aptMirror is the Debian mirror this host's apt uses, for a build that
// reaches only that (and falls back to deb.debian.org).
func aptMirror() string {
	files, _ := filepath.Glob("/etc/apt/sources.list.d/*")
	files = append([]string{"/etc/apt/sources.list"}, files...)
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			switch {
			case len(fields) >= 3 && fields[0] == "deb" && strings.Contains(sc.Text(), " bookworm ") && strings.HasSuffix(fields[1], "/debian"):
				fh.Close()
				return fields[1]
			case len(fields) >= 2 && fields[0] == "URIs:" && strings.HasSuffix(fields[1], "/debian"):
				fh.Close()
				return fields[1]
			}
		}
		fh.Close()
	}
	return "http://deb.debian.org/debian"
}
