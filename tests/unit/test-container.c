/* lib/front/container.c: container runtime and id from /proc/PID/cgroup, per runtime naming. */
#include <string.h>
#include <unistd.h>

#include "container.h"
#include "tap.h"

static const char *const H = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

static void expect(const char *text, int want_r, const char *want_rt, const char *want_id, const char *what)
{
        char rt[GH_RUNTIME_MAX], id[GH_CONTAINER_ID_MAX];
        int r = gh_cgroup_container(text, strlen(text), rt, id);

        if (!ok(r == want_r && strcmp(rt, want_rt) == 0 && strcmp(id, want_id) == 0, "%s", what))
                printf("#   got %d '%s' '%s', want %d '%s' '%s'\n", r, rt, id, want_r, want_rt, want_id);
}

int main(void)
{
        char buf[1024];

        snprintf(buf, sizeof(buf), "0::/system.slice/docker-%s.scope\n", H);
        expect(buf, 1, "docker", H, "Docker, systemd driver, v2");
        snprintf(buf, sizeof(buf), "12:devices:/docker/%s\n11:memory:/docker/%s\n0::/\n", H, H);
        expect(buf, 1, "docker", H, "Docker, cgroupfs driver, v1");
        snprintf(
                buf, sizeof(buf),
                "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1234.slice/cri-containerd-%s.scope\n",
                H);
        expect(buf, 1, "containerd", H, "containerd CRI, systemd");
        snprintf(buf, sizeof(buf), "0::/kubepods/burstable/pod0b8e/%s\n", H);
        expect(buf, 1, "cri", H, "Kubernetes, cgroupfs (runtime unknown)");
        snprintf(buf, sizeof(buf), "0::/kubepods.slice/kubepods-pod1.slice/crio-%s.scope\n", H);
        expect(buf, 1, "cri-o", H, "CRI-O");
        char conmon[128];
        snprintf(buf, sizeof(buf), "0::/kubepods.slice/kubepods-pod1.slice/crio-conmon-%s.scope\n", H);
        snprintf(conmon, sizeof(conmon), "crio-conmon-%s.scope", H);
        expect(buf, 0, "", conmon, "CRI-O's conmon scope is not a container");
        snprintf(buf, sizeof(buf), "0::/machine.slice/libpod-%s.scope/container\n", H);
        expect(buf, 1, "podman", H, "podman: the process sits in <scope>/container");
        snprintf(buf, sizeof(buf), "1:name=systemd:/libpod_parent/libpod-%s\n", H);
        expect(buf, 1, "podman", H, "podman, cgroupfs, v1");
        expect("0::/system.slice/runc-mybox.scope\n", 1, "runc", "mybox", "runc, systemd driver");
        expect("5:devices:/mybox\n0::/mybox\n", 0, "", "mybox", "runc/crun cgroupfs: a plain name, runtime unknown");
        expect("0::/user.slice/user-0.slice/session-3.scope\n", 0, "", "session-3.scope", "a login session");
        expect("0::/\n", 0, "", "", "the root cgroup");
        expect("garbage\n", -1, "", "", "no colons: malformed");
        expect("0::relative\n", -1, "", "", "a relative path: malformed");
        expect("0::/bad\"id\n", 0, "", "", "an id with a quote is not taken");
        expect("", 0, "", "", "empty text");

        struct gh_proc_owner o;
        ok(gh_proc_owner(getpid(), NULL, &o, NULL) == 0 && !o.in_container && o.ns_pid == getpid() &&
                   strcmp(o.comm, "test-container") == 0,
           "this test is a host process, named test-container");
        return tap_done();
}
