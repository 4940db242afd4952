"""Live-cluster fixtures. Nothing here is mocked: a real kwok control plane answers.

``lab_kubeconfig`` is the kubeconfig of a running kwok cluster with the lab nodes
(lab-node-0/1/2: cpu 8, memory 32Gi, pods 110, managed by kwok). ``make test`` creates it once
(`playbooks/cluster.yml` with its own gpuop_root and cluster name) and passes its path in
GPUOP_TEST_KUBECONFIG. Tests create their own objects (unique names) and delete them.
"""

import os

import pytest


@pytest.fixture(scope="session")
def lab_kubeconfig():
    path = os.environ.get("GPUOP_TEST_KUBECONFIG")
    if not path:
        pytest.fail("GPUOP_TEST_KUBECONFIG is not set: run the tests through `make test`, "
                    "which creates the test cluster (or export it for a cluster made by playbooks/cluster.yml)")
    if not os.path.isfile(path):
        pytest.fail("GPUOP_TEST_KUBECONFIG=%s does not exist" % path)
    return path


@pytest.fixture(scope="session")
def k8s(lab_kubeconfig):
    """The official kubernetes client (not gpuop's code) on the live test cluster."""
    from kubernetes import client, config

    api = config.new_client_from_config(config_file=lab_kubeconfig)
    return client.CoreV1Api(api), client.AppsV1Api(api), client.VersionApi(api)

