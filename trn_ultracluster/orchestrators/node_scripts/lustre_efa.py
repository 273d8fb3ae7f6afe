#!/usr/bin/env python3
"""What ``lustre_efa.sh`` decides (standard library only, Python 3.9+).

``lustre_efa.sh`` (FSx for Lustre over EFA on a node) runs the system tools (lnetctl,
modprobe, dd, stat, systemctl, curl, aws) in their order; this module, shipped and installed
beside it, decides from what they print and from the files the script names: whether the
client OS qualifies, which EFA devices LNet binds, which NIs to add or remove, whether the
probe's traffic went over EFA, the text of the two systemd units, and what a failure means in
each mode (the cause, the value reported, the exit status). It calls no program. The script
runs ``python3 lustre_efa.py COMMAND ARGS`` (:data:`COMMANDS`).

``python3`` is on every image that runs the script: Amazon Linux 2023 makes Python 3 available
as ``/usr/bin/python3`` and "this will remain as Python 3.9 for the life of AL2023" (AL2023
user guide, "Python in AL2023"); the EKS AL2023 AMIs are built on it with dnf and cloud-init,
both Python programs, and install aws-cfn-bootstrap, another (awslabs/amazon-eks-ami
``templates/al2023/provisioners/install-worker.sh``); the HyperPod and standalone nodes run
``lcs.py`` with it already.

Sources: FSx for Lustre user guide (UG) "Configuring EFA clients" (configure-efa-clients.html);
EKS user guide fsx-csi-tuning-efa.adoc (the explicit LNet commands AWS's setup.sh runs:
awsdocs/amazon-eks-user-guide @1527dee); awslabs/awsome-distributed-ai (ADT) PRs #989, #1204,
#1208 and its HyperPod base-config lifecycle script
``1.architectures/5.sagemaker-hyperpod/LifecycleScripts/base-config/mount_fsx.sh`` (@11e237a);
aws/aws-parallelcluster PR #7572 (the counter check).
"""

from __future__ import annotations

import itertools
import os
import sys

# (no re, shlex, pathlib or typing: the script calls this module a few times per step, and
# each of those imports adds to every call's start-up.)

CLIENT_OS_RULE = (
    "EFA clients of FSx for Lustre run Amazon Linux 2023, RHEL 9.5 or newer, or Ubuntu 22.04 "
    "or newer with kernel 6.8+ (FSx for Lustre user guide, Configuring EFA clients)")
"""The client OS rule of EFA-enabled file systems: "Amazon Linux 2023 (AL2023); Red Hat
Enterprise Linux (RHEL) 9.5 or newer; Ubuntu 22.04 or newer with kernel version 6.8+" (UG,
configure-efa-clients.html; ``config/facts/fsx.py`` ``FSX_EFA_CLIENT_OS``)."""
TCP_CAUSES = (
    "Check: the file system is EFA-enabled; its security group and the nodes' allow all "
    "traffic to and from each other by security group id (0.0.0.0/0 rules do not count for "
    "EFA); nodes and file system share the Availability Zone and /16; dmesg | grep -i kefalnd")
"""What to check when Lustre traffic goes over TCP."""

# The boot unit's time bounds (our choices: no AWS source gives any of them). A oneshot
# service has no start timeout by default (systemd.service(5)): each attempt is bounded,
# TimeoutStartSec= the NI wait (60 s) plus the modules and lnetctl calls, 100 s. Restarts
# (RestartSec= 10 s) count against the start limit (systemd.service(5), Restart=): 5 attempts
# of at most 110 s fit in StartLimitIntervalSec= 600 s, so the 6th start (StartLimitBurst= 5)
# is refused and the unit is "failed" (systemd.unit(5), StartLimitIntervalSec=) at most
# 5 * (100 + 10) = 550 s after its first start: what is ordered after it (kubelet,
# nodeadm-run, the automount, the watcher) waits at most that.
UNIT_ATTEMPT_S, UNIT_RESTART_S, UNIT_BURST, UNIT_INTERVAL_S = 100, 10, 5, 600


class Refused(Exception):
    """A step that cannot go on: ``cause`` (the script's ``ERROR (<cause>)``) and message."""

    def __init__(self, cause: str, message: str):
        super().__init__(f"{cause} {message}")
        self.cause, self.message = cause, message


