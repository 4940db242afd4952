"""gpuop.summary: site.yml's last lines, built from the outputs' texts (data tables).

The texts below are written by hand in the seed's formats (KEY=value lines, the scheduler's message, the
node table); the expected lines are the summary's format filled with those values.
"""

import json

import pytest

from ansible_collections.gpuop.gates.plugins.module_utils.summary import OUTPUTS, key_values, summary_lines
from ansible_collections.gpuop.gates.plugins.lookup.incident_summary import read_outputs

MERGE = ("MAIN_RUNTIMES=runc\nDROPIN_RUNTIMES=nvidia\nCONFLICT=yes\n"
         'CONFLICT_TABLE=plugins."io.containerd.grpc.v1.cri".containerd.runtimes\nLOADED_RUNTIMES=runc\n')
SLOTS = ("PHYSICAL_GPUS=4\nVRAM_PER_GPU_GIB=40\nREPLICAS=5\nTOTAL_SLOTS=20\nVRAM_GUARANTEED_PER_SLOT_GIB=0\n"
         "ISOLATION=none\nADVERTISED=20\n")
ROLLOUT = "DESIRED=3\nUPDATED=1\nREADY=2\nOLD_IMAGE_PODS=2\nMAX_UNAVAILABLE=1\nBLOCKER=insufficient-memory\n"
VIEWS = json.dumps({"observations": [
    {"moment": "before", "daemons": [{"loaded": {"containerd_version": "1.6.20", "cri_loaded": True, "runtimes": ["runc"]}}]},
    {"moment": "after-restart", "daemons": [
        {"loaded": {"containerd_version": "1.6.20", "cri_loaded": False, "runtimes": [], "error": "invalid plugin config"}},
        {"loaded": {"containerd_version": "2.4.2", "cri_loaded": True, "runtimes": ["nvidia", "runc"]}}]}]})
UNSCHEDULED = "Unschedulable\n0/3 nodes are available: 3 Insufficient nvidia.com/gpu.\n"
NODE_GPU = "lab-node-0  4\nlab-node-1  0\nlab-node-2  0\n"

FULL = {"merge.txt": MERGE, "slots.txt": SLOTS, "rollout.txt": ROLLOUT, "runtime-views.json": VIEWS,
        "unscheduled.txt": UNSCHEDULED, "node-gpu.txt": NODE_GPU}
NONE = dict.fromkeys(OUTPUTS)


def test_every_step_from_the_outputs():
    assert summary_lines(FULL) == [
        "1-2 written:   main file runtimes runc; drop-in runtimes nvidia",
        '3   computed:  same runtimes table in both files: yes (plugins."io.containerd.grpc.v1.cri".containerd.runtimes)',
        "4   loaded:    runc before the restart; after it containerd 1.6.20: CRI plugin failed: invalid plugin config;"
        " after it containerd 2.4.2: nvidia,runc",
        "5   scheduled: Unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu.",
        "6   scheduled: advertised nvidia.com/gpu when the pod ran: lab-node-0=4, lab-node-1=0, lab-node-2=0",
        "7   computed:  4 GPUs x 5 replicas, memory guaranteed per slot 0 GiB of 40 (isolation none); scheduled: the node advertises 20",
        "8   scheduled: rollout updated 1 of 3, blocker insufficient-memory",
    ]


def test_no_outputs_gives_placeholders_not_errors():
    assert summary_lines(NONE) == [
        "1-2 written:   main file runtimes ?; drop-in runtimes ?",
        "3   computed:  same runtimes table in both files: ? ()",
        "4   loaded:    ? before the restart",
        "5   scheduled: not recorded",
        "6   scheduled: advertised nvidia.com/gpu when the pod ran: none",
        "7   computed:  ? GPUs x ? replicas, memory guaranteed per slot ? GiB of ? (isolation ?); scheduled: the node advertises ?",
        "8   scheduled: rollout updated ? of ?, blocker ?",
    ]


@pytest.mark.parametrize("merge, views, line4", [
    # merge.txt records an empty LOADED_RUNTIMES when no daemon was observed and nothing was recorded.
    ("LOADED_RUNTIMES=\n", None, "4   loaded:    not observed before the restart"),
    ("LOADED_RUNTIMES=runc\n", "{}", "4   loaded:    runc before the restart"),
    ("LOADED_RUNTIMES=runc\n", "not json", "4   loaded:    runc before the restart"),
    ("LOADED_RUNTIMES=runc,nvidia\n", json.dumps({"observations": [{"daemons": [
        {"loaded": {"containerd_version": "2.4.2", "cri_loaded": True, "runtimes": ["nvidia", "runc"]}}]}]}),
     "4   loaded:    runc,nvidia before the restart; after it containerd 2.4.2: nvidia,runc"),
])
def test_loaded_line(merge, views, line4):
    texts = dict(NONE, **{"merge.txt": merge, "runtime-views.json": views})
    assert summary_lines(texts)[2] == line4


def test_a_later_file_wins_a_key_and_only_key_lines_count():
    texts = dict(NONE, **{"merge.txt": "# comment\nUPDATED=0\nlower=1\n", "rollout.txt": "UPDATED=1\n"})
    assert key_values(texts) == {"UPDATED": "1"}


def test_the_lookup_reads_a_folder_with_some_outputs_missing(tmp_path):
    (tmp_path / "rollout.txt").write_text(ROLLOUT)
    (tmp_path / "node-gpu.txt").write_text(NODE_GPU)
    texts = read_outputs(str(tmp_path))
    assert texts["merge.txt"] is None and texts["rollout.txt"] == ROLLOUT
    lines = summary_lines(texts)
    assert lines[6] == "8   scheduled: rollout updated 1 of 3, blocker insufficient-memory"
    assert lines[0] == "1-2 written:   main file runtimes ?; drop-in runtimes ?"
