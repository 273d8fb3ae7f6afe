"""``node_scripts/lustre_efa.sh`` against a fake root with stub commands
(:mod:`tests.orchestrators.lustre_efa_stubs`): the client OS rule, the EFA devices, LNet's
configuration and its idempotence, the boot unit, the counter check (EFA and TCP fall back),
the metric, and the watcher of Kubernetes nodes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.cli.helpers import shellcheck
from tests.orchestrators.lustre_efa_stubs import (
    AL2023,
    EFA_DEVICES,
    UBUNTU_24,
    calls,
    fake_node,
    install_stubs,
    lnet_state,
    stub_env,
    traffic_command,
)
from trn_ultracluster.orchestrators.nodes import LUSTRE_EFA_SCRIPT, LUSTRE_EFA_UNIT, NODE_SCRIPTS

SCRIPT = NODE_SCRIPTS / LUSTRE_EFA_SCRIPT
REPORT_ARGS = ["--region", "us-west-2", "--namespace", "TrnUltraCluster/Neuron",
               "--metric", "node_fsx_lustre_over_efa", "--cluster", "trn-cluster"]


class Node:
    """A fake root, stubs on PATH, and ``run(*args, **env)`` of lustre_efa.sh."""

    def __init__(self, tmp_path: Path, **node: object):
        self.root, self.bin, self.lnet = tmp_path / "root", tmp_path / "bin", tmp_path / "lnet"
        self.log = tmp_path / "calls.log"
        fake_node(self.root, **node)  # type: ignore[arg-type]
        install_stubs(self.bin)
        self.env = stub_env(self.bin, self.lnet, self.log, TRN_ROOT=str(self.root))

    def run(self, *args: str, **env: str) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", str(SCRIPT), *args], env={**self.env, **env},
                              capture_output=True, text=True, timeout=60)

    def calls(self, name: str) -> list[str]:
        return calls(self.log, name)

    def mount(self, path: str = "/fsx") -> Path:
        """A mounted Lustre file system at ``path`` (its directory and /proc/mounts)."""
        target = self.root / path.lstrip("/")
        target.mkdir(parents=True, exist_ok=True)
        (self.root / "proc").mkdir(exist_ok=True)
        with (self.root / "proc/mounts").open("a") as f:
            f.write(f"fs-1.fsx.us-west-2.amazonaws.com@tcp:/abc {target} lustre rw 0 0\n")
        return target


@pytest.fixture
def node(tmp_path):
    return Node(tmp_path)


def error_line(result: subprocess.CompletedProcess) -> str:
    (line,) = [ln for ln in result.stderr.splitlines() if "ERROR" in ln]
    return line


def test_script_is_executable_and_shellcheck_clean():
    assert SCRIPT.stat().st_mode & 0o111
    subprocess.run(["bash", "-n", str(SCRIPT)], check=True)
    done = subprocess.run([shellcheck(), str(SCRIPT)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


def test_the_unit_name_is_nodes_lustre_efa_unit_in_every_script():
    """nodes.LUSTRE_EFA_UNIT is the one source of the LNet unit's name; the scripts that
    cannot import it spell it once each, and must agree."""
    from trn_ultracluster.orchestrators.nodes import FSX_SCRIPT

    assert f'\nUNIT="{LUSTRE_EFA_UNIT}"\n' in SCRIPT.read_text()
    assert f'\nEFA_UNIT="{LUSTRE_EFA_UNIT}"' in (NODE_SCRIPTS / FSX_SCRIPT).read_text()


# --- configure ------------------------------------------------------------------------------

def test_configure_binds_the_first_and_last_efa_devices_as_the_eks_guide_does(node):
    result = node.run("configure", "--interfaces", "2")
    assert result.returncode == 0, result.stdout + result.stderr
    assert node.calls("modprobe") == ["modprobe lnet", "modprobe kefalnd ipif_name=ens5",
                                      "modprobe ksocklnd", "modprobe lustre"]
    lnet = [c for c in node.calls("lnetctl") if " show" not in c]
    assert lnet == [
        "lnetctl lnet configure",
        "lnetctl net del --net tcp",  # as the EKS guide: a tcp NI elsewhere goes
        "lnetctl net add --net tcp --if ens5",
        f"lnetctl net add --net efa --if {EFA_DEVICES[0]} --peer-credits 32",
        f"lnetctl net add --net efa --if {EFA_DEVICES[-1]} --peer-credits 32",
        "lnetctl set discovery 1",
        "lnetctl udsp add --src efa --priority 0"]
    state = lnet_state(node.lnet)
    assert [ni["if"] for ni in state["nets"]["efa"]] == [EFA_DEVICES[0], EFA_DEVICES[-1]]
    assert [ni["if"] for ni in state["nets"]["tcp"]] == ["ens5"]
    assert "mlx5_0" not in result.stdout  # only devices whose driver is efa
    assert f"EFA NIs {EFA_DEVICES[0]} {EFA_DEVICES[-1]} up" in result.stdout


def test_configure_is_idempotent(node):
    assert node.run("configure", "--interfaces", "2").returncode == 0
    node.log.write_text("")
    result = node.run("configure", "--interfaces", "2")
    assert result.returncode == 0, result.stderr
    changes = [c for c in node.calls("lnetctl") if " add" in c or " del" in c]
    assert changes == []
    assert len(lnet_state(node.lnet)["nets"]["efa"]) == 2


def test_configure_one_interface_takes_the_first_device_and_drops_others(node):
    assert node.run("configure", "--interfaces", "2").returncode == 0
    result = node.run("configure", "--interfaces", "1")
    assert result.returncode == 0, result.stderr
    assert [ni["if"] for ni in lnet_state(node.lnet)["nets"]["efa"]] == [EFA_DEVICES[0]]
    assert f"lnetctl net del --net efa --if {EFA_DEVICES[-1]}" in node.calls("lnetctl")


@pytest.mark.parametrize("os_release, kernel", [
    (AL2023, "6.18.36-69.138.amzn2023.x86_64"),  # EKS AL2023 Neuron AMI
    (AL2023, "6.1.155-176.282.amzn2023.x86_64"),  # HyperPod EKS AMI
    (UBUNTU_24, "7.0.0-1014-aws"),
    ('ID=rhel\nVERSION_ID="9.5"\n', "5.14.0-503.el9.x86_64"),
])
def test_configure_accepts_each_client_os_of_the_fsx_guide(tmp_path, os_release, kernel):
    node = Node(tmp_path, os_release=os_release)
    result = node.run("configure", "--interfaces", "1", STUB_KERNEL=kernel)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("os_release, kernel, named", [
    ('NAME="Ubuntu"\nID=ubuntu\nVERSION_ID="22.04"\n', "5.15.0-1051-aws",
     "Ubuntu 22.04 with kernel 5.15.0-1051-aws"),
    ('ID=ubuntu\nVERSION_ID="20.04"\n', "6.8.0-1017-aws", "Ubuntu 20.04 with kernel"),
    ('ID=rhel\nVERSION_ID="9.4"\n', "5.14.0", "RHEL 9.4"),
    ('ID=amzn\nVERSION_ID="2"\n', "5.10.0", "Amazon Linux 2"),
])
def test_a_client_os_outside_the_rule_fails_naming_it(tmp_path, os_release, kernel, named):
    node = Node(tmp_path, os_release=os_release)
    result = node.run("configure", "--interfaces", "2", STUB_KERNEL=kernel)
    assert result.returncode == 1
    line = error_line(result)
    assert "ERROR (os): " + named in line
    assert "Ubuntu 22.04 or newer with kernel 6.8+" in line
    assert node.calls("lnetctl") == [] and node.calls("modprobe") == []


def test_no_efa_device_fails(tmp_path):
    node = Node(tmp_path, devices=())
    result = node.run("configure", "--interfaces", "1")
    assert result.returncode == 1
    assert "ERROR (no-efa-device): no EFA device under /sys/class/infiniband" in error_line(result)
    assert node.calls("lnetctl") == []


def test_no_kefalnd_fails(node):
    result = node.run("configure", "--interfaces", "2", STUB_NO_KEFALND="1")
    assert result.returncode == 1
    line = error_line(result)
    assert "ERROR (no-kefalnd): no kefalnd kernel module (modinfo kefalnd)" in line
    assert "6.8.0-1017-aws" in line
    assert node.calls("lnetctl") == [] and node.calls("modprobe") == []


def test_an_ni_that_is_not_up_fails(node):
    result = node.run("configure", "--interfaces", "2", STUB_LNET_DOWN="1")
    assert result.returncode == 1
    assert "ERROR (ni-not-up): 0 of 2 EFA NIs" in error_line(result)


def test_a_failing_lnetctl_is_named(node):
    result = node.run("configure", "--interfaces", "2", STUB_LNET_FAIL="net add --net efa")
    assert result.returncode == 1
    line = error_line(result)
    assert f"ERROR (lnetctl): lnetctl net add --net efa --if {EFA_DEVICES[0]}" in line
    assert "Invalid argument" in line


def test_a_missing_module_is_named(node):
    result = node.run("configure", "--interfaces", "2", STUB_MODPROBE_FAIL="ksocklnd")
    assert result.returncode == 1
    assert "ERROR (modules): modprobe ksocklnd failed" in error_line(result)


def test_configure_never_removes_an_efa_ni_under_a_mounted_file_system(node):
    assert node.run("configure", "--interfaces", "2").returncode == 0
    fsx = node.mount()
    node.log.write_text("")
    result = node.run("configure", "--interfaces", "1")
    assert result.returncode == 1
    line = error_line(result)
    assert f"ERROR (mounted): LNet would have to remove the EFA NI on {EFA_DEVICES[-1]}" in line
    assert f"while Lustre is mounted at {fsx}" in line
    assert [c for c in node.calls("lnetctl") if " del" in c] == []
    assert len(lnet_state(node.lnet)["nets"]["efa"]) == 2


def test_configure_never_moves_the_tcp_ni_under_a_mounted_file_system(node):
    subprocess.run(["lnetctl", "lnet", "configure"], env=node.env, check=True)
    subprocess.run(["lnetctl", "net", "add", "--net", "tcp", "--if", "eth0"], env=node.env,
                   check=True)
    node.mount()
    result = node.run("configure", "--interfaces", "2")
    assert result.returncode == 1
    assert ("ERROR (mounted): LNet would have to remove the tcp NI on eth0 (the default route "
            "is on ens5)") in error_line(result)
    assert [ni["if"] for ni in lnet_state(node.lnet)["nets"]["tcp"]] == ["eth0"]


def test_every_lnetctl_and_modprobe_call_runs_under_timeout(node):
    result = node.run("configure", "--interfaces", "2")
    assert result.returncode == 0, result.stderr
    bounded = node.calls("timeout")
    assert len([c for c in bounded if " lnetctl " in c]) == len(node.calls("lnetctl")) > 0
    assert [c for c in bounded if " modprobe " in c] == [
        "timeout -k 5 60 modprobe lnet", "timeout -k 5 60 modprobe kefalnd ipif_name=ens5",
        "timeout -k 5 60 modprobe ksocklnd", "timeout -k 5 60 modprobe lustre"]
    assert all(c.startswith("timeout -k 5 30 lnetctl ") for c in bounded if " lnetctl " in c)


@pytest.mark.parametrize("hangs, says", [
    ("modprobe", "ERROR (modules): modprobe lnet did not finish within 60s"),
    ("lnetctl", "ERROR (lnetctl): lnetctl lnet configure did not finish within 30s"),
])
def test_a_hung_command_is_named(node, hangs, says):
    result = node.run("configure", "--interfaces", "2", STUB_TIMEOUT=hangs)
    assert result.returncode == 1
    assert says in error_line(result)


def test_the_ni_wait_defaults_to_60_seconds(node):
    env = {k: v for k, v in node.env.items() if k != "TRN_NI_WAIT_S"}
    result = subprocess.run(["bash", str(SCRIPT), "configure", "--interfaces", "2"],
                            env={**env, "STUB_LNET_DOWN": "1"}, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 1
    assert "0 of 2 EFA NIs" in error_line(result) and "are up after 60s" in error_line(result)


# --- the boot unit and the client -------------------------------------------------------------

def test_install_unit_configures_lnet_at_every_boot_before_the_remote_mounts(node):
    result = node.run("install-unit", "--interfaces", "2")
    assert result.returncode == 0, result.stderr
    installed = node.root / "usr/local/sbin/trn-lustre-efa"
    assert installed.read_text() == SCRIPT.read_text() and installed.stat().st_mode & 0o111
    unit = (node.root / "etc/systemd/system" / LUSTRE_EFA_UNIT).read_text()
    for line in ("Type=oneshot", "RemainAfterExit=yes", "After=network-online.target",
                 "Wants=network-online.target remote-fs-pre.target",
                 "Before=remote-fs-pre.target", "Restart=on-failure",
                 # Kubernetes nodes: LNet before kubelet starts pods after a reboot
                 "Before=kubelet.service nodeadm-run.service",
                 "ExecStart=/usr/local/sbin/trn-lustre-efa configure --interfaces 2",
                 "WantedBy=multi-user.target"):
        assert line in unit.splitlines()
    assert node.calls("systemctl") == ["systemctl daemon-reload",
                                       "systemctl enable trn-lustre-efa.service",
                                       "systemctl start trn-lustre-efa.service"]
    assert "timeout -k 5 150 systemctl start trn-lustre-efa.service" in node.calls("timeout")
    assert node.run("install-unit", "--interfaces", "2").returncode == 0  # rerun: same files


def unit_settings(text: str) -> dict[str, dict[str, str]]:
    """The ``[Section]`` ``Key=value`` settings of a systemd unit file (one value per key)."""
    sections: dict[str, dict[str, str]] = {}
    current = None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), {})
        else:
            key, _, value = line.partition("=")
            assert current is not None
            current[key] = value
    return sections


def seconds(value: str) -> int:
    """A systemd time span of whole seconds (``600s`` or ``600``)."""
    assert value.removesuffix("s").isdigit(), value
    return int(value.removesuffix("s"))


def test_the_boot_unit_ends_active_or_failed_in_bounded_time(node):
    """A oneshot unit has no start timeout by default, and its restarts only stop at the start
    limit: each attempt must be bounded (TimeoutStartSec) and StartLimitBurst attempts, each
    followed by RestartSec, must fit in StartLimitIntervalSec, so that the next start falls
    within the interval and is refused (the unit "failed") even when every attempt takes its
    whole time; an attempt must also leave room for configure's NI wait (60 s)."""
    assert node.run("install-unit", "--interfaces", "2").returncode == 0
    unit = unit_settings((node.root / "etc/systemd/system" / LUSTRE_EFA_UNIT).read_text())
    attempt = seconds(unit["Service"]["TimeoutStartSec"])
    restart = seconds(unit["Service"]["RestartSec"])
    burst = int(unit["Unit"]["StartLimitBurst"])
    interval = seconds(unit["Unit"]["StartLimitIntervalSec"])
    assert unit["Service"]["Restart"] == "on-failure" and burst >= 2
    assert burst * (attempt + restart) < interval
    assert attempt > 60 + 10  # the NI wait, and the modules and lnetctl calls around it
    assert burst * (attempt + restart) <= 600  # what kubelet and the automount may wait


