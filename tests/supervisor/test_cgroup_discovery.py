"""Where a command's cgroup goes: the cgroup2 mount in mountinfo, below our own cgroup."""

from __future__ import annotations

from pathlib import Path

from loopkit.supervisor.cgroup import Cgroup, mount_point, own_folder

HYBRID = """\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
UNIFIED = "29 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
OWN = "4:memory:/process_api/42cf\n1:name=systemd:/user.slice\n0::/user.slice/app.scope\n"


def test_the_cgroup2_mount_is_found_on_a_hybrid_host() -> None:
    assert mount_point(HYBRID) == (Path("/sys/fs/cgroup/unified"), "/")
    assert own_folder(HYBRID, "0::/\n") == Path("/sys/fs/cgroup/unified")


def test_our_own_cgroup_is_the_0_line_below_the_mount() -> None:
    assert own_folder(UNIFIED, OWN) == Path("/sys/fs/cgroup/user.slice/app.scope")


def test_optional_fields_and_escaped_spaces_in_mountinfo() -> None:
    info = r"50 23 0:40 / /mnt/my\040cgroups rw shared:9 master:2 - cgroup2 none rw" + "\n"
    assert mount_point(info) == (Path("/mnt/my cgroups"), "/")


def test_a_mount_of_a_subtree_is_used_only_for_what_is_below_it() -> None:
    info = "60 23 0:41 /user.slice /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
    assert own_folder(info, OWN) == Path("/sys/fs/cgroup/app.scope")
    assert own_folder(info, "0::/system.slice/x.service\n") is None
    assert own_folder(info, "0::/user.slicex/y\n") is None


def test_no_cgroup2_or_no_0_line_means_none() -> None:
    assert mount_point(HYBRID.replace("cgroup2", "cgroup")) is None
    assert own_folder(UNIFIED, "4:memory:/a\n") is None


def test_a_command_joins_before_it_runs_and_removes_the_cgroup_when_it_cannot() -> None:
    folder = Cgroup(Path("/sys/fs/cgroup/loopkit-it's-1"))
    quoted = "'/sys/fs/cgroup/loopkit-it'\"'\"'s-1'"
    join = f"{{ echo $$ >{quoted}/cgroup.procs; }} 2>/dev/null || rmdir {quoted} 2>/dev/null"
    assert folder.wrap(["/bin/sh", "-c", "make test"]) == ["/bin/sh", "-c", f"{join}; make test"]
    argv = folder.wrap(["pytest", "-q"])
    assert argv[:2] == ["/bin/sh", "-c"] and argv[2].endswith('; exec "$@"')
    assert argv[3:] == ["sh", "pytest", "-q"]
