"""Start one process from an image's root filesystem the way the chart's pod settings run it.

Run as root inside ``unshare --mount --pid --fork`` (see ``image_runtime.py``); stdlib only. The
spec comes in the ``PALIMPSEST_LAUNCH`` environment variable (JSON, never argv, so URLs and keys
stay out of the process table):

- the root filesystem is bind-mounted onto itself and remounted **read-only**
  (``readOnlyRootFilesystem: true``); only a fresh tmpfs on ``/tmp`` is writable (the chart's
  emptyDir), ``/proc`` is this PID namespace's, ``/dev`` is the host's;
- volumes are bind mounts, read-only when asked;
- the process runs as the image's ``USER`` with no supplementary groups, no capabilities (a
  non-zero uid after ``setuid`` keeps none) and ``no_new_privs`` (``allowPrivilegeEscalation:
  false``), in the image's working directory, with the image's environment plus the spec's;
- the network is the host's (the embedded PostgreSQL and NATS listen on its loopback).
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys

PR_SET_NO_NEW_PRIVS = 38


def mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True)


def prepare(root: str, volumes: list[dict[str, object]], tmp_size: str) -> None:
    for volume in volumes:  # mount points first, while the root is still writable
        os.makedirs(os.path.join(root, str(volume["target"]).lstrip("/")), exist_ok=True)
    mount("--make-rprivate", "/")
    mount("--bind", root, root)
    mount("-o", "remount,bind,ro", root)
    mount("-t", "proc", "proc", os.path.join(root, "proc"))
    mount("--rbind", "/dev", os.path.join(root, "dev"))
    mount("-t", "tmpfs", "-o", f"mode=1777,size={tmp_size}", "tmpfs", os.path.join(root, "tmp"))
    for volume in volumes:
        target = os.path.join(root, str(volume["target"]).lstrip("/"))
        mount("--bind", str(volume["source"]), target)
        if volume.get("read_only", True):
            mount("-o", "remount,bind,ro", target)


def drop_privileges(user: str) -> None:
    uid, _, gid = user.partition(":")
    os.setgroups([])
    os.setgid(int(gid or uid))
    os.setuid(int(uid))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")


def main() -> int:
    spec = json.loads(os.environ["PALIMPSEST_LAUNCH"])
    root = spec["rootfs"]
    prepare(root, spec.get("volumes", []), spec.get("tmp_size", "512m"))
    os.chroot(root)
    os.chdir(spec.get("workdir") or "/")
    drop_privileges(spec["user"])
    argv = spec["argv"]
    os.execvpe(argv[0], argv, spec["env"])  # PATH is the image's
    return 127  # not reached


if __name__ == "__main__":
    sys.exit(main())