def test_install_client_on_al2023_uses_dnf_only_without_kefalnd(tmp_path):
    node = Node(tmp_path, os_release=AL2023)
    assert node.run("install-client").returncode == 0
    assert node.calls("dnf") == []
    result = node.run("install-client", STUB_NO_KEFALND="1")
    assert result.returncode == 0, result.stderr
    assert node.calls("dnf") == ["dnf install -y lustre-client"]


def test_install_client_elsewhere_is_an_error(node):
    result = node.run("install-client", STUB_NO_KEFALND="1")
    assert result.returncode == 1
    assert "ERROR (install): no kefalnd, and only Amazon Linux 2023" in error_line(result)


# --- the check ---------------------------------------------------------------------------------

def test_check_over_efa_writes_the_probe_once_and_reads_it(node):
    assert node.run("configure", "--interfaces", "2").returncode == 0
    fsx = node.mount()
    result = node.run("check", "--mount", str(fsx), "--mib", "64")
    assert result.returncode == 0, result.stdout + result.stderr
    # counted over the read only: 64 received, spread over the two EFA NIs; tcp +1 (metadata)
    assert result.stdout.strip() == (
        f"lustre-efa check: efa (efa +64, tcp +1 LNet messages received while reading 64 MiB "
        f"with direct I/O from {fsx}, 2 EFA NI(s))")
    probe = fsx / ".trn-ultracluster/lustre-efa-probe-64MiB"
    assert probe.stat().st_size == 64 << 20
    assert sorted(p.name for p in probe.parent.iterdir()) == [probe.name]  # renamed in place
    (write, read) = node.calls("dd")
    assert "oflag=direct" in write and f"of={probe.parent}/.lustre-efa-probe." in write
    assert read == f"dd if={probe} of=/dev/null bs=1M iflag=direct status=none"
    node.log.write_text("")
    again = node.run("check", "--mount", str(fsx), "--mib", "64")  # another node: read only
    assert again.returncode == 0 and "efa +64, tcp +1" in again.stdout
    assert len(node.calls("dd")) == 1


