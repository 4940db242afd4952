"""The collection gpuop.gates as a platform team gets it: built, installed elsewhere, used by FQCN.

The artifact is built from the checkout (tools/build-collection.py, as `make collection` does) and
installed into an empty collections folder next to a playbook in a temporary folder. Ansible runs
there with no ansible.cfg, no ANSIBLE_* variable and no path into the checkout: it finds
gpuop.gates only as the playbook-adjacent collection (``<playbook dir>/collections``). The playbook
uses the roles and modules by FQCN with values that are not the lab's (other nodes, runtime class,
namespaces, GPU sizes and counts) against a kwok cluster the installed roles create. Expected values
come from the rules in docs/facts.md (the scheduler's message, time-slicing arithmetic, the
DaemonSet controller's maxUnavailable), never from gpuop's output.
"""

import glob
import json
import os
import subprocess
import tarfile

import pytest
import yaml

from gpuop_testlib import ROOT

VENV_BIN = os.path.join(ROOT, ".venv", "bin")
CLUSTER = "gpuop-outside"

# Not the lab's values (the lab: lab-node-0/1/2, nvidia, gpu-lab/cuda-probe, 4 x 40 GiB x 5, gpu-operator).
VALUES = {
    "nodes": ["gpu-a", "gpu-b"],
    "runtime_class": "nvidia-cdi",
    "namespace": "ml-jobs",
    "pod": "trainer",
    "sharing_namespace": "gpu-sharing",
    "physical_gpus": 2,
    "vram_gib": 80,
    "replicas": 3,
    "toolkit_namespace": "nv-system",
    "toolkit_name": "ctk",
}

