"""Talking to a cluster: one client per module run, raw JSON in and out, bounded waits.

Raw JSON (``_preload_content=False``) instead of the client's model objects: decoding a
thousand pods into models costs seconds, a JSON parse costs milliseconds.
"""

import json
import math
import os
import time

from ansible.module_utils.gpuop.errors import GpuopError

try:
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config
    from kubernetes.client.rest import ApiException
    from urllib3 import exceptions as urllib3_exceptions
    HAS_KUBERNETES = True
    KUBERNETES_IMPORT_ERROR = None
except ImportError as exc:  # pragma: no cover - reported by the module shell
    HAS_KUBERNETES = False
    KUBERNETES_IMPORT_ERROR = exc

# Shared options of every module that talks to a cluster (deep-copied by each module).
K8S_ARG_SPEC = {
    "kubeconfig": {"type": "path", "required": True},
    "context": {"type": "str"},
    "request_timeout": {"type": "float", "default": 10.0},
}

MANAGED_BY_KWOK_ANNOTATION = "kwok.x-k8s.io/node"
POLL_INTERVAL = 0.2


class NotFound(GpuopError):
    """The API answered 404."""


class Cluster(object):
    """A thin raw-JSON client over the kubernetes package's ApiClient."""

    def __init__(self, kubeconfig, context=None, request_timeout=10.0):
        if not HAS_KUBERNETES:
            raise GpuopError("the python 'kubernetes' package is missing: %s" % KUBERNETES_IMPORT_ERROR)
        if not os.path.isfile(kubeconfig):
            raise GpuopError("kubeconfig %s does not exist" % kubeconfig)
        try:
            configuration = k8s_client.Configuration()
            # One attempt per request, bounded by request_timeout: urllib3's default 3 retries made a
            # request to an API server that hangs (etcd down) take 4 x request_timeout, past any
            # wait's bound. Waits poll again on their own. persist_config=False: never write the file.
            configuration.retries = 0
            self.api = k8s_config.new_client_from_config(config_file=kubeconfig, context=context, persist_config=False,
                                                         client_configuration=configuration)
        except Exception as exc:  # the loader raises several unrelated types
            raise GpuopError("kubeconfig %s cannot be used: %s" % (kubeconfig, exc))
        self.kubeconfig = kubeconfig
        self.host = self.api.configuration.host
        self.timeout = request_timeout
        self.calls = []

    def request(self, method, path, body=None, query=None, content_type=None):
        """Send one request; return the decoded JSON body. 404 raises NotFound.

        HTTP 429 ("storage is (re)initializing" right after a CRD is created, or API priority and
        fairness shedding load) means the request was not processed: it is sent again every
        POLL_INTERVAL for at most request_timeout seconds, then fails with the server's message.
        """
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                return self._request_once(method, path, body, query, content_type)
            except GpuopError as exc:
                if exc.details.get("status") != 429 or time.monotonic() >= deadline:
                    raise
                time.sleep(min(POLL_INTERVAL, max(0.0, deadline - time.monotonic())))

    def _request_once(self, method, path, body, query, content_type):
        headers = {"Accept": "application/json"}
        if content_type:
            headers["Content-Type"] = content_type
        self.calls.append("%s %s" % (method, path))
        try:
            # kubernetes >= 35 (new generator): serialize, send, then read the raw body ourselves.
            method, url, headers, body, post = self.api.param_serialize(
                method, path,
                query_params=list((query or {}).items()),
                header_params=headers,
                body=body,
                auth_settings=["BearerToken"],
            )
            response = self.api.call_api(method, url, header_params=headers, body=body, post_params=post,
                                         _request_timeout=self.timeout)
            raw = response.read()
        except ApiException as exc:  # raised for connection failures (status 0) and retries given up
            raise GpuopError("cannot reach the API server at %s (%s %s): %s" % (self.host, method, path, exc.reason))
        except (OSError, urllib3_exceptions.HTTPError) as exc:
            raise GpuopError("cannot reach the API server at %s (%s %s): %s" % (self.host, method, path, _short(exc)))
        if response.status >= 400:
            detail = _api_message(raw, response.reason)
            if response.status == 404:
                raise NotFound("%s %s: not found (%s)" % (method, path, detail))
            raise GpuopError("%s %s failed: HTTP %s: %s" % (method, path, response.status, detail),
                             status=response.status)
        if not raw:
            return {}
        try:
            return json.loads(raw)
        except ValueError:  # /readyz and friends answer plain text
            return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw

    def get(self, path, query=None):
        return self.request("GET", path, query=query)

    def get_or_none(self, path):
        try:
            return self.get(path)
        except NotFound:
            return None

    def list(self, path, label_selector=None, field_selector=None):
        query = {}
        if label_selector:
            query["labelSelector"] = label_selector
        if field_selector:
            query["fieldSelector"] = field_selector
        return self.get(path, query=query).get("items", [])

    def patch(self, path, body, patch_type="merge", dry_run=False):
        types = {
            "merge": "application/merge-patch+json",
            "strategic": "application/strategic-merge-patch+json",
            "json": "application/json-patch+json",
        }
        query = {"dryRun": "All"} if dry_run else None
        return self.request("PATCH", path, body=body, query=query, content_type=types[patch_type])

    def server_version(self):
        return self.get("/version")


def _short(exc):
    text = str(exc)
    reason = getattr(exc, "reason", None)
    if reason is not None:
        text = str(reason)
    return text.splitlines()[0][:300] if text else exc.__class__.__name__


def _api_message(raw, reason):
    try:
        return json.loads(raw).get("message", reason)
    except (TypeError, ValueError, AttributeError):
        return reason


def node_path(name):
    return "/api/v1/nodes/%s" % name


def is_kwok_managed(node):
    """kwok manages nodes annotated ``kwok.x-k8s.io/node: fake`` (and kwokctl's controller runs with manage-all-nodes).

    We only trust the annotation: a node without it belongs to a real kubelet.
    """
    annotations = node.get("metadata", {}).get("annotations") or {}
    return annotations.get(MANAGED_BY_KWOK_ANNOTATION) == "fake"


def wait_for(fetch, predicate, timeout, what, describe=None, interval=POLL_INTERVAL, clock=time.monotonic, sleep=time.sleep):
    """Poll ``fetch()`` every ``interval`` (≤ 0.5 s) until ``predicate(state)`` holds.

    Returns ``(state, elapsed_seconds)``. API errors while waiting are remembered and the wait
    goes on; on timeout raises GpuopError naming ``what`` and the last state (``describe(state)``)
    or the last error seen.
    """
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout) or timeout < 0:
        # nan would never time out, inf never end: a wait is always bounded.
        raise GpuopError("the wait for %s needs a timeout of 0 or more seconds, got %r" % (what, timeout))
    start = clock()
    last_state = None
    last_error = None
    seen = False
    while True:
        try:
            last_state = fetch()
            seen = True
            last_error = None
            if predicate(last_state):
                return last_state, round(clock() - start, 3)
        except GpuopError as exc:
            last_error = exc.msg
        elapsed = clock() - start
        if elapsed >= timeout:
            state = (describe(last_state) if describe else json.dumps(last_state, sort_keys=True)[:800]) if seen else None
            if last_error:
                saw = "last error: %s" % last_error
                if seen:
                    saw += "; last state seen: %s" % state
            elif not seen:
                saw = "nothing was observed"
            else:
                saw = "last state: %s" % state
            raise GpuopError("timed out after %.1fs waiting for %s; %s" % (elapsed, what, saw))
        sleep(min(interval, max(0.0, timeout - elapsed)))