def test_check_detects_the_fall_back_to_tcp(node):
    assert node.run("configure", "--interfaces", "2").returncode == 0
    fsx = node.mount()
    result = node.run("check", "--mount", str(fsx), "--mib", "64", STUB_ROUTE="tcp")
    assert result.returncode == 3
    assert result.stdout.startswith("lustre-efa check: tcp (efa +0, tcp +65 LNet messages")


@pytest.mark.parametrize("route, efa, tcp", [
    ("few", 8, 1),  # EFA more than tcp, but fewer than MiB/2 messages
    ("even", 32, 33),  # at least MiB/2 on EFA, but not more than tcp
])
def test_check_needs_both_half_the_mib_on_efa_and_more_than_tcp(node, route, efa, tcp):
    assert node.run("configure", "--interfaces", "2").returncode == 0
    fsx = node.mount()
    result = node.run("check", "--mount", str(fsx), "--mib", "64", STUB_ROUTE=route)
    assert result.returncode == 3, result.stdout + result.stderr
    assert result.stdout.startswith(f"lustre-efa check: tcp (efa +{efa}, tcp +{tcp} LNet messages")


def probe_writer_sleep(node: Node, probe: Path, mib: int) -> None:
    """A ``sleep`` stub during which another node finishes writing the probe."""
    (node.bin / "sleep").write_text(f'#!/bin/bash\necho "sleep $*" >> "$STUB_LOG"\n'
                                    f'truncate -s {mib << 20} {probe}\n')