def os_release(text: str) -> dict[str, str]:
    """The ``KEY=value`` pairs of ``/etc/os-release``, values without their quotes (its
    format: os-release(5))."""
    pairs = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition("=")
        if sep and key and not key.startswith("#"):
            value = value.strip()
            quoted = len(value) > 1 and value[0] == value[-1] and value[0] in "\"'"
            pairs[key] = value[1:-1] if quoted else value
    return pairs


def numbers(text: str) -> list[int]:
    """The numbers in ``text``, in order (``"6.8.0-1017-aws"``: 6, 8, 0, 1017)."""
    return [int("".join(g)) for digit, g in itertools.groupby(text, str.isdigit) if digit]


def version_ge(version: str, minimum: str) -> bool:
    """Dotted ``version`` >= ``minimum``, numbers compared as numbers (as ``sort -V`` orders
    dotted numbers); an empty version is lower than any."""
    return numbers(version) >= numbers(minimum)


def os_problem(release: str, kernel: str) -> str:
    """Why this client (``/etc/os-release`` text, ``uname -r``) cannot have Lustre over EFA
    (:data:`CLIENT_OS_RULE`), or ``""`` when it can."""
    fields = os_release(release)
    os_id, version = fields.get("ID", ""), fields.get("VERSION_ID", "")
    if os_id == "amzn":
        ok, named = version.startswith("2023"), f"Amazon Linux {version}"
    elif os_id == "rhel":
        ok, named = version_ge(version, "9.5"), f"RHEL {version}"
    elif os_id == "ubuntu":
        ok = version_ge(version, "22.04") and version_ge(kernel.split("-")[0], "6.8")
        named = f"Ubuntu {version} with kernel {kernel}"
    else:
        ok, named = False, f"{os_id or 'an unknown OS'} {version}"
    return "" if ok else f"{named}: {CLIENT_OS_RULE}"


def is_al2023(release: str) -> bool:
    """Whether ``/etc/os-release`` (text) is Amazon Linux 2023, the one OS whose Lustre client
    the script installs: "sudo dnf install -y lustre-client" (UG, "Installing the Lustre
    client", AL2023; the EKS AL2023 AMIs have no Lustre client: awslabs/amazon-eks-ami PR
    #2696, closed)."""
    fields = os_release(release)
    return fields.get("ID") == "amzn" and fields.get("VERSION_ID", "").startswith("2023")


def natural_key(name: str) -> list[tuple[int, int, str]]:
    """A sort key that orders the numbers in ``name`` as numbers (as ``sort -V``: rdmap16s0
    before rdmap128s0)."""
    parts = ("".join(g) for _, g in itertools.groupby(name, str.isdigit))
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts]


def efa_devices(infiniband: str) -> list[str]:
    """The EFA devices: the entries of ``/sys/class/infiniband`` whose ``device/driver`` is
    efa (UG, "EFA interfaces"), in :func:`natural_key` order."""
    drivers = {name: os.path.join(infiniband, name, "device/driver")
               for name in (os.listdir(infiniband) if os.path.isdir(infiniband) else [])}
    return sorted((name for name, driver in drivers.items()
                   if os.path.exists(driver) and os.path.realpath(driver).endswith("/efa")),
                  key=natural_key)


