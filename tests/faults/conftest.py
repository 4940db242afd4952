"""The fault suite: every test makes its own kwok clusters (fault-*, guard-*) under its own roots and deletes them.

It needs only the control-plane build (``make toolchain``), not the shared test cluster.
``GPUOP_FAULT_JOBS`` (default 2) kill points run side by side, each on its own cluster.
"""

import os
import shutil
import tempfile

import pytest


@pytest.fixture(scope="session")
def fault_base():
    """A folder of this session under /tmp for the roots of the fault runs; removed at the end."""
    import faultlib

    base = tempfile.mkdtemp(prefix="gpuop-faults-")
    yield base
    faultlib.stop_sandboxes(base)
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def fault_jobs():
    return max(1, int(os.environ.get("GPUOP_FAULT_JOBS", "2")))


@pytest.fixture(scope="session")
def reference(fault_base):
    """One uninterrupted site.yml on a fresh root and cluster (fault-ref): the outputs every faulted run must end with.

    Returns a dict: root, cluster, outputs (relative path -> (normalised bytes, mode)), banners
    (task title, status, time) and elapsed seconds. The cluster stays up for the session.
    """
    import faultlib

    cluster = "fault-ref-%d" % os.getpid()  # two sessions at once never share it
    root = os.path.join(fault_base, cluster + "-root")
    faultlib.delete_cluster(cluster)
    try:
        with faultlib.CLUSTER_LOCK:
            one = faultlib.run("site.yml", faultlib.site_vars(root, cluster))
        assert one.proc.returncode == 0, "the reference site.yml failed:\n" + one.tail(80)
        found = faultlib.outputs(root, cluster)
        assert faultlib.temporaries(root) == []
        yield {"root": root, "cluster": cluster, "outputs": found, "banners": list(one.banners),
               "elapsed": one.elapsed}
    finally:
        faultlib.delete_cluster(cluster)