def test_check_waits_for_the_probe_another_node_is_writing_and_only_reads_it(node):
    assert node.run("configure", "--interfaces", "2").returncode == 0
    fsx = node.mount()
    state = fsx / ".trn-ultracluster"
    probe = state / "lustre-efa-probe-64MiB"
    (state / "lustre-efa-probe-64MiB.lock").mkdir(parents=True)  # another node writes it
    probe_writer_sleep(node, probe, 64)
    result = node.run("check", "--mount", str(fsx), "--mib", "64")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "efa +64, tcp +1" in result.stdout
    assert node.calls("dd") == [f"dd if={probe} of=/dev/null bs=1M iflag=direct status=none"]
    assert node.calls("sleep") == ["sleep 2"]
    assert sorted(p.name for p in state.iterdir()) == [probe.name, probe.name + ".lock"]


@pytest.mark.parametrize("route, noise, verdict, status", [
    ("efa", "tcp", "efa (efa +64, tcp +1 ", 0),  # tcp traffic while waiting: not counted
    ("tcp", "efa", "tcp (efa +0, tcp +65 ", 3),  # EFA traffic while waiting: not counted
])
def test_check_counts_only_the_read_of_the_probe(node, route, noise, verdict, status):
    """Another node writes the probe while this one waits; meanwhile the node has other
    traffic (metadata, a job). Only the read of the probe may count: a healthy node must not
    be judged TCP for tcp traffic in the wait, nor a TCP node EFA for EFA traffic in it."""
    assert node.run("configure", "--interfaces", "2").returncode == 0
    fsx = node.mount()
    state = fsx / ".trn-ultracluster"
    probe = state / "lustre-efa-probe-64MiB"
    (state / "lustre-efa-probe-64MiB.lock").mkdir(parents=True)
    (node.bin / "sleep").write_text(f'#!/bin/bash\necho "sleep $*" >> "$STUB_LOG"\n'
                                    f'{traffic_command(node.lnet, noise, 1000)}\n'
                                    f'truncate -s {64 << 20} {probe}\n')
    result = node.run("check", "--mount", str(fsx), "--mib", "64", STUB_ROUTE=route)
    assert result.returncode == status, result.stdout + result.stderr
    assert f"lustre-efa check: {verdict}" in result.stdout
    assert lnet_state(node.lnet)["nets"][noise][0]["recv"] >= 1000  # the noise was there


