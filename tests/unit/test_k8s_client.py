"""The raw client against a real HTTP server on localhost: 429 is sent again, bounded; other errors are not."""

import http.server
import json
import threading

import pytest

from ansible_collections.gpuop.gates.plugins.module_utils.errors import GpuopError
from ansible_collections.gpuop.gates.plugins.module_utils.k8s import Cluster, NotFound


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


def _serve(answers):
    """Serve ``answers`` (status, body) in order, then the last one forever; record each path asked."""
    seen = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append(self.path)
            status, body = answers[min(len(seen) - 1, len(answers) - 1)]
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            if status == 429:
                self.send_header("Retry-After", "1")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = _Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, seen


@pytest.fixture
def cluster_for(tmp_path):
    servers = []

    def make(answers, request_timeout=5.0):
        server, seen = _serve(answers)
        servers.append(server)
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "t",
            "clusters": [{"name": "t", "cluster": {"server": "http://127.0.0.1:%d" % server.server_port}}],
            "users": [{"name": "t", "user": {}}],
            "contexts": [{"name": "t", "context": {"cluster": "t", "user": "t"}}],
        }))
        return Cluster(str(kubeconfig), request_timeout=request_timeout), seen

    yield make
    for server in servers:
        server.shutdown()


STORAGE_INIT = (429, {"kind": "Status", "message": "storage is (re)initializing", "code": 429})


def test_429_is_sent_again_until_the_server_answers(cluster_for):
    cluster, seen = cluster_for([STORAGE_INIT, STORAGE_INIT, (200, {"items": [{"a": 1}]})])
    assert cluster.list("/apis/kwok.x-k8s.io/v1alpha1/stages") == [{"a": 1}]
    assert len(seen) == 3


def test_429_gives_up_after_the_request_timeout_with_the_server_message(cluster_for):
    cluster, seen = cluster_for([STORAGE_INIT], request_timeout=0.6)
    with pytest.raises(GpuopError) as err:
        cluster.get("/apis/kwok.x-k8s.io/v1alpha1/stages")
    assert str(err.value) == "GET /apis/kwok.x-k8s.io/v1alpha1/stages failed: HTTP 429: storage is (re)initializing"
    # Polled at 0.2 s for 0.6 s: the first try and about three more, never a flood.
    assert 3 <= len(seen) <= 5


@pytest.mark.parametrize("status, body, error", [
    (404, {"message": "nodes \"x\" not found"}, NotFound),
    (500, {"message": "etcdserver: request timed out"}, GpuopError),
    (403, {"message": "forbidden"}, GpuopError),
])
def test_other_errors_are_not_sent_again(cluster_for, status, body, error):
    cluster, seen = cluster_for([(status, body), (200, {})])
    with pytest.raises(error):
        cluster.get("/api/v1/nodes/x")
    assert len(seen) == 1