def pick(n: int, devices: list[str]) -> list[str]:
    """The ``n`` devices LNet binds, from :func:`efa_devices`.

    The EKS UG's example binds the first and, when there are several, the last line of
    ``ls -1 /sys/class/infiniband`` (every device, whatever its driver, in ls's alphabetical
    order). We keep its rule, the first and the last, on our filtered, version-sorted list: on
    a trn1.32xlarge that is rdmap16s0 and rdmap128s0 where the example's order gives
    rdmap112s0 and rdmap96s0 (two different EFA devices either way; whether the choice
    matters is not documented). ``n`` >= 3 spreads over the devices, first and last included;
    ``n`` >= their number takes them all.
    """
    count = len(devices)
    if n >= count or n == 1:
        return devices[:n]
    return [devices[i * (count - 1) // (n - 1)] for i in range(n)]


def route_interface(route: str) -> str:
    """The interface of the default route (``ip route show default``), or ``""``: LNet's tcp
    NI ("a TCP interface (prerequisite of EFA interfaces)": AWS's setup.sh README). AWS's
    examples (EKS UG, fsx-csi-tuning-efa) take the interface that holds the address of
    ``hostname -i`` instead; on an EC2 instance both are normally the primary network
    interface (our reading, not verified on every AMI)."""
    for words in map(str.split, route.splitlines()):
        if "dev" in words[:-1]:
            return words[words.index("dev") + 1]
    return ""


def configure_plan(root: str, n: int, kernel: str, kefalnd: bool,
                   route: str) -> tuple[str, list[str]]:
    """``(tcp interface, EFA devices to bind)`` for ``configure`` with ``n`` interfaces, from
    the node under ``root`` (``/etc/os-release``, ``/sys/class/infiniband``), ``uname -r``,
    whether ``modinfo kefalnd`` succeeds (AWS's set-up takes that as "this Lustre client
    supports EFA": aws-parallelcluster-cookbook pcluster-diag ``core/constants.py``
    ``EFA_LND_KERNEL_MODULE``) and ``ip route show default``.

    Raises:
        Refused: the first of: the OS (``os``), no or too few EFA devices
            (``no-efa-device``), no kefalnd (``no-kefalnd``), no default route (``network``).
    """
    try:
        with open(os.path.join(root, "etc/os-release")) as f:
            problem = os_problem(f.read(), kernel)
    except OSError:
        problem = "cannot read /etc/os-release to check the client OS"
    if problem:
        raise Refused("os", problem)
    devices = efa_devices(os.path.join(root, "sys/class/infiniband"))
    if not devices:
        raise Refused("no-efa-device", (
            "no EFA device under /sys/class/infiniband (no device whose driver is efa): the "
            "instance type has no EFA, the launch template gave it no EFA interface, or the "
            "EFA driver is not loaded (modinfo efa)"))
    if len(devices) < n:
        raise Refused("no-efa-device",
                      f"{len(devices)} EFA device(s) ({' '.join(devices)}), {n} wanted for LNet")
    if not kefalnd:
        raise Refused("no-kefalnd", (
            f"no kefalnd kernel module (modinfo kefalnd) for kernel {kernel}: the Lustre client "
            "installed has no EFA support; install the FSx Lustre client for this kernel (FSx "
            "for Lustre user guide, Installing the Lustre client)"))
    tcp_if = route_interface(route)
    if not tcp_if:
        raise Refused("network", ("no default route (ip route show default): LNet needs its "
                                  "tcp NI on the node's primary interface"))
    return tcp_if, pick(n, devices)


def net_interfaces(net_show: str) -> list[str]:
    """The interfaces of an LNet net: ``lnetctl net show --net NET`` lists ``N: <interface>``
    under each NI's ``interfaces:``."""
    found = []
    for line in net_show.splitlines():
        words = line.split()
        if line[:1].isspace() and len(words) > 1 and words[0].endswith(":"):
            found += [words[1]] if words[0][:-1].isdigit() else []
    return found


def nis_up(net_show: str) -> int:
    """How many NIs ``lnetctl net show`` says are ``status: up``."""
    return sum("status: up" in line for line in net_show.splitlines())


def received(net_show_verbose: str) -> int:
    """The LNet messages a net's NIs received, summed over its NIs (one statistics block per
    NI, as ADT's ``mount_fsx.sh`` @11e237a sums them: a single-NI parse breaks on trn1's two):
    ``recv_count`` minus ``drop_count`` (``lnetctl net show -v`` prints both per NI; a dropped
    message carried nothing to the client)."""
    total = 0
    for words in map(str.split, net_show_verbose.splitlines()):
        if len(words) > 1 and words[1].isdigit():
            total += {"recv_count:": 1, "drop_count:": -1}.get(words[0], 0) * int(words[1])
    return total


def lustre_mounts(mounts: str) -> list[str]:
    """The mount points of the Lustre file systems in ``/proc/mounts`` (text), in its order."""
    return [words[1] for words in map(str.split, mounts.splitlines())
            if len(words) > 2 and words[2] == "lustre"]


def ni_plan(n: int, tcp_if: str, chosen: list[str], mounted: str, tcp_show: str,
            efa_show: str, udsp_show: str) -> list[str]:
    """The LNet steps of ``configure`` after ``lnetctl lnet configure``, in the EKS UG's
    order, as lines ``run ARGS`` (lnetctl ARGS, must succeed), ``try ARGS`` (may fail) and
    ``die mounted MESSAGE`` (stop there), from ``lnetctl net show --net tcp``/``--net efa``,
    ``lnetctl udsp show`` and the first Lustre mount point (``mounted``, or ``""``).

    Idempotent: a NI already there is kept. A NI that would have to go (a tcp NI on another
    interface than ``tcp_if``, an EFA NI not ``chosen``) is removed only while no Lustre file
    system is mounted: removing a NI under it cuts its traffic. EFA is preferred by a UDSP
    rule unless ``udsp show`` has one whose src is efa (that format is not verified on a
    node).
    """
    def remove(what: str) -> list[str]:
        if not mounted:
            return []
        return [f"die mounted LNet would have to remove {what} while Lustre is mounted at "
                f"{mounted} (/proc/mounts): removing a NI under a mounted file system cuts its "
                "traffic; unmount it (or reboot) and rerun"]
    steps, tcp_nis, current = [], net_interfaces(tcp_show), net_interfaces(efa_show)
    if tcp_if not in tcp_nis:
        if tcp_nis:
            steps += remove(f"the tcp NI on {' '.join(tcp_nis)} "
                            f"(the default route is on {tcp_if})")
        steps += ["try net del --net tcp", f"run net add --net tcp --if {tcp_if}"]
    for dev in (d for d in current if d not in chosen):
        steps += remove(f"the EFA NI on {dev} ({n} wanted: {' '.join(chosen)})")
        steps.append(f"run net del --net efa --if {dev}")
    steps += [f"run net add --net efa --if {d} --peer-credits 32" for d in chosen
              if d not in current]
    steps.append("run set discovery 1")
    if "src: efa" not in udsp_show:
        steps.append("run udsp add --src efa --priority 0")
    return steps


def check_verdict(mib: int, efa: int, tcp: int, nis: int, mount: str) -> tuple[bool, str]:
    """``(over_efa, line)`` of the check, from the LNet messages the EFA and tcp NIs received
    while the probe of ``mib`` MiB was read (:func:`received` before and after).

    An efa NI that is configured does not prove that the traffic goes over EFA (ADT #989:
    "Lustre silently falls back to ENA/TCP with no errors"); the counters do. The probe is
    read with direct I/O, bs=1M, so that each MiB comes from the storage servers in at least
    one bulk transfer, which reaches the client as a received LNet message on the NI that
    carried it. Over EFA the EFA NIs must receive at least ``mib``/2 messages and more than
    the tcp NI ("Metadata RPCs and pings ride tcp by design": aws/aws-parallelcluster PR
    #7572).
    """
    over_efa = efa * 2 >= mib and efa > tcp
    return over_efa, (f"lustre-efa check: {'efa' if over_efa else 'tcp'} (efa +{efa}, tcp "
                      f"+{tcp} LNet messages received while reading {mib} MiB with direct I/O "
                      f"from {mount}, {nis} EFA NI(s))")


def boot_unit(installed: str, interfaces: int) -> str:
    """The boot unit (``install-unit``): LNet configured again at every boot, before the
    remote mounts.

    AWS's own unit (configure-efa-fsx-lustre-client.service) is a oneshot after
    network-online.target; ADT #1204 found it losing a race at boot and staying failed, and
    added Restart=on-failure with a start limit. Ours reads no instance metadata (the IMDS
    race of #1204 cannot happen) and keeps the restarts for an EFA device or route that comes
    up late, within :data:`UNIT_ATTEMPT_S` and the start limit: the unit ends "active" or
    "failed", it never restarts forever. remote-fs-pre.target is pulled in by the units
    ordered before it (systemd commit 627506f "units: there is no point in pulling in
    ordering 'provides'-style targets"; systemd.special(7)).

    ``Before=kubelet.service nodeadm-run.service``: on the Kubernetes nodes the mount comes
    from the FSx CSI driver once kubelet runs pods, not from fstab, so after a reboot LNet
    must be configured before kubelet starts (nodeadm-run.service starts it on the EKS AL2023
    AMIs). Before=/After= only order units that are both started; they pull nothing in, and
    an ordering on a unit that does not exist has no effect (systemd.unit(5), Before=/After=:
    ordering is independent of the requirement dependencies), so the same unit is harmless
    on the Slurm and standalone nodes, which have neither.
    """
    return f"""\
# Written by the TrnUltraCluster node scripts (lustre_efa.sh install-unit).
[Unit]
Description=TrnUltraCluster: LNet over EFA for FSx for Lustre
Documentation=https://docs.aws.amazon.com/fsx/latest/LustreGuide/configure-efa-clients.html
Wants=network-online.target remote-fs-pre.target
After=network-online.target
Before=remote-fs-pre.target
Before=kubelet.service nodeadm-run.service
StartLimitIntervalSec={UNIT_INTERVAL_S}s
StartLimitBurst={UNIT_BURST}

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart={installed} configure --interfaces {interfaces}
TimeoutStartSec={UNIT_ATTEMPT_S}s
Restart=on-failure
RestartSec={UNIT_RESTART_S}s

[Install]
WantedBy=multi-user.target
"""


def watch_unit(installed: str, after: str, args: list[str]) -> str:
    """The watcher (``install-watcher``): ``watch ARGS`` as a service at every boot, after the
    unit ``after`` (Type=exec, systemd 240+: the wait does not hold up multi-user.target)."""
    return f"""\
# Written by the TrnUltraCluster node scripts (lustre_efa.sh install-watcher).
[Unit]
Description=TrnUltraCluster: check that FSx for Lustre traffic goes over EFA once mounted
Wants=network-online.target
After=network-online.target {after}

[Service]
Type=exec
ExecStart={installed} watch {' '.join(args)}

[Install]
WantedBy=multi-user.target
"""


def after_error(output: str) -> str:
    """What follows the last ``ERROR `` of ``output`` (all of it when there is none)."""
    return output[output.rfind("ERROR ") + len("ERROR "):] if "ERROR " in output else output


def outcome(mode: str, event: str, status: int, output: str,
            unit: str) -> tuple[int | None, int, str]:
    """``(value to report or None, exit status, line to log)`` of ``event`` in ``mode``
    (``preferred``: fsx.efa auto, ``required``: fsx.efa true); ``output``: what the step
    printed, ``unit``: the boot unit's name. A node that joined its cluster cannot be failed
    from the watcher: required + TCP is an ERROR (exit 1) and 0 on the dashboard.

    - ``unit-failed``: the watcher saw the boot unit failed (after its bounded restarts): the
      traffic cannot go over EFA (in mode required the automount requires the unit).
    - ``check``: the watcher's check exited ``status``: 0 over EFA, 3 over TCP, else it could
      not tell (e.g. the probe could not be written): an ERROR, nothing reported.
    - ``configure-failed``/``install-failed`` (``csi-node``): LNet could not be configured, or
      its boot unit or the watcher not installed; the cause is the ``(<cause>): <message>``
      of the step's last ERROR line. Exit 1 in mode required, 4 in mode preferred.
    """
    required = "ERROR: FSx for Lustre over EFA is required (fsx.efa: true) and"
    if event == "unit-failed":
        if mode == "required":
            return 0, 1, (f"{required} {unit} failed, so LNet is not configured for EFA and, "
                          "where fstab requires the unit, the file system is not mounted "
                          f"(journalctl -u {unit}). {TCP_CAUSES}")
        return 0, 0, (f"WARNING: {unit} failed (journalctl -u {unit}): LNet is not configured "
                      "for EFA and Lustre goes over TCP on this node (fsx.efa: auto)")
    if event == "check":
        if status == 0:
            return 1, 0, ""
        if status != 3:
            return None, 1, ("ERROR: the check of FSx for Lustre over EFA failed "
                             f"({after_error(output)}); nothing reported")
        if mode == "required":
            return 0, 1, (f"{required} this node's Lustre traffic does not go over EFA. "
                          f"{TCP_CAUSES}")
        return 0, 0, ("WARNING: this node's Lustre traffic does not go over EFA (fsx.efa: "
                      f"auto); it goes on over TCP. {TCP_CAUSES}")
    step = {"configure-failed": "configure", "install-failed": "install"}[event]
    cause = (after_error(output) if "ERROR (" in output
             else f"({step}): exit {status} without a named cause (above)")
    what = ("LNet could not be configured for EFA" if step == "configure" else
            "LNet is configured for EFA, but its boot unit or the watcher could not be "
            "installed, so the next boot and the check are not covered")
    if mode == "required":
        return 0, 1, f"{required} {what}: {cause}"
    return 0, 4, (f"WARNING: {what} ({cause}); Lustre is not known to go over EFA on this "
                  "node, which goes on (fsx.efa: auto)")


def _read(path: str) -> str:
    """The text of ``path``, ``""`` when it cannot be read."""
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def _plan(a: list[str], stdin: str) -> tuple[str, int]:
    tcp_if, chosen = configure_plan(a[0], int(a[1]), a[2], a[3] == "yes", stdin)
    return f"{tcp_if}\n{' '.join(chosen)}", 0


def _verdict(a: list[str], stdin: str) -> tuple[str, int]:
    efa0, tcp0, efa1, tcp1 = map(int, a[3:7])
    over_efa, line = check_verdict(int(a[0]), efa1 - efa0, tcp1 - tcp0, int(a[2]), a[1])
    return line, 0 if over_efa else 3


def _outcome(a: list[str], stdin: str) -> tuple[str, int]:
    value, status, line = outcome(a[0], a[1], int(a[2]), stdin.rstrip("\n"), a[3])
    return f"{'-' if value is None else value} {status}\n{line}", 0


COMMANDS = {
    # ROOT N KERNEL KEFALND(yes|no), the default route on stdin: "TCP_IF\nDEVICE..."
    "configure-plan": _plan,
    # N TCP_IF "CHOSEN..." MOUNTED TCP_SHOW EFA_SHOW UDSP_SHOW: ni_plan's lines
    "ni-plan": lambda a, _: ("\n".join(ni_plan(int(a[0]), a[1], a[2].split(), *a[3:7])), 0),
    "up": lambda a, stdin: (str(nis_up(stdin)), 0),  # net show on stdin
    "interfaces": lambda a, stdin: ("\n".join(net_interfaces(stdin)), 0),  # net show on stdin
    "received": lambda a, stdin: (str(received(stdin)), 0),  # net show -v on stdin
    "lustre-mount": lambda a, _: (next(iter(lustre_mounts(_read(a[0]))), ""), 0),  # MOUNTS
    "is-lustre-mount": lambda a, _: ("", 0 if a[1] in lustre_mounts(_read(a[0])) else 1),
    "is-al2023": lambda a, _: ("", 0 if is_al2023(_read(a[0])) else 1),  # OS_RELEASE
    # MIB MOUNT NIS EFA_BEFORE TCP_BEFORE EFA_AFTER TCP_AFTER: the line, 0 EFA / 3 TCP
    "verdict": _verdict,
    "boot-unit": lambda a, _: (boot_unit(a[0], int(a[1])), 0),  # INSTALLED N
    "watch-unit": lambda a, _: (watch_unit(a[0], a[1], a[2:]), 0),  # INSTALLED UNIT ARGS...
    # MODE EVENT STATUS UNIT, the step's output on stdin: "VALUE|- STATUS\nLINE"
    "outcome": _outcome,
}
"""The commands of :func:`main`: ``name -> f(args, stdin) -> (stdout, exit status)``."""
STDIN = {"configure-plan", "up", "interfaces", "received", "outcome"}
"""The commands that read stdin (the others never wait for it)."""


def main(argv: list[str]) -> int:
    """``lustre_efa.py COMMAND ARGS``: print the command's output (with a final newline when
    there is any) and exit with its status. A :class:`Refused` step prints ``CAUSE MESSAGE``
    and exits 1; a command line it does not take prints ``usage MESSAGE`` and exits 2 (the
    script dies with either)."""
    command = COMMANDS.get(argv[0] if argv else "")
    try:
        if command is None:
            raise ValueError("unknown command")
        out, status = command(argv[1:], sys.stdin.read() if argv[0] in STDIN else "")
    except Refused as refused:
        out, status = f"{refused.cause} {refused.message}", 1
    except (ValueError, IndexError, KeyError) as e:
        out, status = f"usage lustre_efa.py {' '.join(argv)}: {e!r}", 2
    if out:
        sys.stdout.write(out if out.endswith("\n") else out + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