def test_check_counts_the_efa_messages_dropped_as_not_received(node):
    assert node.run("configure", "--interfaces", "2").returncode == 0
    fsx = node.mount()
    result = node.run("check", "--mount", str(fsx), "--mib", "64", STUB_EFA_DROP="1")
    assert result.returncode == 3, result.stdout + result.stderr
    assert "lustre-efa check: tcp (efa +0, tcp +1 " in result.stdout


def test_the_check_io_on_lustre_is_bounded(node):
    assert node.run("configure", "--interfaces", "2").returncode == 0
    fsx = node.mount()
    result = node.run("check", "--mount", str(fsx), "--mib", "64", STUB_TIMEOUT="dd")
    assert result.returncode == 1
    assert "ERROR (check): cannot write 64 MiB" in error_line(result)
    assert "within 300s" in error_line(result)
    assert any(c.startswith("timeout -k 5 30 stat -c %s ") for c in node.calls("timeout"))
    node.log.write_text("")
    ok = node.run("check", "--mount", str(fsx), "--mib", "64")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert [c for c in node.calls("timeout") if " dd " in c] == [
        "timeout -k 5 300 dd if=/dev/urandom of=" + node.calls("dd")[0].split("of=")[1],
        f"timeout -k 5 300 dd if={fsx}/.trn-ultracluster/lustre-efa-probe-64MiB of=/dev/null "
        "bs=1M iflag=direct status=none"]


def test_check_gives_up_when_the_lock_holder_writes_nothing_in_time(node):
    assert node.run("configure", "--interfaces", "2").returncode == 0
    fsx = node.mount()
    (fsx / ".trn-ultracluster/lustre-efa-probe-64MiB.lock").mkdir(parents=True)
    result = node.run("check", "--mount", str(fsx), "--mib", "64", TRN_PROBE_WAIT_S="6")
    assert result.returncode == 1
    assert "ERROR (check): " in error_line(result) and "after 6s while another node holds" in result.stderr
    assert node.calls("dd") == [] and len(node.calls("sleep")) == 3