PLAYBOOK = r"""
- name: gpuop.gates from an installed collection
  hosts: localhost
  connection: local
  gather_facts: false
  vars:
    # The modules that talk to a cluster need the kubernetes package: the controller's own Python has it.
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
    root: "{{ playbook_dir }}/root"
    kubeconfig: "{{ root }}/kubeconfig"
  module_defaults:
    group/gpuop.gates.k8s:
      kubeconfig: "{{ kubeconfig }}"
  tasks:
    - name: Control plane binaries (the pin's cached build)
      ansible.builtin.include_role:
        name: gpuop.gates.toolchain

    - name: A kwok cluster with two GPU nodes of 16 CPUs and 48Gi
      ansible.builtin.include_role:
        name: gpuop.gates.kwok_cluster
      vars:
        kwok_cluster_name: "%(cluster)s"
        kwok_cluster_kubeconfig: "{{ kubeconfig }}"
        kwok_cluster_bin_dir: "{{ toolchain_bin_dir }}"
        kwok_cluster_nodes: %(nodes)s
        kwok_cluster_node_capacity: {cpu: "16", memory: 48Gi, pods: "50"}
        kwok_cluster_wait_timeout: 180

    - name: A RuntimeClass and a pod asking for two GPUs, Pending
      ansible.builtin.include_role:
        name: gpuop.gates.gpu_pod
      vars:
        gpu_pod_kubeconfig: "{{ kubeconfig }}"
        gpu_pod_manifest_dir: "{{ root }}/k8s"
        gpu_pod_output_dir: "{{ root }}/out"
        gpu_pod_runtime_class: %(runtime_class)s
        gpu_pod_runtime_handler: %(runtime_class)s
        gpu_pod_namespace: %(namespace)s
        gpu_pod_name: %(pod)s
        gpu_pod_resource_count: 2

    - name: The second node advertises two GPUs; the pod runs
      ansible.builtin.include_role:
        name: gpuop.gates.node_advertisement
      vars:
        node_advertisement_kubeconfig: "{{ kubeconfig }}"
        node_advertisement_nodes: [%(node_b)s]
        node_advertisement_quantity: 2
        node_advertisement_wait_pod: {namespace: %(namespace)s, name: %(pod)s}
        node_advertisement_table_nodes: %(nodes)s
        node_advertisement_table_dest: "{{ root }}/out/node-gpu.txt"

    - name: Time-slicing on the first node, 2 x 80 GiB x 3 replicas
      ansible.builtin.include_role:
        name: gpuop.gates.gpu_time_slicing
      vars:
        gpu_time_slicing_kubeconfig: "{{ kubeconfig }}"
        gpu_time_slicing_manifest: "{{ root }}/k8s/sharing.yaml"
        gpu_time_slicing_namespace: %(sharing_namespace)s
        gpu_time_slicing_configmap: h100-sharing
        gpu_time_slicing_physical_gpus: %(physical_gpus)s
        gpu_time_slicing_vram_per_gpu_gib: %(vram_gib)s
        gpu_time_slicing_replicas: %(replicas)s
        gpu_time_slicing_product: NVIDIA-H100-80GB-HBM3
        gpu_time_slicing_nodes: [%(node_a)s]
        gpu_time_slicing_dest: "{{ root }}/out/slots.txt"

    - name: A toolkit DaemonSet whose update asks 96Gi on 48Gi nodes
      ansible.builtin.include_role:
        name: gpuop.gates.toolkit_rollout
      vars:
        toolkit_rollout_kubeconfig: "{{ kubeconfig }}"
        toolkit_rollout_manifest: "{{ root }}/k8s/ctk.yaml"
        toolkit_rollout_namespace: %(toolkit_namespace)s
        toolkit_rollout_name: %(toolkit_name)s
        toolkit_rollout_memory_request: 64Mi
        toolkit_rollout_new_memory_request: 96Gi
        toolkit_rollout_dest: "{{ root }}/out/rollout.txt"

    - name: The rollout report as a module, the cluster set once by the action group
      gpuop.gates.daemonset_rollout:
        namespace: %(toolkit_namespace)s
        name: %(toolkit_name)s
      register: report

    - name: The sharing arithmetic as a module
      gpuop.gates.gpu_sharing:
        config: |
          version: v1
          sharing:
            timeSlicing:
              resources:
                - name: nvidia.com/gpu
                  replicas: 4
        physical_gpus: 8
        vram_per_gpu_gib: 24
      register: sharing

    - name: The merge prediction on a config that is not the lab's
      gpuop.gates.containerd_merge:
        config: "{{ playbook_dir }}/node/config.toml"
      register: merge

    - name: The read-only doctor, the cluster set once by the action group
      gpuop.gates.gpu_doctor:
        output_dir: "{{ root }}/doctor"
        runtime_classes: [%(runtime_class)s]
      register: doctor

    - name: Keep what the modules said
      ansible.builtin.copy:
        dest: "{{ root }}/results.json"
        # What does not change between runs (no timings, no API call lists).
        content: "{{ {'blocker': report.blocker.kind, 'slots': sharing.slots, 'predicted': merge.predicted} | to_nice_json }}\n"
        mode: "0644"
"""

# A node's main file with its own runtime (kata) and a drop-in that redeclares the CRI runtimes table.
NODE_MAIN = """version = 2
imports = ["%(dir)s/conf.d/*.toml"]
[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]
  runtime_type = "io.containerd.kata.v2"
"""
NODE_DROPIN = """version = 2
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia-legacy]
  runtime_type = "io.containerd.runc.v2"
"""