def test_check_takes_over_a_stale_lock(node):
    import os
    import time

    assert node.run("configure", "--interfaces", "2").returncode == 0
    fsx = node.mount()
    lock = fsx / ".trn-ultracluster/lustre-efa-probe-64MiB.lock"
    lock.mkdir(parents=True)
    old = time.time() - 301
    os.utime(lock, (old, old))  # its writer died more than TRN_PROBE_WAIT_S ago
    result = node.run("check", "--mount", str(fsx), "--mib", "64")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "taking over the probe lock" in result.stderr
    assert len(node.calls("dd")) == 2 and "of=/dev/null" in node.calls("dd")[1]
    assert sorted(p.name for p in lock.parent.iterdir()) == ["lustre-efa-probe-64MiB"]


def test_check_without_an_efa_net_is_tcp(node):
    fsx = node.mount()
    node.run("configure", "--interfaces", "1", STUB_NO_KEFALND="1")
    subprocess.run(["lnetctl", "lnet", "configure"], env=node.env, check=True)
    subprocess.run(["lnetctl", "net", "add", "--net", "tcp", "--if", "ens5"], env=node.env,
                   check=True)
    result = node.run("check", "--mount", str(fsx), "--mib", "8")
    assert result.returncode == 3 and "0 EFA NI(s)" in result.stdout


def test_check_of_a_directory_that_is_not_mounted_is_an_error(node):
    result = node.run("check", "--mount", str(node.root / "fsx"), "--mib", "8")
    assert result.returncode == 1
    assert "ERROR (check): " in error_line(result) and "not a mounted Lustre" in result.stderr


# --- the metric ---------------------------------------------------------------------------------

def test_report_puts_the_metric_with_the_node_dimensions(node):
    result = node.run("report", "--value", "1", *REPORT_ARGS)
    assert result.returncode == 0, result.stderr
    assert node.calls("aws") == [
        "aws cloudwatch put-metric-data --region us-west-2 --namespace TrnUltraCluster/Neuron "
        "--metric-name node_fsx_lustre_over_efa --unit Count --value 1 --dimensions "
        "ClusterName=trn-cluster,InstanceId=i-0123456789abcdef0,NodeName=node-1"]


def test_report_never_fails_the_node(node):
    result = node.run("report", "--value", "0", *REPORT_ARGS, STUB_CW_FAIL="1",
                      TRN_INSTANCE_ID="")
    assert result.returncode == 0
    assert "WARNING: could not publish node_fsx_lustre_over_efa=0" in result.stdout
    assert "InstanceId=unknown" in node.calls("aws")[0]  # no instance metadata here
    # after a bounded number of attempts: 5 token requests, 3 s apart
    assert len(node.calls("curl")) == 5 and node.calls("sleep") == ["sleep 3"] * 4


def test_report_asks_the_instance_metadata_service_again(node):
    """The service does not answer the first two calls (e.g. at boot): the third does."""
    result = node.run("report", "--value", "1", *REPORT_ARGS, TRN_INSTANCE_ID="",
                      STUB_IMDS_AFTER="2")
    assert result.returncode == 0, result.stderr
    assert "InstanceId=i-0fedcba9876543210," in node.calls("aws")[0]
    assert node.calls("sleep") == ["sleep 3"] * 2


def test_usage_errors(node):
    for args in (["configure"], ["report", "--value", "2", *REPORT_ARGS],
                 ["watch", "--mode", "on", "--mib", "8", *REPORT_ARGS], ["nope"]):
        result = node.run(*args)
        assert result.returncode == 1 and "ERROR (usage)" in result.stderr, args


# --- Kubernetes nodes: set-up at boot and the watcher -------------------------------------------

def test_csi_node_sets_up_lnet_the_unit_and_the_watcher(tmp_path):
    node = Node(tmp_path, os_release=AL2023)
    result = node.run("csi-node", "--mode", "required", "--interfaces", "2", "--mib", "8",
                      *REPORT_ARGS, STUB_NO_KEFALND="1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert node.calls("dnf") == ["dnf install -y lustre-client"]
    assert len(lnet_state(node.lnet)["nets"]["efa"]) == 2
    watcher = (node.root / "etc/systemd/system/trn-lustre-efa-check.service").read_text()
    assert ("ExecStart=/usr/local/sbin/trn-lustre-efa watch --mode required --mib 8 "
            "--region us-west-2 --namespace TrnUltraCluster/Neuron --metric "
            "node_fsx_lustre_over_efa --cluster trn-cluster --instance-id i-0123456789abcdef0"
            ) in watcher.splitlines()
    assert "Type=exec" in watcher.splitlines()
    assert "systemctl enable --now trn-lustre-efa-check.service" in node.calls("systemctl")
    assert node.calls("aws") == []  # the watcher reports, once a file system is mounted


def test_the_watcher_gets_the_instance_id_from_the_instance_metadata_service(node):
    result = node.run("install-watcher", "--mode", "preferred", "--mib", "8", *REPORT_ARGS,
                      TRN_INSTANCE_ID="", STUB_IMDS_AFTER="0")
    assert result.returncode == 0, result.stdout + result.stderr
    watcher = (node.root / "etc/systemd/system/trn-lustre-efa-check.service").read_text()
    (start,) = [ln for ln in watcher.splitlines() if ln.startswith("ExecStart=")]
    assert start.endswith(" --cluster trn-cluster --instance-id i-0fedcba9876543210")


def test_the_watcher_without_instance_metadata_asks_again_when_it_reports(node):
    result = node.run("install-watcher", "--mode", "preferred", "--mib", "8", *REPORT_ARGS,
                      TRN_INSTANCE_ID="")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING: no instance id from the instance metadata service" in result.stdout
    watcher = (node.root / "etc/systemd/system/trn-lustre-efa-check.service").read_text()
    assert "--instance-id" not in watcher


@pytest.mark.parametrize("flag, value", [("--cluster", "trn cluster"),
                                         ("--region", "us-west-2 --mode required"),
                                         ("--instance-id", "i-1 x"), ("--region", "")])
def test_a_report_value_that_is_not_one_word_is_refused(node, flag, value):
    """The values go into the watcher's ExecStart, where a space would split them."""
    args = list(REPORT_ARGS)
    if flag in args:
        args[args.index(flag) + 1] = value
    else:
        args += [flag, value]
    result = node.run("install-watcher", "--mode", "preferred", "--mib", "8", *args)
    assert result.returncode == 1
    assert "ERROR (usage)" in error_line(result)
    assert not (node.root / "etc/systemd/system/trn-lustre-efa-check.service").exists()


@pytest.mark.parametrize("mode, status", [("required", 1), ("preferred", 4)])
@pytest.mark.parametrize("fail, cause", [
    ({"STUB_SYSTEMCTL_FAIL": "enable"}, "(install): systemctl enable trn-lustre-efa.service failed"),
    ({"STUB_SYSTEMCTL_FAIL": "daemon-reload"}, "(install): systemctl daemon-reload failed"),
    ({"mktemp": "1"}, "(install): cannot create a temporary file beside /usr/local/sbin/"),
])
def test_csi_node_whose_unit_or_watcher_cannot_be_installed_applies_the_mode(
        tmp_path, mode, status, fail, cause):
    """LNet is configured, but the boot unit or the watcher cannot be installed: a named cause
    and 0 on the dashboard, a failure in mode required, exit 4 in mode preferred (as when LNet
    cannot be configured)."""
    node = Node(tmp_path, os_release=AL2023)
    env = dict(fail)
    if env.pop("mktemp", None):
        (node.bin / "mktemp").write_text("#!/bin/bash\necho 'mktemp: failed' >&2\nexit 1\n")
        (node.bin / "mktemp").chmod(0o755)
    result = node.run("csi-node", "--mode", mode, "--interfaces", "2", "--mib", "8",
                      *REPORT_ARGS, **env)
    assert result.returncode == status, result.stdout + result.stderr
    assert len(lnet_state(node.lnet)["nets"]["efa"]) == 2  # LNet itself was configured
    (put,) = node.calls("aws")
    assert "--value 0 " in put
    if mode == "required":
        (line,) = [ln for ln in result.stderr.splitlines() if "is required" in ln]
        assert "ERROR: FSx for Lustre over EFA is required (fsx.efa: true)" in line
        assert cause in line
    else:
        assert "WARNING: LNet is configured for EFA, but its boot unit" in result.stdout
        assert cause in result.stdout
        assert "required" not in result.stdout + result.stderr


@pytest.mark.parametrize("mode, status", [("required", 1), ("preferred", 4)])
def test_csi_node_that_cannot_configure_reports_0(tmp_path, mode, status):
    """4: preferred, not configured, the node goes on over TCP (callers must not say "set up")."""
    node = Node(tmp_path, os_release=AL2023, devices=())
    result = node.run("csi-node", "--mode", mode, "--interfaces", "2", "--mib", "8",
                      *REPORT_ARGS)
    assert result.returncode == status, result.stdout + result.stderr
    assert node.calls("aws")[0].endswith("--value 0 --dimensions "
                                         "ClusterName=trn-cluster,InstanceId=i-0123456789abcdef0,"
                                         "NodeName=node-1")
    assert "no EFA device" in result.stdout + result.stderr
    assert not (node.root / "etc/systemd/system/trn-lustre-efa.service").exists()
    if mode == "required":
        assert ("ERROR: FSx for Lustre over EFA is required (fsx.efa: true) and LNet could not "
                "be configured for EFA: (no-efa-device)") in result.stderr
    else:
        assert "WARNING: LNet could not be configured for EFA (" in result.stdout


@pytest.mark.parametrize("route, mode, status, value, says", [
    ("efa", "required", 0, "1", "lustre-efa check: efa"),
    ("tcp", "preferred", 0, "0", "WARNING: this node's Lustre traffic does not go over EFA"),
    ("tcp", "required", 1, "0", "ERROR: FSx for Lustre over EFA is required"),
])
def test_watcher_checks_the_first_lustre_mount_and_reports(node, route, mode, status, value,
                                                          says):
    assert node.run("configure", "--interfaces", "2").returncode == 0
    csi = node.mount("/var/lib/kubelet/plugins/kubernetes.io/csi/fsx.csi.aws.com/abc/globalmount")
    result = node.run("watch", "--mode", mode, "--mib", "8", *REPORT_ARGS, STUB_ROUTE=route)
    assert result.returncode == status, result.stdout + result.stderr
    assert says in result.stdout
    (put,) = node.calls("aws")
    assert f"--value {value} " in put
    assert (csi / ".trn-ultracluster/lustre-efa-probe-8MiB").is_file()
    log = (node.root / "var/log/trn-ultracluster/lustre-efa.log").read_text()
    assert says in log and "waiting for a Lustre mount" in log
    if route == "tcp":
        assert "security group id (0.0.0.0/0 rules do not count for EFA)" in result.stdout


@pytest.mark.parametrize("mode, status, says", [
    ("required", 1, "ERROR: FSx for Lustre over EFA is required (fsx.efa: true) and "
                    "trn-lustre-efa.service failed"),
    ("preferred", 0, "WARNING: trn-lustre-efa.service failed"),
])
def test_watcher_reports_0_when_the_lnet_unit_failed_and_nothing_mounts(node, mode, status, says):
    """After a reboot whose LNet unit failed (after its restarts): in mode required the
    automount requires the unit, so no Lustre mount ever shows up; the watcher must not wait
    for it forever."""
    (node.root / "proc").mkdir()
    (node.root / "proc/mounts").write_text("proc /proc proc rw 0 0\n")
    result = node.run("watch", "--mode", mode, "--mib", "8", *REPORT_ARGS, STUB_UNIT_FAILED="1")
    assert result.returncode == status, result.stdout + result.stderr
    assert says in result.stdout
    (put,) = node.calls("aws")
    assert "--value 0 " in put
    assert f"systemctl is-failed --quiet {LUSTRE_EFA_UNIT}" in node.calls("systemctl")
    assert node.calls("sleep") == []


def test_watcher_does_not_report_a_check_that_failed(node):
    """A check error (exit 1, here: the probe cannot be written) is not the TCP verdict."""
    assert node.run("configure", "--interfaces", "2").returncode == 0
    fsx = node.mount()
    (node.bin / "dd").write_text('#!/bin/bash\necho "dd $*" >> "$STUB_LOG"\nexit 1\n')
    result = node.run("watch", "--mode", "preferred", "--mib", "8", *REPORT_ARGS)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "ERROR: the check of FSx for Lustre over EFA failed ((check): cannot write 8 MiB" in result.stdout
    assert "does not go over EFA" not in result.stdout
    assert node.calls("aws") == []
    assert not (fsx / ".trn-ultracluster/lustre-efa-probe-8MiB.lock").exists()


def test_watcher_waits_for_the_mount(node):
    assert node.run("configure", "--interfaces", "1").returncode == 0
    (node.root / "proc").mkdir()
    (node.root / "proc/mounts").write_text("proc /proc proc rw 0 0\n")
    sleeper = node.bin / "sleep"  # the first poll finds nothing; the mount shows up meanwhile
    sleeper.write_text(f'#!/bin/bash\necho "sleep $*" >> "$STUB_LOG"\n'
                       f'mkdir -p {node.root}/fsx\n'
                       f'echo "x@tcp:/m {node.root}/fsx lustre rw 0 0" >> {node.root}/proc/mounts\n')
    result = node.run("watch", "--mode", "preferred", "--mib", "4", *REPORT_ARGS,
                      TRN_WATCH_POLL_S="7")
    assert result.returncode == 0, result.stdout + result.stderr
    assert node.calls("sleep") == ["sleep 7"]
    assert "--value 1 " in node.calls("aws")[0]