def _clean_env(home):
    """No ANSIBLE_* variable, no checkout on any path: only the venv's binaries called by absolute path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "PYTHON", "GPUOP_", "MOLECULE_"))}
    env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
    env["HOME"] = home
    return env


def _run(argv, cwd, env, check=True):
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if check:
        assert proc.returncode == 0, "%s failed (rc %s):\n%s\n%s" % (" ".join(argv), proc.returncode,
                                                                    proc.stdout[-6000:], proc.stderr[-3000:])
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """Build the artifact, install it next to a playbook in an empty folder; yield (folder, env)."""
    work = tmp_path_factory.mktemp("outside")
    dist = work / "dist"
    proc = subprocess.run([os.path.join(VENV_BIN, "python"), os.path.join(ROOT, "tools", "build-collection.py"),
                           "--output-path", str(dist)], cwd=ROOT, capture_output=True, text=True, check=False,
                          env=dict(os.environ, PATH=VENV_BIN + os.pathsep + os.environ["PATH"]))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    artifacts = glob.glob(str(dist / "gpuop-gates-*.tar.gz"))
    assert [os.path.basename(a) for a in artifacts] == ["gpuop-gates-1.0.0.tar.gz"]
    # The artifact holds real files (no link into the checkout), its modules under plugins/modules.
    with tarfile.open(artifacts[0]) as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert not [n for n, m in members.items() if m.issym() or m.islnk()]
    for name in ("plugins/modules/k8s_apply.py", "plugins/module_utils/k8s.py", "plugins/filter/same_requests.py",
                 "plugins/doc_fragments/k8s.py", "roles/gpu_pod/meta/argument_specs.yml", "meta/runtime.yml",
                 "LICENSE", "tools/controlplane/go.mod"):
        assert name in members, name
    folder = work / "project"
    folder.mkdir()
    home = work / "home"
    home.mkdir()
    env = _clean_env(str(home))
    _run([os.path.join(VENV_BIN, "ansible-galaxy"), "collection", "install", artifacts[0], "-p",
          str(folder / "collections")], cwd=str(folder), env=env)
    assert not (folder / "ansible.cfg").exists()
    node = folder / "node"
    (node / "conf.d").mkdir(parents=True)
    (node / "config.toml").write_text(NODE_MAIN % {"dir": str(node)})
    (node / "conf.d" / "50-gpu.toml").write_text(NODE_DROPIN)
    values = dict(VALUES, cluster=CLUSTER, node_a=VALUES["nodes"][0], node_b=VALUES["nodes"][1],
                  nodes=json.dumps(VALUES["nodes"]))
    (folder / "play.yml").write_text("---\n" + PLAYBOOK % values)
    yield folder, env
    kwokctl = os.path.join(_bin_dir(), "kwokctl")
    subprocess.run([kwokctl, "delete", "cluster", "--name", CLUSTER, "--kubeconfig", str(folder / "root" / "kubeconfig")],
                   env=dict(env, PATH=_bin_dir() + os.pathsep + env["PATH"]), capture_output=True, check=False)


def _bin_dir():
    cache = os.path.join(os.path.expanduser("~"), ".cache", "gpuop")
    found = sorted(glob.glob(os.path.join(cache, "*", "bin", "kwokctl")), key=os.path.getmtime)
    assert found, "no control-plane build under %s" % cache
    return os.path.dirname(found[-1])


def _recap(stdout):
    line = [l for l in stdout.splitlines() if l.startswith("localhost")][-1]
    return dict(part.split("=") for part in line.split(":", 1)[1].split())


def _outputs(root):
    out = {}
    for path in sorted(glob.glob(os.path.join(root, "**", "*"), recursive=True)):
        if os.path.isfile(path) and not path.endswith("kubeconfig"):
            with open(path, "rb") as handle:
                out[os.path.relpath(path, root)] = handle.read()
    return out


def test_installed_collection_runs_by_fqcn_with_other_values_and_again_changes_nothing(installed):
    folder, env = installed
    # The test's HOME is empty, so the toolchain role would build: point it at the pin's cached build.
    cache = os.path.dirname(os.path.dirname(_bin_dir()))
    argv = [os.path.join(VENV_BIN, "ansible-playbook"), "play.yml", "-i", "localhost,", "-e",
            "toolchain_cache_dir=" + cache]
    first = _run(argv, cwd=str(folder), env=env)
    root = folder / "root"
    lines = {name: (root / "out" / name).read_text().split("\n")
             for name in ("unscheduled.txt", "node-gpu.txt", "slots.txt", "rollout.txt")}
    # The scheduler: no node has the extended resource yet.
    assert lines["unscheduled.txt"][0] == "Unschedulable"
    assert lines["unscheduled.txt"][1].startswith("0/2 nodes are available: 2 Insufficient nvidia.com/gpu.")
    # Recorded when the pod ran: gpu-b advertised 2, gpu-a nothing yet.
    assert [l.split() for l in lines["node-gpu.txt"] if l] == [["gpu-a", "0"], ["gpu-b", "2"]]
    # 2 GPUs x 3 replicas = 6 slots; time-slicing divides no memory (0 guaranteed, 80 shared per GPU).
    assert lines["slots.txt"] == ["PHYSICAL_GPUS=2", "REPLICAS=3", "ADVERTISED=6", "VRAM_PER_GPU_GIB=80",
                                  "VRAM_GUARANTEED_PER_SLOT_GIB=0", "VRAM_SHARED_PER_GPU_GIB=80", "ISOLATION=none", ""]
    # maxUnavailable 1 on 2 nodes: one old pod replaced by a new one that cannot fit 96Gi on 48Gi.
    assert lines["rollout.txt"] == ["DESIRED=2", "UPDATED=1", "READY=1", "OLD_IMAGE_PODS=1", "MAX_UNAVAILABLE=1",
                                    "BLOCKER=insufficient-memory", ""]
    manifest = yaml.safe_load((root / "k8s" / "runtimeclass.yaml").read_text())
    assert (manifest["metadata"]["name"], manifest["handler"]) == ("nvidia-cdi", "nvidia-cdi")
    results = json.loads((root / "results.json").read_text())
    # 8 GPUs x 4 replicas = 32 slots.
    assert results["slots"] == 32, results
    assert results["blocker"] == "insufficient-memory", results
    doctor = json.loads((root / "doctor" / "doctor.json").read_text())
    assert doctor["api_calls"], doctor
    # containerd 2.x merges the imported tables into the main file's: all three runtimes load. 1.x replaces the
    # whole CRI section by the drop-in's: runc, the default, is gone and the CRI plugin fails.
    predicted = results["predicted"]
    assert predicted["containerd_2"]["runtimes"] == ["kata", "nvidia-legacy", "runc"], predicted
    assert predicted["containerd_2"]["cri_loads"] is True, predicted
    assert (predicted["containerd_1"]["runtimes"], predicted["containerd_1"]["cri_loads"]) == (["nvidia-legacy"], False)
    before = _outputs(str(root))
    second = _run(argv, cwd=str(folder), env=env)
    recap = _recap(second.stdout)
    assert recap["changed"] == "0" and recap["failed"] == "0", second.stdout[-4000:]
    assert _outputs(str(root)) == before


def test_ansible_doc_renders_every_module_filter_and_role_by_fqcn(installed):
    folder, env = installed
    names = json.loads(_run([os.path.join(VENV_BIN, "ansible-doc"), "--playbook-dir", ".", "-l", "gpuop.gates", "--json"],
                            cwd=str(folder), env=env).stdout)
    modules = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(ROOT, "library", "*.py")))
    assert sorted(names) == ["gpuop.gates." + m for m in modules]
    filters = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(ROOT, "plugins", "filter", "*.py")))
    tests = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(ROOT, "plugins", "test", "*.py")))
    assert {"input_errors", "same_requests", "sharing", "toml_key"} <= set(filters) and tests == ["created_by_gpuop"]
    for kind, plugin in ([("module", "gpuop.gates." + m) for m in modules] + [("filter", "gpuop.gates." + f) for f in filters]
                         + [("test", "gpuop.gates." + t) for t in tests]):
        proc = _run([os.path.join(VENV_BIN, "ansible-doc"), "--playbook-dir", ".", "-t", kind, plugin, "--json"], cwd=str(folder), env=env)
        assert plugin in json.loads(proc.stdout), proc.stdout[:500]
        assert "WARNING" not in proc.stderr and "ERROR" not in proc.stderr, proc.stderr
    roles = sorted(os.listdir(os.path.join(ROOT, "roles")))
    for role in roles:
        proc = _run([os.path.join(VENV_BIN, "ansible-doc"), "--playbook-dir", ".", "-t", "role", "gpuop.gates." + role, "--json"],
                    cwd=str(folder), env=env)
        assert "gpuop.gates." + role in json.loads(proc.stdout), proc.stdout[:500]
